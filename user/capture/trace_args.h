/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What to trace and how to record it: filled by the command line, read by capture. */
#ifndef __TRACE_ARGS_H
#define __TRACE_ARGS_H

#include <stdbool.h>

#define MAX_PIDS 256
#define MAX_LIBS 16

/* What to trace: -p, --lib or -- CMD, shared by every tracing command. */
struct target_args {
	int pids[MAX_PIDS];
	int nr_pids;
	const char *libs[MAX_LIBS];
	int nr_libs;
	char **cmd;		/* -- CMD ARGS: started under trace; NULL-terminated */
	const char *user;	/* -u: run CMD as this user */
};

/* Which calls record their call site (--stacks). */
enum trace_stacks {
	STACKS_SYNCS,		/* blocking and implicitly synchronising calls (the default) */
	STACKS_ALL,		/* every probed call, launches too */
	STACKS_NONE,		/* none: a version 1 recording */
};

/* How to record: -o, --duration, --force, --ring-mb, shared by record and live report. */
struct recording_args {
	const char *output;
	bool output_named;		/* output named by specprobe: removed if nothing was traced */
	unsigned long long duration_ns;	/* 0: until Ctrl-C or the processes exit */
	unsigned long ring_mb;		/* 0: the default, 64 */
	bool force;
	bool mode_set;
	unsigned int mode;		/* --mode, else the recording is 0600 */
	unsigned long long max_bytes;	/* --max-size: a ring of segment files; 0: one file */
	unsigned long long hung_ns;	/* --dump-on hung=DURATION; 0: no dumps */
	enum trace_stacks stacks;	/* --stacks */
	bool gpu;			/* --gpu: GPU timeline through the activity agent */
	const char *cupti;		/* --cupti PATH: the agent's libcupti; NULL: searched */
	const char *server_metrics;	/* --server-metrics URL: the server's /metrics; NULL: none */
	unsigned long long server_metrics_interval_ns;	/* 0: once a second */
	unsigned long long sample_on_ns;	/* --sample ON/EVERY; 0: launch probes always in */
	unsigned long long sample_every_ns;
};

#endif /* __TRACE_ARGS_H */
