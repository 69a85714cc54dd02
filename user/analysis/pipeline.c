// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Records to consumers: one decoder, one model, the analyses once, callbacks in order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "pipeline.h"
#include "settle.h"

/* Cross-CPU arrival order in the ring differs from entry order by less than this. */
#define REORDER_NS 50000000ull
/* Windowed analyses run this often in trace time when no tick is asked for. */
#define WINDOW_STEP_NS 250000000ull
/* Windowed --gpu: executions and timeline kept this long behind the agents' watermark. */
#define GPU_KEEP_NS 10000000000ull

struct pipeline {
	struct tf_header hdr;		/* own copy, kept current with late records */
	struct tf_reader *reader;	/* opened on a file, else NULL */
	struct decoder *dec;
	struct model *model;		/* NULL: calls only */
	struct results results;
	struct settle *settle;		/* windowed analyses, else NULL */
	struct wholerun *whole;		/* a pass of a whole run in windows, else NULL */
	struct gputime *gpu;		/* --gpu matching; analyses see it once a GPU record came */
	struct srvstats *srv;		/* --server-metrics samples and the cycles they span */
	struct srv_figures srv_fig;	/* computed at the end */
	bool has_gpu;
	bool finished;
	bool cut;			/* the file stopped inside a record */
	struct pipeline_consumer consumers[PIPELINE_MAX_CONSUMERS];
	int nr_consumers;
	__u64 tick_ns, next_tick, last_ts;
	__u64 next_step;		/* a whole run's next window step, whatever the ticks */
};

static int settled_cycle(void *ctx, const struct loop *lp, const struct cycle *c)
{
	struct pipeline *p = ctx;
	int ret = 0;

	if (srvstats__any(p->srv))
		ret = srvstats__cycle(p->srv, lp, c);
	for (int i = 0; i < p->nr_consumers && !ret; i++)
		if (p->consumers[i].cycle)
			ret = p->consumers[i].cycle(p->consumers[i].ctx, lp, c);
	return ret;
}

static int settled_sync(void *ctx, const struct sync_verdict *sv)
{
	struct pipeline *p = ctx;
	int ret = 0;

	for (int i = 0; i < p->nr_consumers && !ret; i++)
		if (p->consumers[i].sync)
			ret = p->consumers[i].sync(p->consumers[i].ctx, sv);
	return ret;
}

static int settled_gpu(void *ctx, const struct gpu_exec *e)
{
	struct pipeline *p = ctx;
	int ret = 0;

	for (int i = 0; i < p->nr_consumers && !ret; i++)
		if (p->consumers[i].gpu)
			ret = p->consumers[i].gpu(p->consumers[i].ctx, e);
	return ret;
}

/* Match the executions that can be now; windowed, hold what settles at the watermark. */
static int gpu_advance(struct pipeline *p, bool final)
{
	__u64 hold;
	int ret;

	if (!p->has_gpu)
		return 0;
	ret = gputime__advance(p->gpu, p->last_ts, final, settled_gpu, p);
	hold = final ? 0 : gputime__horizon(p->gpu, p->last_ts);
	/* 0 would read as no hold: the watermark is not up yet, nothing may settle */
	hold = hold ? hold : 1;
	if (p->settle)
		settle__hold(p->settle, final ? 0 : hold);
	if (p->whole)
		wholerun__hold(p->whole, final ? 0 : hold);
	return ret;
}

/* Windowed: what settled reaches the consumers before the tick that follows it. */
static int settle_window(struct pipeline *p, bool final)
{
	const struct settle_sink sink = { settled_cycle, settled_sync, p };
	struct results scratch;
	__u64 hold = p->has_gpu ? gputime__horizon(p->gpu, p->last_ts) : 0;
	int ret = gpu_advance(p, final);

	if (ret)
		return ret;
	if (p->has_gpu && !final && hold > GPU_KEEP_NS && hold != ~0ull)
		gputime__forget(p->gpu, hold - GPU_KEEP_NS);

	/* a whole run's consumers hear of cycles and syncs at the end, as without windows */
	if (p->whole)
		return wholerun__step(p->whole, p->model, p->last_ts, final, &p->results,
				      &(struct settle_sink){ .ctx = p });
	return settle__step(p->settle, p->model, p->last_ts, final,
			    final ? &p->results : &scratch, &sink);
}

