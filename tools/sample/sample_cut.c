// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * sample_cut IN OUT --on MS --every MS [--phase MS]: the recording --sample
 * ON/EVERY would have made of the run IN holds. Launch-class calls entered
 * outside every window [t0 + phase + k*every, + on] (t0: the first call's
 * time) go, with their completions and stacks; SP_REC_SAMPLE records mark
 * each window's open and close; everything else is copied.
 *
 * A probe that is not attached numbers nothing: each thread's later calls are
 * renumbered past the calls taken out (seq, parent_seq, depth, and the
 * completions, stacks and hung-call windows that name them), so the output
 * reads without "calls missing". Calls the input itself lacks stay missing.
 * The fault counters lose the failed reads of the calls taken out.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "catalog.h"
#include "hmap.h"
#include "parse.h"
#include "tracefile.h"

#define MS_MAX (24ul * 3600 * 1000)	/* a day: longer windows are a typo */
#define NR_FRAMES (SP_MAX_DEPTH + 1)	/* depths 0..SP_MAX_DEPTH */

/* An open probed call on a thread, as its children will name it. */
struct frame {
	__u32 seq;		/* the input's; 0: none */
	__u32 child_parent;	/* parent_seq a call it encloses gets in the output */
	__u8 child_depth;	/* and depth */
	__u8 own_depth;		/* its own depth in the output (kept calls) */
	bool kept;
};

/* One thread's numbering: the input's seqs taken out, sorted. */
struct thread {
	__u32 *dropped;
	size_t nr_dropped, cap;
	struct frame frames[NR_FRAMES];
};

struct cut {
	const struct tf_header *hdr;	/* the reader's, late tables applied */
	struct tf_writer *w;
	struct hmap threads;		/* (tgid, tid) -> struct thread */
	__u64 on_ns, every_ns, phase_ns;
	__u32 on_ms, every_ms;
	bool have_t0, open;
	__u64 t0, last_ts;
	__u64 k;			/* the window open now, or the next to open */
	__u64 windows, kept, dropped;
	__u64 faults[SP_FAULT_NR];	/* failed reads of the calls taken out */
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: sample_cut [-f] IN OUT --on MS --every MS [--phase MS]\n"
		     "The recording --sample ON/EVERY would have made of IN: launch calls outside "
		     "the windows\n[t0 + phase + k*every, + on] (t0: the first call) are taken "
		     "out, SP_REC_SAMPLE marks\neach window. -f replaces OUT.\n");
}

static bool is_launch(const struct cut *c, __u32 probe)
{
	const struct tf_header *h = c->hdr;

	return probe < h->nr_probes && h->probes[probe].catalog < (__u32)catalog_len &&
	       catalog[h->probes[probe].catalog].cls == SP_CLASS_LAUNCH;
}

static __u32 launch_probes(const struct cut *c)
{
	__u32 n = 0;

	for (__u32 i = 0; i < c->hdr->nr_probes; i++)
		n += is_launch(c, i);
	return n;
}

/* Inside [t0 + phase + k*every, that + on] for some k. */
static bool in_window(const struct cut *c, __u64 ts)
{
	__u64 first = c->t0 + c->phase_ns;

	if (!c->have_t0 || ts < first)
		return false;
	return (ts - first) % c->every_ns <= c->on_ns;
}

static int put(struct cut *c, const void *rec, size_t size)
{
	int ret = tf_writer__write(c->w, rec, size);

	if (ret)
		fprintf(stderr, "sample_cut: %s\n", tf_writer__error(c->w));
	return ret;
}

static int put_sample(struct cut *c, bool open, __u64 ts)
{
	struct sp_sample_rec s = {
		.type = SP_REC_SAMPLE, .size = sizeof(s), .flags = open ? SP_SAMPLE_OPEN : 0,
		.ts = ts, .on_ms = c->on_ms, .every_ms = c->every_ms, .probes = launch_probes(c),
	};

	if (open)
		c->windows++;
	c->open = open;
	return put(c, &s, sizeof(s));
}

/* The bound the windows reach next: the open one's close, or the next one's open. */
static __u64 next_bound(const struct cut *c)
{
	__u64 start = c->t0 + c->phase_ns + c->k * c->every_ns;

	return c->open ? start + c->on_ns : start;
}

