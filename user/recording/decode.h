/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Records to calls: pairs entries with completions, marks calls whose
 * return never came, and hands calls on in entry-time order.
 */
#ifndef __DECODE_H
#define __DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "callstack.h"
#include "specprobe.h"

struct sp_call {
	struct sp_call_rec entry;	/* the entry record, data not included */
	__u8 data[SP_DATA_LARGE];
	__u16 data_len;
	bool has_ret;			/* kind with a completion record */
	bool returned;
	bool unreturned;		/* has_ret, but the return never came */
	__u16 ret_faults;
	__u64 ts_return;
	__u64 result;
	__u64 out;
	__u32 stack;			/* id in decoder__callstacks(), 0: none */
	bool wants_stack;		/* SP_CALL_HAS_STACK, and the stack has not come yet */
	bool undescribed;		/* its process is not one the recording traced */
};

struct decode_stats {
	__u64 records;
	__u64 calls;
	__u64 returns;
	__u64 orphan_returns;	/* completions with no entry seen */
	__u64 unreturned;
	__u64 late;		/* entries older than calls already handed on */
	__u64 exits;
	__u64 forks;		/* traced processes that forked a traced child */
	__u64 libmaps;		/* processes stopped to attach to a library they loaded */
	__u64 execs;		/* traced processes that exec'd */
	__u64 stacks;		/* stack records attached to their calls */
	__u64 orphan_stacks;	/* stack records whose call was not waiting for one */
	__u64 execs_after_calls;	/* ... once some call was recorded: mid-trace */
	__u64 counters[SP_CNT_NR];	/* latest BPF counters seen in the stream */
	bool have_counters;
	bool ended;		/* an end record was seen */
	struct sp_calib_rec calib;	/* .calls 0 when the recording has none */
	/* what reading the input found wrong, and how it was read (docs/recording-format.md) */
	__u64 unknown_cookie_calls;	/* calls of probes the tables do not describe: kept */
	__u64 duplicate_records;	/* a thread's call or return seen again: dropped */
	__u64 out_of_order;	/* records stamped before their thread's previous one: kept */
	__u64 unknown_process_calls;	/* calls of processes the recording never described: kept */
	__u64 missing_calls;	/* calls a thread numbered that are not in the input */
	__u64 misnumbered_calls;	/* calls whose number breaks their thread's count: kept */
	bool cut;		/* the input stops inside a record (or a set's newest header) */
	__u64 cut_at;		/* at this byte of its last file */
	__u64 ring_gaps;	/* segment files missing inside a set */
	__u64 ring_gap_calls;	/* the calls they held */
};

typedef int (*decode_call_fn)(void *ctx, const struct sp_call *call);

struct decoder;

/* reorder_ns: how far records of different CPUs may arrive out of order. */
struct decoder *decoder__new(decode_call_fn fn, void *ctx, __u64 reorder_ns);
/*
 * Probes 0 .. nr-1 are described (the header's and late ones); a call of
 * another cookie counts in unknown_cookie_calls. The calibration probe is
 * known to all.
 */
void decoder__set_probes(struct decoder *d, __u32 nr);
/*
 * The processes the recording traced: the header's, and from then on every
 * record that names one the tracer knew (a fork, a mapping, a namespace pid, a
 * rank ...). Once told, a call of any other process is marked undescribed and
 * counted in unknown_process_calls: a damaged pid, never a process to analyse.
 */
void decoder__describe_process(struct decoder *d, __u32 tgid);
/*
 * The input skipped records that were counted elsewhere (a ring's missing
 * segment): each thread's call numbers start again from the next call seen.
 */
void decoder__renumber(struct decoder *d);
/* Whether and where the input was cut, what a set lacked: for the stats of who reads it. */
void decoder__note_input(struct decoder *d, bool cut, __u64 cut_at, __u64 ring_gaps,
			 __u64 gap_calls);
/*
 * Feed one record of any type; returns the callback's non-zero value or 0.
 * A call or return no newer, in its thread's numbering and in time, than the
 * thread's last of that kind is a record seen again: dropped and counted.
 */
int decoder__feed(struct decoder *d, const void *rec, size_t size);
/* End of input: open calls become unreturned, everything is handed on. */
int decoder__finish(struct decoder *d);
const struct decode_stats *decoder__stats(const struct decoder *d);
/* The stacks and call sites the calls' .stack name; the decoder owns them. */
const struct callstacks *decoder__callstacks(const struct decoder *d);
/* Each call entered whose return has not come yet: a sync or collective still blocking. */
void decoder__for_each_open(const struct decoder *d,
			    void (*fn)(void *ctx, const struct sp_call *call), void *ctx);
void decoder__free(struct decoder *d);
/* A calibration record of either size into *out (older ones have no stack_ps); 0 or -EBADMSG. */
int decoder__read_calib(const void *rec, size_t size, struct sp_calib_rec *out);

#endif /* __DECODE_H */
