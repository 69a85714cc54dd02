/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The Prometheus text format, read for the few families specprobe knows
 * (docs/server-metrics.md): each is summed over its label sets, the rest
 * of the body is skipped.
 */
#ifndef __PROMTEXT_H
#define __PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "specprobe.h"

struct prom_family {
	double sum;		/* over the label sets; gauges: read value / series for the mean */
	__u32 series;		/* label sets seen; 0: family absent */
};

struct prom_scrape {
	enum sp_srv_server server;	/* from the first known family's prefix */
	struct prom_family fam[SP_SRV_FAMILY_NR];
	__u32 samples;		/* sample lines read, known or not */
	__u32 bad_lines;	/* lines that are neither samples nor comments */
};

/*
 * Read body (len bytes, need not end in NUL). SP_SRV_OK, SP_SRV_NOT_TEXT (HTML,
 * or nothing that reads as samples) or SP_SRV_NO_FAMILY (samples, none known).
 */
enum sp_srv_status promtext__parse(const char *body, size_t len, struct prom_scrape *out);
/* Whether a family is a gauge (its value is a mean of label sets, not a sum). */
bool promtext__is_gauge(enum sp_srv_family f);
/* The family's value as recorded: the sum, or for a gauge the mean. */
double promtext__value(const struct prom_scrape *s, enum sp_srv_family f);
/* "vllm", "sglang" or "server". */
const char *promtext__server_name(enum sp_srv_server s);

#endif /* __PROMTEXT_H */