/* Every bound at or before ts goes in before the record stamped ts. */
static int put_bounds(struct cut *c, __u64 ts)
{
	int ret = 0;

	while (c->have_t0 && !ret && next_bound(c) <= ts) {
		__u64 b = next_bound(c);

		if (c->open)
			c->k++;
		ret = put_sample(c, !c->open, b);
	}
	return ret;
}

static struct thread *thread_get(struct cut *c, __u32 tgid, __u32 tid, bool make)
{
	struct thread *t = hmap__get(&c->threads, tgid, tid);

	if (t || !make)
		return t;
	t = calloc(1, sizeof(*t));
	if (t && hmap__set(&c->threads, tgid, tid, t)) {
		free(t);
		t = NULL;
	}
	return t;
}

/* How many of the thread's taken-out seqs are below seq. */
static size_t dropped_below(const struct thread *t, __u32 seq)
{
	size_t lo = 0, hi = t->nr_dropped;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->dropped[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool was_dropped(const struct thread *t, __u32 seq)
{
	size_t i;

	if (!t || !seq)
		return false;
	i = dropped_below(t, seq);
	return i < t->nr_dropped && t->dropped[i] == seq;
}

/* The output's number for a call of the input's (0 stays 0: no call). */
static __u32 renumber(const struct thread *t, __u32 seq)
{
	return t && seq ? seq - dropped_below(t, seq) : seq;
}

static int note_dropped(struct thread *t, __u32 seq)
{
	size_t i = dropped_below(t, seq);

	if (i < t->nr_dropped && t->dropped[i] == seq)
		return 0;
	if (t->nr_dropped == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		__u32 *d = realloc(t->dropped, cap * sizeof(*d));

		if (!d)
			return -ENOMEM;
		t->dropped = d;
		t->cap = cap;
	}
	/* a damaged number may come out of order: keep the list sorted */
	memmove(t->dropped + i + 1, t->dropped + i, (t->nr_dropped - i) * sizeof(*t->dropped));
	t->dropped[i] = seq;
	t->nr_dropped++;
	return 0;
}

/* Where a call sits in the output: its enclosing call and depth, past calls taken out. */
static void place(const struct thread *t, const struct sp_call_rec *rec, __u32 *parent,
		  __u8 *depth)
{
	const struct frame *f = rec->depth && rec->depth <= NR_FRAMES ?
				&t->frames[rec->depth - 1] : NULL;

	if (f && rec->parent_seq && f->seq == rec->parent_seq) {
		*parent = f->child_parent;
		*depth = f->child_depth;
	} else {
		*parent = was_dropped(t, rec->parent_seq) ? 0 : renumber(t, rec->parent_seq);
		*depth = rec->depth;
	}
}

static int feed_call(struct cut *c, const struct sp_call_rec *rec, size_t size)
{
	struct sp_call_rec *out;
	struct thread *t;
	__u32 parent;
	__u8 depth;
	bool keep;
	int ret;

	t = thread_get(c, rec->tgid, rec->tid, true);
	if (!t)
		return -ENOMEM;
	if (rec->seq == 1) {
		/* a new thread of that tid numbers from 1 again */
		free(t->dropped);
		memset(t, 0, sizeof(*t));
	}
	keep = !is_launch(c, rec->probe) || in_window(c, rec->ts);
	place(t, rec, &parent, &depth);
	if (rec->depth < NR_FRAMES) {
		struct frame *f = &t->frames[rec->depth];

		f->seq = rec->seq;
		f->kept = keep;
		f->own_depth = depth;
		f->child_parent = keep ? renumber(t, rec->seq) : parent;
		f->child_depth = keep ? depth + 1 : depth;
	}
	if (is_launch(c, rec->probe) && keep)
		c->kept++;
	else if (is_launch(c, rec->probe))
		c->dropped++;
	if (!keep) {
		for (int f = 0; f < SP_FAULT_NR; f++)
			c->faults[f] += f != SP_FAULT_OUT && (rec->faults & (1u << f));
		return rec->seq ? note_dropped(t, rec->seq) : 0;
	}
	out = malloc(size);
	if (!out)
		return -ENOMEM;
	memcpy(out, rec, size);
	out->seq = renumber(t, rec->seq);
	out->parent_seq = parent;
	out->depth = depth;
	ret = put(c, out, size);
	free(out);
	return ret;
}

static int feed_ret(struct cut *c, const struct sp_ret_rec *rec)
{
	struct thread *t = thread_get(c, rec->tgid, rec->tid, false);
	struct sp_ret_rec out = *rec;

	/* one without its entry: its probe was out when the launch probes were */
	if (was_dropped(t, rec->seq) ||
	    (!rec->seq && is_launch(c, rec->probe) && !in_window(c, rec->ts))) {
		c->faults[SP_FAULT_OUT] += !!(rec->faults & (1u << SP_FAULT_OUT));
		return 0;
	}
	if (t && rec->seq && rec->depth < NR_FRAMES && t->frames[rec->depth].seq == rec->seq &&
	    t->frames[rec->depth].kept)
		out.depth = t->frames[rec->depth].own_depth;
	out.seq = renumber(t, rec->seq);
	return put(c, &out, sizeof(out));
}

static int feed_stack(struct cut *c, const struct sp_stack_rec *rec, size_t size)
{
	struct thread *t = thread_get(c, rec->tgid, rec->tid, false);
	struct sp_stack_rec *out;
	int ret;

	if (was_dropped(t, rec->seq))
		return 0;
	out = malloc(size);
	if (!out)
		return -ENOMEM;
	memcpy(out, rec, size);
	out->seq = renumber(t, rec->seq);
	ret = put(c, out, size);
	free(out);
	return ret;
}

/* Counters so far, less the failed reads of the calls taken out. */
static int feed_counters(struct cut *c, const struct sp_stats_rec *rec)
{
	struct sp_stats_rec out = *rec;

	for (int f = 0; f < SP_FAULT_NR; f++) {
		__u64 *n = &out.counters[SP_CNT_FAULT_BASE + f];

		*n = *n > c->faults[f] ? *n - c->faults[f] : 0;
	}
	return put(c, &out, sizeof(out));
}

static int feed_window(struct cut *c, const struct sp_window_rec *rec)
{
	struct thread *t = thread_get(c, rec->tgid, rec->tid, false);
	struct sp_window_rec out = *rec;

	if (!was_dropped(t, rec->seq))
		out.seq = renumber(t, rec->seq);
	return put(c, &out, sizeof(out));
}

/* A window still open at the end closes at the last time read, before the end record. */
static int close_open(struct cut *c)
{
	return c->open ? put_sample(c, false, c->last_ts) : 0;
}

static int feed(struct cut *c, const void *rec, size_t size)
{
	const struct sp_rec_hdr *h = rec;
	__u64 ts;
	int ret;

	if (h->type == SP_REC_SAMPLE) {
		fprintf(stderr, "sample_cut: the input was recorded sampled already\n");
		return -EINVAL;
	}
	if (tf_record_ts(rec, size, &ts)) {
		/* the first call sets t0: its own window opens before it */
		if (!c->have_t0 && h->type == SP_REC_CALL && size >= sizeof(struct sp_call_rec)) {
			c->have_t0 = true;
			c->t0 = ts;
		}
		if (ts > c->last_ts)
			c->last_ts = ts;
		ret = put_bounds(c, ts);
		if (ret)
			return ret;
	}
	switch (h->type) {
	case SP_REC_CALL:
		return size >= sizeof(struct sp_call_rec) ? feed_call(c, rec, size) : put(c, rec, size);
	case SP_REC_RET:
		return size == sizeof(struct sp_ret_rec) ? feed_ret(c, rec) : put(c, rec, size);
	case SP_REC_STACK:
		return size >= sizeof(struct sp_stack_rec) ? feed_stack(c, rec, size)
							   : put(c, rec, size);
	case SP_REC_WINDOW:
		return size == sizeof(struct sp_window_rec) ? feed_window(c, rec) : put(c, rec, size);
	case SP_REC_END:
		ret = close_open(c);
		if (ret)
			return ret;
		/* fall through */
	case SP_REC_STATS:
		return size == sizeof(struct sp_stats_rec) ? feed_counters(c, rec)
							   : put(c, rec, size);
	default:
		return put(c, rec, size);
	}
}

static int parse_ms(const char *opt, const char *arg, __u32 *ms, bool zero_ok)
{
	unsigned long v;

	if (parse__ulong(arg, &v) || v > MS_MAX || (!v && !zero_ok)) {
		fprintf(stderr, "sample_cut: %s %s: want whole milliseconds, %s1 to %lu\n", opt, arg,
			zero_ok ? "0 or " : "", MS_MAX);
		return -EINVAL;
	}
	*ms = v;
	return 0;
}

static void free_threads(struct hmap *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		struct thread *t = m->slots[i].value;

		if (t)
			free(t->dropped);
		free(t);
	}
	hmap__free(m);
}

/* Copy IN to OUT through feed; 0, or 1 with the reason printed. */
static int cut_file(struct cut *c, const char *in, const char *out, bool force)
{
	char err[512];
	struct tf_reader *r = tf_reader__open(in, err, sizeof(err));
	const void *rec;
	int ret = 0, n;

	if (!r) {
		fprintf(stderr, "sample_cut: %s\n", err);
		return 1;
	}
	c->hdr = tf_reader__header(r);
	c->w = tf_writer__create_whole(out, force, TF_DEFAULT_MODE, c->hdr, err, sizeof(err));
	if (!c->w) {
		fprintf(stderr, "sample_cut: %s\n", err);
		tf_reader__free(r);
		return 1;
	}
	while (!ret && (n = tf_reader__next(r, &rec)) > 0)
		ret = feed(c, rec, ((const struct sp_rec_hdr *)rec)->size);
	if (!ret && n == -EBADMSG) {
		fprintf(stderr, "sample_cut: %s\n", tf_reader__error(r));
		ret = n;
	} else if (!ret) {
		/* a cut input reads up to its last whole record, as every reader takes it */
		if (n == -ENODATA)
			fprintf(stderr, "sample_cut: warning: %s\n", tf_reader__error(r));
		ret = close_open(c);
	}
	if (ret == -ENOMEM)
		fprintf(stderr, "sample_cut: out of memory\n");
	if (!ret && tf_writer__close(c->w)) {
		fprintf(stderr, "sample_cut: %s\n", tf_writer__error(c->w));
		ret = -EIO;
	}
	tf_writer__free(c->w);
	tf_reader__free(r);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "on", required_argument, NULL, 'o' },
		{ "every", required_argument, NULL, 'e' },
		{ "phase", required_argument, NULL, 'p' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cut c = { 0 };
	__u32 phase_ms = 0;
	bool force = false;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
		if ((opt == 'o' && parse_ms("--on", optarg, &c.on_ms, false)) ||
		    (opt == 'e' && parse_ms("--every", optarg, &c.every_ms, false)) ||
		    (opt == 'p' && parse_ms("--phase", optarg, &phase_ms, true)))
			return 1;
		if (opt == 'f')
			force = true;
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == '?') {
			usage(stderr);
			return 1;
		}
	}
	if (argc - optind != 2 || !c.on_ms || !c.every_ms) {
		fprintf(stderr, "sample_cut: want IN OUT --on MS --every MS (see --help)\n");
		return 1;
	}
	if (c.on_ms >= c.every_ms) {
		fprintf(stderr, "sample_cut: --on %u is not less than --every %u: nothing to cut\n",
			c.on_ms, c.every_ms);
		return 1;
	}
	c.on_ns = c.on_ms * PARSE_NS_PER_MS;
	c.every_ns = c.every_ms * PARSE_NS_PER_MS;
	c.phase_ns = phase_ms * PARSE_NS_PER_MS;
	ret = cut_file(&c, argv[optind], argv[optind + 1], force);
	if (!ret)
		fprintf(stderr, "sample_cut: %llu windows, %llu launches kept, %llu launches "
			"dropped\n", (unsigned long long)c.windows, (unsigned long long)c.kept,
			(unsigned long long)c.dropped);
	free_threads(&c.threads);
	return ret;
}
