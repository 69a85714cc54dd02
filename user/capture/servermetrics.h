/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * --server-metrics URL: the serving framework's own Prometheus endpoint,
 * read on a thread of its own every interval with one short GET (a timeout,
 * a size cap), kept as SP_REC_SRVMETRIC records (docs/server-metrics.md).
 */
#ifndef __SERVERMETRICS_H
#define __SERVERMETRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "session.h"

#define SRVM_DEFAULT_INTERVAL_NS 1000000000ull
#define SRVM_TIMEOUT_MS 500		/* connect and whole answer, at most the interval */
#define SRVM_MAX_BODY (8u << 20)

struct srvm_url {
	char host[256];		/* without brackets for an IPv6 literal */
	char port[6];
	char path[1024];
	bool loopback;
};

/* http://HOST[:PORT][/PATH] (PATH defaults to /metrics); 0 or -EINVAL with why in err. */
int srvm__parse_url(const char *url, struct srvm_url *out, char *err, size_t err_sz);

struct server_metrics;

/* Start the scraping thread (a warning line for a host that is not loopback); NULL: no memory. */
struct server_metrics *server_metrics__start(const struct srvm_url *url, __u64 interval_ns);
/*
 * Hand the samples read since the last call to emit, tgid set to the traced
 * process taken for the server (0: none). Records handed, or emit's error.
 */
int server_metrics__poll(struct server_metrics *s, __u32 tgid, session_record_fn emit, void *ctx);
/* Stop the thread (waits for a scrape under way, at most its timeout) and free; NULL is fine. */
void server_metrics__free(struct server_metrics *s);

/*
 * One scrape, synchronously: fills recs (SP_SRV_FAMILY_NR of them); returns
 * how many. A failed one is a single record whose status says what failed,
 * and why (a line's worth) which sample, header or byte count.
 */
int server_metrics__scrape(const struct srvm_url *url, int timeout_ms, __u32 scrape,
			   struct sp_srvmetric_rec *recs, char *why, size_t why_sz);

#endif /* __SERVERMETRICS_H */
