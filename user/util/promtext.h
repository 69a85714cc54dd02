/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The Prometheus text format, read for the few families specprobe knows
 * (docs/server-metrics.md): each is summed over its label sets, the rest
 * of the body is skipped. A sample of a known family that is not
 * `name{labels} value [timestamp]`, or whose value the family cannot hold
 * (a counter below 0, NaN, infinite, fractional or from 2^53 on), fails the
 * whole scrape: none of its numbers is kept.
 */
#ifndef __PROMTEXT_H
#define __PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "specprobe.h"

#define PROM_WHY 192		/* room for why a scrape failed */
#define PROM_MAX_COUNT 9007199254740992.0	/* 2^53: a double counts by one below it */

struct prom_family {
	double sum;		/* over the label sets; gauges: read value / series for the mean */
	__u32 series;		/* label sets seen; 0: family absent */
};

struct prom_scrape {
	enum sp_srv_server server;	/* from the first known family's prefix */
	struct prom_family fam[SP_SRV_FAMILY_NR];
	__u32 samples;		/* sample lines read, known or not */
	__u32 bad_lines;	/* lines of other families that are neither samples nor comments */
	__u32 nan_gauges;	/* known gauges at NaN (no value yet): left out */
	char why[PROM_WHY];	/* a status other than SP_SRV_OK: what, naming the sample */
};

/*
 * Read body (len bytes, need not end in NUL). SP_SRV_OK, SP_SRV_NOT_TEXT (HTML,
 * or nothing that reads as samples), SP_SRV_NO_FAMILY (samples, none known
 * with a value), SP_SRV_BAD_SAMPLE or SP_SRV_BAD_VALUE; out->why says which
 * sample and what is wrong with it.
 */
enum sp_srv_status promtext__parse(const char *body, size_t len, struct prom_scrape *out);
/*
 * A value of a known family: NULL when the family can hold it, else what is
 * wrong ("below 0", "NaN"...). Gauges: NaN is "no value yet", said as such.
 */
const char *promtext__check(enum sp_srv_family f, double v);
/* A Prometheus text-format number (Go's ParseFloat without hex or '_'): false if not one. */
bool promtext__number(const char *s, size_t len, double *v);
/* Whether a family is a gauge (its value is a mean of label sets, not a sum). */
bool promtext__is_gauge(enum sp_srv_family f);
/* The family's value as recorded: the sum, or for a gauge the mean. */
double promtext__value(const struct prom_scrape *s, enum sp_srv_family f);
/* A scrape's status as dump and report --json name it ("ok", "bad_value"...; else "unknown"). */
const char *promtext__status_name(unsigned int status);
/* "vllm", "sglang" or "server". */
const char *promtext__server_name(enum sp_srv_server s);

#endif /* __PROMTEXT_H */
