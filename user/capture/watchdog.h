/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The programs stop a traced process that exec'd or mapped a CUDA library
 * until the tracer has hooked it. A watchdog process, forked at the start,
 * bounds that stop: it continues a stop older than WATCHDOG_BOUND_MS (a
 * tracer stopped or slow), and every stop left when the tracer is gone (by
 * any signal). It holds only the stop maps, never a program or a link.
 */
#ifndef __WATCHDOG_H
#define __WATCHDOG_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

/* A stop lasts at most this long; a normal hook takes a few ms (docs/RELIABILITY.md). */
#define WATCHDOG_BOUND_MS 500

/* The maps of the session: stops (BPF writes), stops_done (user space), counters. */
struct stop_maps {
	int stops_fd;
	int done_fd;
	int counters_fd;
};

struct watchdog {
	pid_t pid;		/* 0: none running */
	int end_fd;		/* closing it asks the watchdog for its last sweep */
};

/* Fork the watchdog; 0 or -errno. It closes every other descriptor it inherits. */
int watchdog__start(struct watchdog *wd, const struct stop_maps *maps);
/* Once no program can stop a process: continue what is left, wait for it to exit. */
void watchdog__end(struct watchdog *wd);

/* Is tgid still stopped by the stop of stop_ns, with nobody having continued it? */
bool stops__pending(const struct stop_maps *maps, __u32 tgid, __u64 stop_ns);
/* Note the stop of stop_ns continued, then send SIGCONT. */
void stops__continue(const struct stop_maps *maps, __u32 tgid, __u64 stop_ns);

#endif /* __WATCHDOG_H */
