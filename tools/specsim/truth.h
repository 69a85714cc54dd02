/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Ground truth of the simulated server: every driver/NCCL call bracketed by
 * CLOCK_MONOTONIC reads, kept in memory as binary records and written as JSON
 * Lines at exit, so recording adds little to the timing it describes.
 */
#ifndef __SPECSIM_TRUTH_H
#define __SPECSIM_TRUTH_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include "specsim.h"

#define GT_MAX_ARGS 12

enum gt_phase {
	PH_INIT,
	PH_CAPTURE,
	PH_EXERCISE,
	PH_WAIT,
	PH_DRAFT,
	PH_VERIFY,
	PH_ACCEPT,
	PH_EXTEND,
	PH_RATE,
	PH_TEARDOWN,
	PH_NR,
};

struct gt_arg {
	const char *key;
	long long val;
	const char *str;	/* a string value instead, when set */
};

#define A(k, v) { (k), (long long)(uintptr_t)(v), NULL }
#define AS(k, s) { (k), 0, (s) }

/* One edge of a noted call: its entry, or its return. */
struct gt_ref {
	const char *name;
	unsigned long long before, after;
	bool entry;
};

enum gt_loop_phase { LP_DRAFT, LP_VERIFY, LP_ACCEPT, LP_EXTEND, LP_NR };

/* The calls that bound one cycle and its phases (briefs/cycle-defs.md). */
struct gt_bounds {
	int cycle, tid;
	struct gt_ref start, end;
	struct gt_ref phase_start[LP_NR], phase_end[LP_NR];
	int draft_launches, verify_launches, extend_launches, syncs;
};

unsigned long long gt_now(void);
void truth__init(int rank, int nranks);
void truth__set_phase(enum gt_phase phase, int cycle);
void truth__set_tag(const char *tag);
void truth__set_position(const char *position);
void truth__set_serialises(unsigned long long stream);
void truth__set_stream_busy(int busy);
struct gt_ref truth__last(bool entry);
void truth__cycle_bounds(const struct gt_bounds *b);
void truth__call(const char *name, unsigned long long before, unsigned long long after,
		 int result, const struct gt_arg *args, int nargs);
void truth__nested(const struct specsim_call_note *note);
void truth__phase_span(int cycle, enum gt_phase phase, unsigned long long start,
		       unsigned long long end);
void truth__stage(const char *stage, unsigned long long start, unsigned long long end);
void truth__line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
long long truth__count(const char *name);
int truth__write(const char *path);
/*
 * Open path to write it from the start: never through a symlink, a FIFO or a
 * file of another user or with other names; NULL with the reason on stderr.
 */
FILE *truth__create(const char *path);

/*
 * Call fn with args and note it: the clock is read just before and just after,
 * and the argument list is evaluated after the call, so output values written
 * by the call are there.
 */
#define GT_ARGV(...) ((const struct gt_arg[]){ { NULL, 0, NULL }, ##__VA_ARGS__ })
#define GT_ARGC(...) ((int)(sizeof(GT_ARGV(__VA_ARGS__)) / sizeof(struct gt_arg)) - 1)
#define CALL(fn, callargs, ...)                                                     \
	({                                                                          \
		unsigned long long b_ = gt_now();                                   \
		int r_ = fn callargs;                                               \
		unsigned long long a_ = gt_now();                                   \
		truth__call(#fn, b_, a_, r_, GT_ARGV(__VA_ARGS__) + 1,              \
			    GT_ARGC(__VA_ARGS__));                                  \
		r_;                                                                 \
	})

#endif /* __SPECSIM_TRUTH_H */