static int notify_tick(struct pipeline *p, __u64 ts)
{
	int ret = 0;

	if (!p->next_tick)
		p->next_tick = ts + p->tick_ns;
	/* one window step for all the ticks a pause in the calls passed */
	if (ts >= p->next_tick && p->settle)
		ret = settle_window(p, false);
	while (ts >= p->next_tick && !ret) {
		/*
		 * A run of windows without a call says no more than its first tick
		 * and its last: skip the rest, or a corrupt timestamp far ahead
		 * means billions of ticks.
		 */
		__u64 step = (ts - p->next_tick) / p->tick_ns;

		for (int i = 0; i < p->nr_consumers && !ret; i++)
			if (p->consumers[i].tick)
				ret = p->consumers[i].tick(p->consumers[i].ctx, p->next_tick);
		step = step > 1 ? step * p->tick_ns : p->tick_ns;
		if (p->next_tick + step < p->next_tick)
			break;	/* past the clock's end: only a corrupt timestamp is there */
		p->next_tick += step;
	}
	return ret;
}

/* The decoder hands calls on in entry order: the model first, then each consumer. */
static int on_call(void *ctx, const struct sp_call *call)
{
	struct pipeline *p = ctx;
	int ret = p->model ? model__call(p->model, call) : 0;
	const struct loop_event *ev;

	p->last_ts = call->entry.ts;
	if (!ret && p->gpu && (ev = model__work_event(p->model, call)))
		ret = gputime__model_call(p->gpu, call->entry.tgid, ev, call);
	for (int i = 0; i < p->nr_consumers && !ret; i++)
		if (p->consumers[i].call)
			ret = p->consumers[i].call(p->consumers[i].ctx, &p->hdr, call);
	if (!ret && p->tick_ns)
		ret = notify_tick(p, call->entry.ts);
	if (!ret && p->whole && call->entry.ts >= p->next_step) {
		if (p->next_step)
			ret = settle_window(p, false);
		p->next_step = call->entry.ts + WINDOW_STEP_NS;
	}
	return ret;
}

/* The processes the header names: those traced at the start, those with mappings. */
static void describe_processes(struct decoder *d, const struct tf_header *hdr)
{
	for (__u32 i = 0; i < hdr->nr_targets; i++)
		decoder__describe_process(d, hdr->targets[i]);
	for (__u32 i = 0; i < hdr->nr_maps; i++)
		decoder__describe_process(d, hdr->maps[i].tgid);
	for (__u32 i = 0; i < hdr->nr_procs; i++)
		decoder__describe_process(d, hdr->procs[i].tgid);
}

struct pipeline *pipeline__new(const struct tf_header *hdr, const struct pipeline_opts *opts)
{
	struct pipeline *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (tf_header__copy(&p->hdr, hdr)) {
		free(p);
		return NULL;
	}
	p->tick_ns = opts->tick_ns;
	if (opts->analyse && !(p->model = model__new(hdr)))
		goto fail;
	if (opts->analyse && !(p->gpu = gputime__new()))
		goto fail;
	if (!(p->srv = srvstats__new()))
		goto fail;
	if (opts->analyse && opts->whole) {
		p->whole = opts->whole;
		wholerun__begin(p->whole);
	}
	if (opts->analyse && opts->window) {
		p->settle = settle__new();
		if (!p->settle)
			goto fail;
		if (!p->tick_ns)
			p->tick_ns = WINDOW_STEP_NS;
	}
	p->dec = decoder__new(on_call, p, REORDER_NS);
	if (!p->dec)
		goto fail;
	decoder__set_probes(p->dec, p->hdr.nr_probes);
	describe_processes(p->dec, &p->hdr);
	if (p->model)
		model__view(p->model)->stacks = decoder__callstacks(p->dec);
	return p;
fail:
	pipeline__free(p);
	return NULL;
}

