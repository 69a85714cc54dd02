/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The server's own counters (--server-metrics, docs/server-metrics.md) joined
 * to the cycles: counter deltas over the span the cycles cover (a drop is a
 * restart, counted from 0 as Prometheus's rate() does), tokens/s, accept
 * length, drafts per cycle beside the cycles specprobe counted.
 */
#ifndef __SRVMETRICS_H
#define __SRVMETRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "specprobe.h"

struct loop;
struct cycle;

struct srv_figures {
	bool have;			/* two good scrapes bound a span: the figures below hold */
	enum sp_srv_server server;
	__u32 tgid;			/* the process the samples were kept under; 0: none */
	__u32 scrapes, failed;		/* good and failed scrapes in the whole recording */
	/* failed ones by status (SP_SRV_STATUS_NR: one unknown, or a sample out of its range) */
	__u32 failed_by[SP_SRV_STATUS_NR + 1];
	__u32 resets;			/* counter drops inside the span (server restarts) */
	__u64 span_start_ns, span_end_ns;	/* the two scrapes bounding the span */
	bool has[SP_SRV_FAMILY_NR];	/* which families the span's scrapes held */
	double delta[SP_SRV_FAMILY_NR];	/* counters: the increase over the span */
	double tokens_per_s;		/* has[GENERATED] */
	double accept_length;		/* 1 + accepted / drafts, or the gauge's mean; 0: none */
	bool accept_from_gauge;
	double accept_rate;		/* accepted / draft tokens, or the gauge's mean; -1: none */
	size_t cycles;			/* ours that start inside the span (the busiest loop) */
	double cycles_per_s;		/* those over the span */
	double drafts_per_cycle;	/* has[DRAFTS] and cycles */
	double tokens_per_cycle;	/* has[GENERATED] and cycles */
	bool disagree;			/* fewer server drafts than our cycles beyond the edges */
};

struct srvstats;

struct srvstats *srvstats__new(void);
/*
 * SP_REC_SRVMETRIC: 1 (taken), 0 for other records, -ENOMEM. A sample whose
 * value its family cannot hold (promtext__check: a damaged file) fails its
 * whole scrape, counted under SP_SRV_BAD_VALUE.
 */
int srvstats__record(struct srvstats *s, const void *rec, size_t size);
/* Whether any server-metrics record came. */
bool srvstats__any(const struct srvstats *s);
/* Each counted cycle of each loop, once; -ENOMEM. */
int srvstats__cycle(struct srvstats *s, const struct loop *lp, const struct cycle *c);
/* The figures over the cycles given so far (and the samples). */
void srvstats__compute(const struct srvstats *s, struct srv_figures *out);
/* The same over every good scrape, whatever the cycles: what the server counted since the first. */
void srvstats__whole(const struct srvstats *s, struct srv_figures *out);
/* Live views: tokens/s and accept length between the last two good scrapes; false: none. */
bool srvstats__recent(const struct srvstats *s, double *tokens_per_s, double *accept_length);
/*
 * Each span between two good scrapes that follow each other, in order, as
 * srvstats__compute makes it (no cycles: those fields stay 0); stops at fn's
 * non-zero return and gives it.
 */
int srvstats__each_interval(const struct srvstats *s,
			    int (*fn)(void *ctx, const struct srv_figures *f), void *ctx);
void srvstats__free(struct srvstats *s);

#endif /* __SRVMETRICS_H */
