/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The one path every front end takes: records in (a recording file, or the
 * live ring through the recorder's tap), the decoder, the model, the analyses,
 * and consumers told what happened through callbacks.
 *
 * Incremental (as records are fed): the header is kept current with late
 * libraries and probes, calls are decoded and handed to the model and then to
 * every consumer in entry-time order, window ticks in trace time, and
 * pipeline__snapshot (decode counters, the model's view so far).
 * At the end only (pipeline__finish): cycles and syncs need the whole loop, so
 * they are computed once there and consumers hear of every cycle, every
 * classified sync, and then the end with the results. A whole run in windows
 * (opts.whole) gives consumers the same, from passes over a file.
 */
#ifndef __PIPELINE_H
#define __PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "cycles.h"
#include "decode.h"
#include "gputime.h"
#include "model.h"
#include "results.h"
#include "srvmetrics.h"
#include "syncs.h"
#include "tracefile.h"
#include "wholerun.h"

#define PIPELINE_MAX_CONSUMERS 8

/* Each callback may be NULL; a non-zero return (a negative errno) stops the pipeline. */
struct pipeline_consumer {
	/* A decoded call, after the model saw it; hdr is current for late probes. */
	int (*call)(void *ctx, const struct tf_header *hdr, const struct sp_call *call);
	/*
	 * Trace time passed another tick_ns (per the decoded calls' entry times);
	 * of windows with no call between two calls, only the first and last tick.
	 */
	int (*tick)(void *ctx, __u64 ts_ns);
	/*
	 * --gpu: each GPU execution once its launching call is known, or once it
	 * is given up as unmatched (call_ts 0); in the order they were settled.
	 */
	int (*gpu)(void *ctx, const struct gpu_exec *e);
	/*
	 * --gpu: each GPU record (SP_REC_GPU, _NAME, _STATE) as fed, unmatched,
	 * for views that show records as they are (dump); size checked.
	 */
	int (*gpu_record)(void *ctx, const struct sp_rec_hdr *rec, size_t size);
	/* --server-metrics: each sample or failed scrape as fed (calls come later, in order). */
	int (*srvmetric)(void *ctx, const struct sp_srvmetric_rec *m);
	/* At the end, after the analyses: each cycle of each loop, in order. */
	int (*cycle)(void *ctx, const struct loop *lp, const struct cycle *c);
	/* At the end: each sync of the model with its verdict, in entry order. */
	int (*sync)(void *ctx, const struct sync_verdict *sv);
	/* Last: res NULL when the pipeline does not analyse (opts.analyse false). */
	int (*end)(void *ctx, const struct results *res, const struct decode_stats *st);
	void *ctx;
};

struct pipeline_opts {
	bool analyse;		/* build the model and run the analyses; false: calls only */
	/*
	 * Windowed analyses (settle.h): cycles and syncs are handed on as they
	 * settle, at each tick, and the model forgets them; the end's results
	 * are the last window's. For views that run for hours.
	 */
	bool window;
	/*
	 * A pass of a whole recording analysed in windows (wholerun.h): as
	 * window, but the last pass's results are the whole run's.
	 */
	struct wholerun *whole;
	__u64 tick_ns;		/* 0: no ticks (windowed: a step every 250 ms) */
};

/* What can be read while records still come. */
struct pipeline_snapshot {
	const struct decode_stats *stats;
	const struct model_view *model;	/* NULL when not analysing */
	__u64 last_ts;			/* entry time of the last call handed on */
	__u64 settled_ns;		/* windowed: cycles and syncs before it were handed on */
};

struct pipeline;

/* For records of a trace described by hdr (copied: the caller may free it). NULL: no memory. */
struct pipeline *pipeline__new(const struct tf_header *hdr, const struct pipeline_opts *opts);
/*
 * A recording file as the source: open it, and a pipeline on its header.
 * NULL with a one-line reason in err.
 */
struct pipeline *pipeline__open(const char *path, const struct pipeline_opts *opts, char *err,
				size_t err_sz);
/* Add a consumer (copied) before the first record; 0 or -ENOSPC. */
int pipeline__add(struct pipeline *p, const struct pipeline_consumer *c);
/* Any record, in the order the ring (or the file) gave it; 0 or a consumer's error. */
int pipeline__feed(struct pipeline *p, const void *rec, size_t size);
/*
 * Opened pipelines: feed every record of the file. 0 at its end, a file cut
 * inside a record included (it ends at its last whole record; the stats'
 * cut_at says where), -EBADMSG (corrupt; pipeline__error says where), or a
 * consumer's error. The calls read so far are whole either way.
 */
int pipeline__read_all(struct pipeline *p);
/* Opened pipelines, a record at a time (paced replays): 1 and its time, 0 at the end. */
int pipeline__read_next(struct pipeline *p, __u64 *ts);
const char *pipeline__error(const struct pipeline *p);
/*
 * After reading: a warning line for each thing the input lacked or had
 * wrong (a cut inside a record or no end record, a gap in a set, unknown
 * cookies, records seen twice, stamps out of order), path naming the input;
 * nothing for a sound one.
 */
void pipeline__warn_input(const struct pipeline *p, const char *path);
/* End of input: the last calls, the analyses, then the end callbacks; 0 or -errno. */
int pipeline__finish(struct pipeline *p);
/* Any time: the incremental part (see above). */
void pipeline__snapshot(const struct pipeline *p, struct pipeline_snapshot *out);
const struct tf_header *pipeline__header(const struct pipeline *p);
/* The whole run it is a pass of (opts.whole), or NULL. */
struct wholerun *pipeline__wholerun(const struct pipeline *p);
const struct decode_stats *pipeline__stats(const struct pipeline *p);
/* The GPU matching and the agents so far; NULL when no GPU record came. */
const struct gpu_stats *pipeline__gpu_stats(const struct pipeline *p);
/* --server-metrics: the figures over the cycles, after a finish; NULL when no sample came. */
const struct srv_figures *pipeline__server(const struct pipeline *p);
/* Any time: the server-metrics samples so far (srvstats__each_interval); NULL: none came. */
const struct srvstats *pipeline__server_samples(const struct pipeline *p);
/* Any time: tokens/s and accept length between the last two good scrapes; false: none. */
bool pipeline__server_recent(const struct pipeline *p, double *tokens_per_s,
			     double *accept_length);
/* The stacks and call sites that calls' .stack name. */
const struct callstacks *pipeline__callstacks(const struct pipeline *p);
/* Calls entered and not returned yet, as the decoder holds them (hung syncs, collectives). */
void pipeline__open_calls(const struct pipeline *p,
			  void (*fn)(void *ctx, const struct sp_call *call), void *ctx);
/* After a successful finish with opts.analyse: the results; NULL otherwise. */
const struct results *pipeline__results(const struct pipeline *p);
void pipeline__free(struct pipeline *p);

#endif /* __PIPELINE_H */