struct pipeline *pipeline__open(const char *path, const struct pipeline_opts *opts, char *err,
				size_t err_sz)
{
	struct tf_reader *r = tf_reader__open(path, err, err_sz);
	struct pipeline *p;

	if (!r)
		return NULL;
	p = pipeline__new(tf_reader__header(r), opts);
	if (!p) {
		snprintf(err, err_sz, "out of memory");
		tf_reader__free(r);
		return NULL;
	}
	p->reader = r;
	return p;
}

int pipeline__add(struct pipeline *p, const struct pipeline_consumer *c)
{
	if (p->nr_consumers == PIPELINE_MAX_CONSUMERS)
		return -ENOSPC;
	p->consumers[p->nr_consumers++] = *c;
	return 0;
}

/* A GPU record whose kind's fixed part fits in size. */
static bool gpu_record_ok(const struct sp_rec_hdr *h, size_t size)
{
	switch (size >= sizeof(*h) ? h->type : 0) {
	case SP_REC_GPU:
		return size >= sizeof(struct sp_gpu_rec);
	case SP_REC_GPU_NAME:
		return size > sizeof(struct sp_gpu_name_rec);
	case SP_REC_GPU_STATE:
		return size >= sizeof(struct sp_gpu_state_rec);
	default:
		return false;
	}
}

int pipeline__feed(struct pipeline *p, const void *rec, size_t size)
{
	/*
	 * Late libraries and probes describe calls that follow them; a record
	 * the header cannot take is the model's and the decoder's to judge.
	 */
	if (!tf_header__apply(&p->hdr, rec, size))
		decoder__set_probes(p->dec, p->hdr.nr_probes);
	/* the model hears of forks and exits as they come; calls wait for the decoder */
	if (p->model)
		model__record(p->model, rec, size);
	if (((const struct sp_rec_hdr *)rec)->type == SP_REC_SRVMETRIC) {
		int taken = srvstats__record(p->srv, rec, size);

		for (int i = 0; i < p->nr_consumers && taken > 0; i++)
			if (p->consumers[i].srvmetric)
				taken = p->consumers[i].srvmetric(p->consumers[i].ctx, rec) ?: 1;
		if (taken < 0)
			return taken;
	}
	if (gpu_record_ok(rec, size)) {
		for (int i = 0; i < p->nr_consumers; i++) {
			int ret = p->consumers[i].gpu_record
					  ? p->consumers[i].gpu_record(p->consumers[i].ctx, rec, size)
					  : 0;

			if (ret)
				return ret;
		}
	}
	if (p->gpu) {
		int taken = gputime__record(p->gpu, rec, size);

		if (taken < 0)
			return taken;
		if (taken && !p->has_gpu) {
			p->has_gpu = true;
			model__view(p->model)->gpu = p->gpu;
		}
		/* a new watermark: what ended before it can be matched */
		if (taken && ((const struct sp_rec_hdr *)rec)->type == SP_REC_GPU_STATE && !p->settle &&
		    !p->whole) {
			taken = gpu_advance(p, false);
			if (taken)
				return taken;
		}
	}
	return decoder__feed(p->dec, rec, size);
}

/*
 * The reading rule: a file cut inside a record reads up to its last whole
 * record, as if it ended there; where, and what a set lacked, go in the stats.
 */
static int read_record(struct pipeline *p, const void **rec)
{
	const struct tf_gaps *g = tf_reader__gaps(p->reader);
	__u32 missing = g->missing;
	int ret = tf_reader__next(p->reader, rec);

	/* the calls of a missing segment are counted as its: not again by their numbers */
	if (g->missing != missing)
		decoder__renumber(p->dec);
	if (ret > 0)
		return ret;
	if (ret == -ENODATA) {
		p->cut = true;
		ret = 0;
	}
	if (!ret)
		decoder__note_input(p->dec, p->cut, p->cut ? tf_reader__offset(p->reader) : 0,
				    g->missing, g->lost_calls);
	return ret;
}

int pipeline__read_all(struct pipeline *p)
{
	const void *rec;
	int ret;

	if (!p->reader)
		return -EINVAL;
	while ((ret = read_record(p, &rec)) > 0) {
		ret = pipeline__feed(p, rec, ((const struct sp_rec_hdr *)rec)->size);
		if (ret)
			return ret;
	}
	return ret;
}

