// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe dump: a recording as text lines or one JSON object per call. */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "catalog.h"
#include "cli.h"
#include "dump_fmt.h"
#include "log.h"
#include "pipeline.h"

static struct dump_env {
	const char *input;
	bool json;
	bool header;
	bool counts;
} env;

static const char doc[] =
	"Print a recording: one line per call, or with --json one JSON object per call.\n\n"
	"Server-metrics samples (--server-metrics) come before the calls entered after them, as "
	"'server-metrics scrape N' lines, or objects with \"record\":\"server_metric\". "
	"GPU records (--gpu) come likewise, in the order they were handed over, as 'GPU' lines, "
	"or objects with \"record\" \"gpu\" (an execution), \"gpu_name\" or \"gpu_state\".\n\n"
	"EXAMPLES:\n"
	"  specprobe dump run.sprb | less\n"
	"  specprobe dump --json run.sprb | jq 'select(.name == \"cuStreamSynchronize\")'\n";

static const struct argp_option options[] = {
	{ "json", 'j', NULL, 0, "One JSON object per call, one per line", 0 },
	{ "header", 'H', NULL, 0, "Print the recording's header (libraries, probes) first", 0 },
	{ "counts", 'c', NULL, 0, "Only count calls per entry point (and GPU records per kind)", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'j':
		env.json = true;
		break;
	case 'H':
		env.header = true;
		break;
	case 'c':
		env.counts = true;
		break;
	case ARGP_KEY_ARG:
		if (env.input)
			argp_error(state, "one recording at a time");
		env.input = arg;
		break;
	case ARGP_KEY_END:
		if (!env.input)
			argp_error(state, "which recording? specprobe dump FILE");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Numbers of kernel names a process may use: more is a corrupt record. */
#define GPU_NAMES_MAX (1u << 20)

/* One process's kernel names as its SP_REC_GPU_NAME records gave them. */
struct gpu_names {
	__u32 tgid;
	__u32 nr;
	char **names;		/* by number - 1; NULL: not named */
};

/* GPU records read, by what they are. */
struct gpu_counts {
	__u64 execs[SP_GPU_MEMSET + 1];	/* by enum sp_gpu_kind, 0: a kind this reader does not know */
	__u64 names, states;
};

struct dumper {
	FILE *out;
	const struct callstacks *stacks;
	__u64 *per_probe;	/* --counts; by cookie, SP_MAX_PROBES (late libraries add probes) */
	/* server-metrics samples waiting for the calls before them (the decoder holds calls) */
	struct sp_srvmetric_rec *samples;
	size_t nr_samples, first_sample, cap_samples;
	/* GPU records waiting likewise, whole, one after another in the order they came */
	unsigned char *gpu_held;
	size_t gpu_len, gpu_first, gpu_cap;
	struct gpu_names *procs;
	size_t nr_procs;
	struct gpu_counts gpu;
};

static void print_sample(const struct dumper *d, const struct sp_srvmetric_rec *m)
{
	if (env.json)
		dump_fmt__srvmetric_json(d->out, m);
	else
		dump_fmt__srvmetric_text(d->out, m);
}

static struct gpu_names *names_of(struct dumper *d, __u32 tgid, bool add)
{
	struct gpu_names *grown;

	for (size_t i = 0; i < d->nr_procs; i++)
		if (d->procs[i].tgid == tgid)
			return &d->procs[i];
	if (!add || !(grown = realloc(d->procs, (d->nr_procs + 1) * sizeof(*grown))))
		return NULL;
	d->procs = grown;
	d->procs[d->nr_procs] = (struct gpu_names){ .tgid = tgid };
	return &d->procs[d->nr_procs++];
}

/* A name record replaces what the number named before (an exec starts numbering again). */
static int take_name(struct dumper *d, const struct sp_gpu_name_rec *r, size_t size)
{
	struct gpu_names *p;
	char *name;

	if (!r->number || r->number > GPU_NAMES_MAX)
		return 0;
	p = names_of(d, r->tgid, true);
	name = strndup((const char *)(r + 1), size - sizeof(*r));
	if (!p || !name) {
		free(name);
		return -ENOMEM;
	}
	if (r->number > p->nr) {
		char **grown = realloc(p->names, r->number * sizeof(*grown));

		if (!grown) {
			free(name);
			return -ENOMEM;
		}
		memset(grown + p->nr, 0, (r->number - p->nr) * sizeof(*grown));
		p->names = grown;
		p->nr = r->number;
	}
	free(p->names[r->number - 1]);
	p->names[r->number - 1] = name;
	return 0;
}

static const char *kernel_name(struct dumper *d, const struct sp_gpu_rec *g)
{
	struct gpu_names *p = g->kind == SP_GPU_KERNEL && g->name ? names_of(d, g->tgid, false)
								    : NULL;

	return p && g->name <= p->nr ? p->names[g->name - 1] : NULL;
}

/* An execution is placed at its start, a state when written; a name goes with what follows. */
static __u64 gpu_key(const struct sp_rec_hdr *h)
{
	if (h->type == SP_REC_GPU)
		return ((const struct sp_gpu_rec *)h)->start;
	if (h->type == SP_REC_GPU_STATE)
		return ((const struct sp_gpu_state_rec *)h)->ts;
	return 0;
}

static int print_gpu(struct dumper *d, const struct sp_rec_hdr *h)
{
	const char *kernel = NULL;

	if (h->type == SP_REC_GPU_NAME && take_name(d, (const void *)h, h->size))
		return -ENOMEM;
	if (h->type == SP_REC_GPU)
		kernel = kernel_name(d, (const void *)h);
	dump_fmt__gpu(d->out, h, h->size, kernel, env.json);
	return 0;
}

/*
 * The samples and GPU records from before ts (all: every one), each kind in
 * the order it came, the two merged by time.
 */
static int print_held_before(struct dumper *d, __u64 ts, bool all)
{
	for (;;) {
		bool sample = d->first_sample < d->nr_samples;
		bool gpu = d->gpu_first < d->gpu_len;
		const struct sp_rec_hdr *h = (const void *)(d->gpu_held + d->gpu_first);
		__u64 sample_ts = sample ? d->samples[d->first_sample].ts : ~0ull;
		__u64 gpu_ts = gpu ? gpu_key(h) : ~0ull;

		if (sample && (!gpu || sample_ts <= gpu_ts) && (all || sample_ts < ts)) {
			print_sample(d, &d->samples[d->first_sample++]);
		} else if (gpu && (all || gpu_ts < ts)) {
			if (print_gpu(d, h))
				return -ENOMEM;
			d->gpu_first += h->size;
		} else {
			break;
		}
	}
	if (d->first_sample == d->nr_samples)
		d->first_sample = d->nr_samples = 0;
	if (d->gpu_first == d->gpu_len)
		d->gpu_first = d->gpu_len = 0;
	return 0;
}

static void count_gpu(struct gpu_counts *c, const struct sp_rec_hdr *h)
{
	__u8 kind;

	switch (h->type) {
	case SP_REC_GPU:
		kind = ((const struct sp_gpu_rec *)h)->kind;
		c->execs[kind <= SP_GPU_MEMSET ? kind : 0]++;
		break;
	case SP_REC_GPU_NAME:
		c->names++;
		break;
	case SP_REC_GPU_STATE:
		c->states++;
		break;
	}
}

static int keep_gpu(void *ctx, const struct sp_rec_hdr *rec, size_t size)
{
	struct dumper *d = ctx;

	count_gpu(&d->gpu, rec);
	if (d->per_probe || size != rec->size)
		return 0;
	if (d->gpu_len + size > d->gpu_cap) {
		size_t cap = d->gpu_cap ? 2 * d->gpu_cap : 16384;
		unsigned char *grown;

		while (cap < d->gpu_len + size)
			cap *= 2;
		if (!(grown = realloc(d->gpu_held, cap)))
			return -ENOMEM;
		d->gpu_held = grown;
		d->gpu_cap = cap;
	}
	memcpy(d->gpu_held + d->gpu_len, rec, size);
	d->gpu_len += size;
	return 0;
}

static int keep_sample(void *ctx, const struct sp_srvmetric_rec *m)
{
	struct dumper *d = ctx;

	if (d->per_probe)
		return 0;
	if (d->nr_samples == d->cap_samples) {
		size_t cap = d->cap_samples ? 2 * d->cap_samples : 64;
		struct sp_srvmetric_rec *grown = realloc(d->samples, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		d->samples = grown;
		d->cap_samples = cap;
	}
	d->samples[d->nr_samples++] = *m;
	return 0;
}

static int print_call(void *ctx, const struct tf_header *hdr, const struct sp_call *call)
{
	struct dumper *d = ctx;

	if (print_held_before(d, call->entry.ts, false))
		return -ENOMEM;
	if (d->per_probe) {
		if (call->entry.probe < hdr->nr_probes && call->entry.probe < SP_MAX_PROBES)
			d->per_probe[call->entry.probe]++;
		return 0;
	}
	if (env.json)
		dump_fmt__json_stack(d->out, hdr, d->stacks, call);
	else
		dump_fmt__text(d->out, hdr, call);
	return ferror(d->out) ? -EIO : 0;
}

static void print_header(FILE *out, const struct tf_header *hdr)
{
	const char *c = env.json ? "" : "# ";

	if (env.json)
		return;	/* JSON lines stay one object per call */
	fprintf(out, "%shost %s, kernel %s, recording version %u\n", c, hdr->host, hdr->kernel,
		hdr->version);
	fprintf(out, "%sattach took %.1f ms, complete at %llu\n", c,
		(hdr->attach_done_ns - hdr->attach_start_ns) / 1e6,
		(unsigned long long)hdr->attach_done_ns);
	for (__u32 i = 0; i < hdr->nr_libs; i++)
		fprintf(out, "%slib %u: %s build-id %s\n", c, i, hdr->libs[i].path,
			hdr->libs[i].build_id[0] ? hdr->libs[i].build_id : "none");
	for (__u32 i = 0; i < hdr->nr_probes; i++)
		fprintf(out, "%sprobe %u: lib %u %s +0x%llx\n", c, i, hdr->probes[i].lib,
			hdr->probes[i].symbol, (unsigned long long)hdr->probes[i].offset);
}

/* Calls per catalogue entry, the variants of one entry point added up. */
static void print_counts(FILE *out, const struct dumper *d, const struct tf_header *hdr)
{
	for (int e = 0; e < catalog_len; e++) {
		__u64 n = 0;

		for (__u32 p = 0; p < hdr->nr_probes && p < SP_MAX_PROBES; p++)
			if (hdr->probes[p].catalog == (__u32)e)
				n += d->per_probe[p];
		if (n)
			fprintf(out, "%12llu  %s\n", (unsigned long long)n, catalog[e].name);
	}
	/* then the GPU records, named as their lines are */
	for (int k = 0; k <= SP_GPU_MEMSET; k++)
		if (d->gpu.execs[k])
			fprintf(out, "%12llu  GPU %s\n", (unsigned long long)d->gpu.execs[k],
				dump_fmt__gpu_kind(k));
	if (d->gpu.names)
		fprintf(out, "%12llu  GPU name\n", (unsigned long long)d->gpu.names);
	if (d->gpu.states)
		fprintf(out, "%12llu  GPU state\n", (unsigned long long)d->gpu.states);
}

static void print_gpu_totals(const struct gpu_counts *c)
{
	__u64 execs = 0;

	for (int k = 0; k <= SP_GPU_MEMSET; k++)
		execs += c->execs[k];
	if (!execs && !c->names && !c->states)
		return;
	fprintf(stderr, "specprobe: GPU records: %llu executions (%llu graphs, %llu kernels, "
		"%llu copies, %llu memsets), %llu kernel names, %llu agent states\n",
		(unsigned long long)execs, (unsigned long long)c->execs[SP_GPU_GRAPH],
		(unsigned long long)c->execs[SP_GPU_KERNEL],
		(unsigned long long)c->execs[SP_GPU_MEMCPY],
		(unsigned long long)c->execs[SP_GPU_MEMSET], (unsigned long long)c->names,
		(unsigned long long)c->states);
}

static void free_names(struct dumper *d)
{
	for (size_t i = 0; i < d->nr_procs; i++) {
		for (__u32 n = 0; n < d->procs[i].nr; n++)
			free(d->procs[i].names[n]);
		free(d->procs[i].names);
	}
	free(d->procs);
}

static void print_totals(const struct decode_stats *st)
{
	__u64 drops = st->counters[SP_CNT_DROP_CALL] + st->counters[SP_CNT_DROP_RET];
	__u64 faults = 0;

	for (int f = 0; f < SP_FAULT_NR; f++)
		faults += st->counters[SP_CNT_FAULT_BASE + f];
	fprintf(stderr, "specprobe: %llu calls, %llu unreturned, %llu dropped, %llu failed reads%s\n",
		(unsigned long long)st->calls, (unsigned long long)st->unreturned,
		(unsigned long long)drops, (unsigned long long)faults,
		st->ended ? "" : "; the recording did not end cleanly");
	/* a command started under trace execs once before any call: not worth a line */
	if (st->execs_after_calls)
		fprintf(stderr, "specprobe: %llu execve by traced processes after their first "
			"calls: the calls before are kept; the new program's follow if it loads "
			"a probed library\n", (unsigned long long)st->execs_after_calls);
	if (st->counters[SP_CNT_WATCHDOG])
		fprintf(stderr, "specprobe: %llu stop(s) of traced processes continued by the "
			"watchdog, not the tracer: calls each made until its probes were attached "
			"may be missing\n", (unsigned long long)st->counters[SP_CNT_WATCHDOG]);
	/* which records: an entry or a process record is a call or a process event lost */
	if (drops)
		fprintf(stderr, "specprobe: dropped: %llu entries or process records, %llu returns; "
			"%llu process exits recorded\n",
			(unsigned long long)st->counters[SP_CNT_DROP_CALL],
			(unsigned long long)st->counters[SP_CNT_DROP_RET],
			(unsigned long long)st->exits);
}

/* A bounded recording, a dump or a merge says what it holds: a line each. */
static void print_flight(const struct tf_header *hdr)
{
	const struct sp_segment_rec *seg = &hdr->segment;
	const struct sp_window_rec *w = &hdr->window;
	__u64 gap = 0, ref = 0;
	__u32 merged = 0;

	if (tf_header__rotated(hdr))
		fprintf(stderr, "specprobe: rotated out before segment %u: %llu calls, "
			"%llu records, %llu bytes, from %llu to %llu\n", seg->index,
			(unsigned long long)seg->prior_calls,
			(unsigned long long)seg->prior_records,
			(unsigned long long)seg->prior_bytes,
			(unsigned long long)seg->prior_first_ts,
			(unsigned long long)seg->prior_last_ts);
	if (w->type)
		fprintf(stderr, "specprobe: dump %u: pid %u tid %u seq %u entered at %llu, "
			"unreturned %llu ns at %llu; kept until %llu ns after\n", w->dump, w->tgid,
			w->tid, w->seq, (unsigned long long)w->entry_ts,
			(unsigned long long)w->threshold_ns, (unsigned long long)w->ts,
			(unsigned long long)w->after_ns);
	for (__u32 i = 0; i < hdr->nr_clocks; i++) {
		const struct sp_clock_rec *c = &hdr->clocks[i];

		if (!(c->flags & SP_CLOCK_MERGED))
			continue;
		merged++;
		/* against the first source's snapshot, as merge states it */
		if (c->source == 0)
			ref = c->gap_ns;
		else if ((c->gap_ns + ref + 1) / 2 > gap)
			gap = (c->gap_ns + ref + 1) / 2;
	}
	if (merged > 1)
		fprintf(stderr, "specprobe: merged from %u recordings, clocks aligned within "
			"%llu ns as measured; host realtime (NTP) offsets unknown\n", merged,
			(unsigned long long)gap);
}

int cmd_dump(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "FILE", doc, NULL, NULL, NULL };
	static const struct pipeline_opts calls_only = { .analyse = false };
	struct dumper d = { .out = stdout };
	struct pipeline_consumer printer = { .call = print_call, .srvmetric = keep_sample,
					     .gpu_record = keep_gpu, .ctx = &d };
	struct pipeline *p;
	char err[512];
	int ret, fin, status = 0;

	if (cli__argp_parse(&argp, argc, argv))
		return 2;
	p = pipeline__open(env.input, &calls_only, err, sizeof(err));
	if (!p) {
		log_error("%s", err);
		return 1;
	}
	if (env.header)
		print_header(stdout, pipeline__header(p));
	if (env.counts)
		d.per_probe = calloc(SP_MAX_PROBES, sizeof(*d.per_probe));
	if (env.counts && !d.per_probe) {
		log_error("out of memory");
		pipeline__free(p);
		return 1;
	}
	d.stacks = pipeline__callstacks(p);
	pipeline__add(p, &printer);
	ret = pipeline__read_all(p);
	if (ret == -EBADMSG) {
		/* keep what was read: the calls before the corruption are whole */
		log_error("%s", pipeline__error(p));
		status = 1;
	} else if (ret < 0) {
		log_error("%s: %s", env.input, strerror(-ret));
		status = 1;
	}
	fin = pipeline__finish(p);
	if (print_held_before(&d, 0, true)) {
		log_error("out of memory");
		status = 1;
	}
	if (fin == -EIO || ferror(stdout) || fflush(stdout)) {
		log_error("writing output: %s", strerror(errno));
		status = 1;
	}
	if (d.per_probe)
		print_counts(stdout, &d, pipeline__header(p));
	fflush(stdout);
	print_totals(pipeline__stats(p));
	print_gpu_totals(&d.gpu);
	print_flight(pipeline__header(p));
	if (!ret)
		pipeline__warn_input(p, env.input);
	free(d.per_probe);
	free(d.samples);
	free(d.gpu_held);
	free_names(&d);
	pipeline__free(p);
	return status;
}
