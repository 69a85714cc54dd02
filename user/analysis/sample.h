/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * --sample: launch probes were in only in windows (SP_REC_SAMPLE). Cycles
 * count only where a window holds them whole, with the iteration before
 * them; a sync outside such a cycle takes the verdict its call site earned
 * inside one (docs/sampling.md).
 */
#ifndef __SAMPLE_H
#define __SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "hmap.h"

struct sample_window {
	__u64 open_ns, close_ns;	/* close_ns UINT64_MAX while it is open */
	/* the tracer set an edge late: launches are all in only from whole_from to whole_to */
	__u64 whole_from_ns, whole_to_ns;
};

struct sample_windows {
	struct sample_window *w;	/* in order; nr 0: not a sampled recording */
	size_t nr, cap;
	__u32 on_ms, every_ms;		/* the duty cycle asked for */
	__u32 probes;			/* launch probes a window puts in (the last one) */
	__u64 attach_ns, detach_ns;	/* summed over the windows */
	__u64 attach_max_ns, detach_max_ns;
	/* verdicts by call site, learned inside windows: (site, call) -> struct sample_site */
	struct hmap sites;
	bool learn_settled;	/* windowed analyses: learn as syncs settle, not as judged */
};

/* One call site's verdicts inside whole cycles, and where it sat in them. */
struct sample_site {
	__u32 of[8];			/* per enum verdict */
	__u8 pos;			/* enum sync_pos of its last such sync */
	bool pageable;			/* ... a copy its wait showed to be into pageable memory */
};

/* An SP_REC_SAMPLE record; size checked. */
void sample__note(struct sample_windows *s, const void *rec, size_t size);
static inline bool sample__on(const struct sample_windows *s)
{
	return s->nr != 0;
}
/* Window edges at or before ts: odd inside window (slot - 1) / 2, even between. */
size_t sample__slot(const struct sample_windows *s, __u64 ts);
/* Do from and to lie inside one window? Always true for a recording not sampled. */
bool sample__inside(const struct sample_windows *s, __u64 from, __u64 to);
/* Time inside windows from first_ns to last_ns; the share of it, 1.0 when not sampled. */
__u64 sample__covered_ns(const struct sample_windows *s, __u64 first_ns, __u64 last_ns);
double sample__share(const struct sample_windows *s, __u64 first_ns, __u64 last_ns);

/* What the windows saw, as every output states it (on false for a recording made without). */
struct sample_figures {
	bool on;
	__u32 on_ms, every_ms;
	size_t windows;
	double seen_share;		/* of the recording's time, launch probes in */
	__u64 attach_mean_ns, detach_mean_ns;
	size_t cycles_whole;		/* counted: whole inside a window */
	size_t cycles_cut;		/* iterations a window's edge cut */
	size_t cycles_scaled;		/* the run's, estimated: per-cycle costs divide by it */
};

/* The windows' part of f from first_ns to last_ns; the cycles are the caller's to add. */
void sample__figures(const struct sample_windows *s, __u64 first_ns, __u64 last_ns,
		     struct sample_figures *f);
void sample__free(struct sample_windows *s);

#endif /* __SAMPLE_H */