int pipeline__read_next(struct pipeline *p, __u64 *ts)
{
	const struct sp_rec_hdr *hdr;
	const void *rec;
	int ret;

	if (!p->reader)
		return -EINVAL;
	ret = read_record(p, &rec);
	if (ret <= 0)
		return ret;
	hdr = rec;
	/* 0 for kinds without a time: call sites and tables hold other things there */
	tf_record_ts(rec, hdr->size, ts);
	ret = pipeline__feed(p, rec, hdr->size);
	return ret ? ret : 1;
}

const char *pipeline__error(const struct pipeline *p)
{
	return p->reader ? tf_reader__error(p->reader) : "";
}

void pipeline__warn_input(const struct pipeline *p, const char *path)
{
	const struct decode_stats *st = decoder__stats(p->dec);
	const struct tf_gaps *g = p->reader ? tf_reader__gaps(p->reader) : NULL;

	if (p->cut)
		log_warn("%s: read up to the last whole record before it", pipeline__error(p));
	/* a dump's window ends where the ring went on: no end of its own */
	else if (p->reader && !st->ended && !p->hdr.window.type)
		log_warn("%s: no end record: its recorder was killed, or the file was cut between "
			 "two records; read up to its last record", path);
	if (g && g->missing)
		log_warn("%s.%u: %u segment%s missing from the set: the %llu calls held there "
			 "are lost; the segments before and after are read", path, g->first_missing,
			 g->missing, g->missing > 1 ? "s" : "", (unsigned long long)g->lost_calls);
	if (st->unknown_cookie_calls)
		log_warn("%s: %llu calls of probes the recording does not describe (cookie out of "
			 "range): kept as unknown entry points, left out of the analyses", path,
			 (unsigned long long)st->unknown_cookie_calls);
	if (st->duplicate_records)
		log_warn("%s: %llu records seen twice (same thread, call number and kind): each "
			 "read once", path, (unsigned long long)st->duplicate_records);
	if (st->out_of_order)
		log_warn("%s: %llu records stamped before their thread's previous one: read in "
			 "file order", path, (unsigned long long)st->out_of_order);
	if (st->unknown_process_calls)
		log_warn("%s: %llu calls of processes the recording does not describe (a damaged "
			 "pid, or a child whose fork record was dropped): kept as they are, left out "
			 "of the analyses", path, (unsigned long long)st->unknown_process_calls);
	if (st->missing_calls)
		log_warn("%s: %llu calls missing: their threads' call numbers skip them (records "
			 "removed from the file)", path, (unsigned long long)st->missing_calls);
	if (st->misnumbered_calls)
		log_warn("%s: %llu calls numbered out of their thread's count (a damaged number): "
			 "kept", path, (unsigned long long)st->misnumbered_calls);
}

/* A consumer's cycle callback, for one loop's cycles in turn. */
struct cycle_notice {
	const struct pipeline_consumer *c;
	const struct loop *lp;
};

static int notice_cycle(void *ctx, const struct cycle *c)
{
	struct cycle_notice *n = ctx;

	return n->c->cycle(n->c->ctx, n->lp, c);
}

static int notify_cycles(struct pipeline *p, const struct pipeline_consumer *c)
{
	const struct cycles *cy = &p->results.cycles;
	struct cycle_notice n = { .c = c };
	int ret = 0;

	for (size_t l = 0; l < cy->nr_loops && !ret; l++) {
		n.lp = &cy->loops[l];
		ret = loop__each_cycle(&cy->loops[l], notice_cycle, &n);
	}
	return ret;
}

static int notice_sync(void *ctx, const struct sync_verdict *sv)
{
	const struct pipeline_consumer *c = ctx;

	return c->sync(c->ctx, sv);
}

static int notify_syncs(struct pipeline *p, const struct pipeline_consumer *c)
{
	return syncs__each(&p->results.syncs, model__view(p->model), notice_sync, (void *)c);
}

