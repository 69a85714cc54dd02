/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* BPF lifecycle: open, size, load, attach, poll, free. */
#ifndef __SESSION_H
#define __SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "calibrate.h"
#include "probes.h"
#include "specprobe.h"
#include "trace_args.h"
#include "watchdog.h"

struct session;

/* Called for every ring-buffer record; non-zero stops the poll with that value. */
typedef int (*session_record_fn)(void *ctx, const void *rec, size_t size);

struct session_opts {
	__u64 ring_bytes;	/* power of two, at least a page */
	__u64 wake_bytes;	/* ring data that makes a submit wake the reader */
	session_record_fn on_record;
	void *ctx;
	enum trace_stacks stacks;	/* probes whose entries write an SP_REC_STACK */
};

/* Open and load the BPF object with one spec per probe; NULL with err. */
struct session *session__open(const struct session_opts *opts, const struct probe_set *ps,
			      char *err, size_t err_sz);
int session__trace_tgid(struct session *s, __u32 tgid);
/* Configure the Python stack reader for tgid's interpreter: 0, -ENOENT without one. */
int session__trace_python(struct session *s, __u32 tgid);
void session__untrace_python(struct session *s, __u32 tgid);
/*
 * The driver's pinned memory [start, end) of a process that already ran when it
 * was attached to: async copies into or out of it are recorded at entry only
 * (where the return probes are sessions). 0 or -errno.
 */
int session__note_pinned(struct session *s, __u32 tgid, __u64 start, __u64 end);
/*
 * Attach every probe of ps in the libraries of t (entry, and return where
 * the kind has a completion). Marks probes attached; returns the number
 * attached, or -errno when none could be.
 */
int session__attach(struct session *s, const struct targets *t, struct probe_set *ps);
/* The same for one library (its probes' specs are loaded first); attached or -errno. */
int session__attach_lib(struct session *s, const struct targets *t, struct probe_set *ps, int lib);
/*
 * Launch probes (SP_CLASS_LAUNCH) only in windows (--sample): from now on
 * attaching leaves them out, and session__window_open puts them in. 0, or
 * -EOPNOTSUPP without uprobe_multi links.
 */
int session__window_launches(struct session *s, const struct probe_set *ps);

/* A window's edge: from when (or up to when) every launch is recorded, and what it cost. */
struct window_edge {
	__u64 ts;		/* CLOCK_MONOTONIC ns, as the records' */
	__u64 cost_ns;		/* wall time the links took to go in or out */
	__u64 late_ns;		/* the bound landed that long after ts: launches whole only past it */
};

/*
 * Put the launch probes of every library of t in, one entry link per library;
 * libraries attached while the window is open join it. A launch is recorded
 * from e->ts on (a hit before, while the links go in, is not). Probes in, or
 * -errno when some library's could not be put in (the others are).
 */
int session__window_open(struct session *s, const struct targets *t, const struct probe_set *ps,
			 struct window_edge *e);
/* No launch recorded after e->ts, which has passed. */
void session__window_edge(struct session *s, struct window_edge *e);
/* After the edge: the links go out (e->cost_ns: how long). The number taken out. */
int session__window_close(struct session *s, struct window_edge *e);
/*
 * Probe a dynamic loader's _dl_debug_state at offset: traced processes that
 * load a CUDA/NCCL library through it are stopped (SP_REC_LIBMAP).
 * r_debug_delta: st_value(_r_debug) - st_value(_dl_debug_state). 0 or -errno.
 */
int session__hook_loader(struct session *s, const char *path, __u64 offset, __u64 r_debug_delta);
/* Is some loader hooked, so libraries loaded later are caught? */
bool session__hooks_loads(const struct session *s);
/*
 * specprobe is about to load a library of its own into tgid (on), or has (off):
 * where no load of tgid was walked yet (each entry would look new, so the
 * process be stopped blind), that load only counts the loaded objects and
 * stops nothing. Off: true if such a load came, so tgid's mappings are to be
 * read again (tracer__rescan) for a library another thread loaded with it.
 */
bool session__own_load(struct session *s, __u32 tgid, bool on);
/* From now on no process is stopped: tracing is ending. */
void session__unhook_loads(struct session *s);
/*
 * Time calls of specprobe's own calibration function without probes, with an
 * entry probe, and with the return probe too (before any target is traced;
 * the counters are zeroed afterwards). 0 or -errno.
 */
int session__calibrate(struct session *s, __u32 calls, struct calibration *out);
void session__reset_counters(struct session *s);
/* The ring's packed entry as a recording's call record (room: bytes at rec); 0 or -EINVAL. */
int session__widen_call(const struct sp_call_pkt *pkt, size_t size, struct sp_call_rec *rec,
			size_t room);
/* Wait up to timeout_ms, then consume everything ready; records consumed or -errno. */
int session__poll(struct session *s, int timeout_ms);
/* Consume what is in the ring now, without waiting. */
int session__drain(struct session *s);
/* The maps the watchdog and the continuing of stopped processes use (the session's fds). */
void session__stop_maps(struct session *s, struct stop_maps *out);
/* Totals of the per-CPU counters (enum sp_counter). */
int session__counters(struct session *s, __u64 totals[SP_CNT_NR]);
void session__free(struct session *s);

#endif /* __SESSION_H */
