/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Everything between "trace these pids" and records flowing: targets, probes, session. */
#ifndef __TRACER_H
#define __TRACER_H

#include "trace_args.h"
#include "callsites.h"
#include "launch.h"
#include "probes.h"
#include "session.h"
#include "sharing.h"
#include "targets.h"
#include "tracefile.h"

struct tracer_opts {
	const struct target_args *targets;	/* -p pids, --lib files */
	bool wait_for_libs;	/* no library mapped yet is fine: catch it when it is */
	__u64 ring_bytes;
	enum trace_stacks stacks;
	session_record_fn on_record;
	void *ctx;
	struct calibration calib;	/* calls 0: not measured */
	bool calib_described;
	char *const *child_env;	/* -- CMD: NAME=VALUE added to its environment (--gpu) */
	__u64 sample_on_ns;	/* --sample ON/EVERY: launch probes in windows; 0: always in */
	__u64 sample_every_ns;
};

/* --sample: a window of ON opens every EVERY, from the first poll on. */
struct sampling {
	__u64 on_ns, every_ns;	/* on_ns 0: launch probes always in */
	__u64 sched_ns;		/* when the current (or last) window was due to open */
	__u64 next_ns;		/* the next edge: its close if open, else the next open */
	bool open;
	bool warned;		/* a launch link failed once: said once */
	int probes_in;		/* launch probes the open window put in */
};

struct tracer {
	struct targets targets;
	struct probe_set probes;
	struct session *session;
	__u64 attach_start_ns;
	__u64 attach_done_ns;
	int nr_attached;
	struct launch child;	/* -- CMD; pid 0 if none */
	const char *child_name;
	int child_status;	/* as waitpid() gave it, once reaped */
	bool child_reaped;
	bool child_execd;	/* -- CMD's own exec into CMD: not worth a line */
	struct sharing sharing;	/* marks: which processes we trace, for other tracers */
	struct stop_maps stop_maps;	/* which processes the programs stopped, and when */
	struct watchdog watchdog;	/* continues them if we do not */
	/* what the header holds; later libraries, probes, maps go out as records */
	int hdr_libs, hdr_probes, hdr_maps;
	int procs_described;	/* targets.tgids before this index went out as SP_REC_PROC */
	int hostmem_described;	/* ... and their writable mappings as SP_REC_HOSTMEM */
	int nr_running;		/* targets.tgids before this index ran before they were traced */
	bool header_done;
	int loaders_hooked;	/* targets.loaders before this index have their hook */
	bool stopping;		/* only continue stopped processes from here on */
	session_record_fn on_record;
	void *ctx;
	struct calibration calib;	/* calls 0: not measured */
	bool calib_described;
	struct sp_runq_rec *runq;	/* threads' run-queue waits just before the attach mark */
	int nr_runq;
	enum trace_stacks stacks;
	struct callsites *sites;	/* what stack records need before them */
	struct rank_watch *ranks;	/* what each process showed of its rank so far */
	struct sampling sample;
};

/* A process stopped for a library mapping and not yet continued (for exit paths). */
extern volatile int tracer_stopped_pid;

/*
 * Discover, resolve, load and attach; 0, or -1 after printing one line why.
 * A -- CMD waits, before its exec, for tracer__release: a failure before
 * then (tracer__stop) ends it without its having run.
 */
int tracer__start(struct tracer *tr, const struct tracer_opts *opts);
/* Let a -- CMD exec (no-op without one); 0 or -1 after printing why. */
int tracer__release(struct tracer *tr);
/* Discover and resolve only (no BPF, no root needed); 0 or -1 after printing why. */
int tracer__resolve(struct tracer *tr, const struct tracer_opts *opts);
/*
 * Header describing this trace (the caller frees it with tracer__free_header).
 * Libraries attached after this call reach on_record as SP_REC_LIB/PROBE/MAP.
 */
void tracer__header(struct tracer *tr, struct tf_header *hdr);
void tracer__free_header(struct tf_header *hdr);
void tracer__stop(struct tracer *tr);
/* Read tgid's mappings again and attach to libraries new in them. */
void tracer__rescan(struct tracer *tr, __u32 tgid);
/* Right after the header is written: records for what it cannot hold (pid namespaces). */
int tracer__describe(struct tracer *tr);
/* One SP_REC_CPU per live traced process, for self-overhead as a share of its CPU time. */
int tracer__sample_cpu(struct tracer *tr);
/*
 * Read the ring for up to timeout_ms (late libraries are attached from here);
 * 0 or -errno. With --sample the wait ends at the next window edge, and the
 * window opens or closes here, written as SP_REC_SAMPLE.
 */
int tracer__poll(struct tracer *tr, int timeout_ms);
/* The recording ends: a window still open closes (its SP_REC_SAMPLE written). */
void tracer__end_windows(struct tracer *tr);
/* Has the launched command exited (reaping it)? false without one. */
bool tracer__child_exited(struct tracer *tr);
__u64 tracer__now_ns(void);

#endif /* __TRACER_H */