static int notify_end(struct pipeline *p)
{
	const struct results *res = p->model ? &p->results : NULL;
	int ret = 0;

	for (int i = 0; i < p->nr_consumers && !ret; i++) {
		const struct pipeline_consumer *c = &p->consumers[i];

		/* windowed, cycles and syncs were handed on as they settled */
		if (res && c->cycle && !p->settle)
			ret = notify_cycles(p, c);
		if (!ret && res && c->sync && !p->settle)
			ret = notify_syncs(p, c);
		if (!ret && c->end)
			ret = c->end(c->ctx, res, decoder__stats(p->dec));
	}
	return ret;
}

static int srv_cycle(void *ctx, const struct cycle *c)
{
	struct cycle_notice *n = ctx;

	return srvstats__cycle(n->c->ctx, n->lp, c);
}

/* The server's figures over the cycles (windowed: they were handed over as they settled). */
static int server_figures(struct pipeline *p)
{
	const struct cycles *cy = &p->results.cycles;
	const struct pipeline_consumer sink = { .ctx = p->srv };
	struct cycle_notice n = { .c = &sink };
	int ret = 0;

	for (size_t l = 0; l < cy->nr_loops && !ret && !p->settle; l++) {
		n.lp = &cy->loops[l];
		ret = loop__each_cycle(&cy->loops[l], srv_cycle, &n);
	}
	srvstats__compute(p->srv, &p->srv_fig);
	p->results.server = &p->srv_fig;
	return ret;
}

int pipeline__finish(struct pipeline *p)
{
	int ret = decoder__finish(p->dec);

	if (p->model) {
		model__finish(p->model, decoder__stats(p->dec));
		if (!ret && !p->settle && !p->whole)
			ret = gpu_advance(p, true);
		if (!ret && (p->settle || p->whole))
			ret = settle_window(p, true);
		else if (!ret)
			ret = results__compute(&p->results, p->model);
	}
	if (!ret && p->model && srvstats__any(p->srv))
		ret = server_figures(p);
	p->finished = !ret;
	return ret ? ret : notify_end(p);
}

void pipeline__snapshot(const struct pipeline *p, struct pipeline_snapshot *out)
{
	out->stats = decoder__stats(p->dec);
	out->model = p->model ? model__view(p->model) : NULL;
	out->last_ts = p->last_ts;
	out->settled_ns = p->settle ? settle__horizon(p->settle) : 0;
}

struct wholerun *pipeline__wholerun(const struct pipeline *p)
{
	return p->whole;
}

const struct tf_header *pipeline__header(const struct pipeline *p)
{
	return &p->hdr;
}

const struct gpu_stats *pipeline__gpu_stats(const struct pipeline *p)
{
	struct gpu_stats *st;

	if (!p->has_gpu)
		return NULL;
	st = (struct gpu_stats *)gputime__stats(p->gpu);
	st->cycles_unmatched = p->finished && p->model ? p->results.overall.gpu_cycles_unmatched
						       : 0;
	return st;
}

const struct srv_figures *pipeline__server(const struct pipeline *p)
{
	return p->finished && srvstats__any(p->srv) ? &p->srv_fig : NULL;
}

const struct srvstats *pipeline__server_samples(const struct pipeline *p)
{
	return srvstats__any(p->srv) ? p->srv : NULL;
}

bool pipeline__server_recent(const struct pipeline *p, double *tokens_per_s,
			     double *accept_length)
{
	return srvstats__recent(p->srv, tokens_per_s, accept_length);
}

const struct callstacks *pipeline__callstacks(const struct pipeline *p)
{
	return decoder__callstacks(p->dec);
}

const struct decode_stats *pipeline__stats(const struct pipeline *p)
{
	return decoder__stats(p->dec);
}

void pipeline__open_calls(const struct pipeline *p,
			  void (*fn)(void *ctx, const struct sp_call *call), void *ctx)
{
	decoder__for_each_open(p->dec, fn, ctx);
}

const struct results *pipeline__results(const struct pipeline *p)
{
	return p->finished && p->model ? &p->results : NULL;
}

void pipeline__free(struct pipeline *p)
{
	if (!p)
		return;
	results__free(&p->results);
	settle__free(p->settle);
	gputime__free(p->gpu);
	srvstats__free(p->srv);
	decoder__free(p->dec);
	model__free(p->model);
	tf_reader__free(p->reader);
	tf_header__free(&p->hdr);
	free(p);
}
