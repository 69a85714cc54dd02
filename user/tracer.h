/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Everything between "trace these pids" and records flowing: targets, probes, session. */
#ifndef __TRACER_H
#define __TRACER_H

#include "cli.h"
#include "probes.h"
#include "session.h"
#include "targets.h"
#include "tracefile.h"

struct tracer_opts {
	const struct target_args *targets;	/* -p pids, --lib files */
	__u64 ring_bytes;
	session_record_fn on_record;
	void *ctx;
};

struct tracer {
	struct targets targets;
	struct probe_set probes;
	struct session *session;
	__u64 attach_start_ns;
	__u64 attach_done_ns;
	int nr_attached;
};

/* Discover, resolve, load and attach; 0, or -1 after printing one line why. */
int tracer__start(struct tracer *tr, const struct tracer_opts *opts);
/* Discover and resolve only (no BPF, no root needed); 0 or -1 after printing why. */
int tracer__resolve(struct tracer *tr, const struct tracer_opts *opts);
/* Header describing this trace (the caller frees it with tracer__free_header). */
void tracer__header(const struct tracer *tr, struct tf_header *hdr);
void tracer__free_header(struct tf_header *hdr);
void tracer__stop(struct tracer *tr);
__u64 tracer__now_ns(void);

#endif /* __TRACER_H */
