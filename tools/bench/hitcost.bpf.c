// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A ladder of uprobe programs for tools/bench/hitcost: each adds one step of
 * the entry path to the one before, so the differences in ns per call split a
 * probe hit into its parts. The first two are the bare trap: nothing, and a
 * per-CPU counter (what a minimal counting tool attaches).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "specprobe.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} traced SEC(".maps");

struct ladder_thread {
	__u32 next_seq;
	__u32 depth;
	__u64 frames[4 * SP_MAX_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct ladder_thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ladder_thread);
} task_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 26);
} ring SEC(".maps");

static __always_inline void count(void)
{
	__u32 zero = 0;
	__u64 *val = bpf_map_lookup_elem(&hits, &zero);

	if (val)
		*val += 1;
}

static __always_inline bool filter(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return bpf_map_lookup_elem(&traced, &tgid) != NULL;
}

SEC("uprobe")
int BPF_KPROBE(step_empty)
{
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(step_count)
{
	count();
	return 0;
}

/* The traced-process filter: one hash lookup. */
SEC("uprobe")
int BPF_KPROBE(step_filter)
{
	if (filter())
		count();
	return 0;
}

/* Traced tgids as bits: the filter as specprobe makes it now. */
__u64 traced_bits[SP_PID_LIMIT / 64];

SEC("uprobe")
int BPF_KPROBE(step_filter_bits)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, w = tgid / 64;

	barrier_var(w);
	if (traced_bits[w & (SP_PID_LIMIT / 64 - 1)] & (1ULL << (tgid & 63)))
		count();
	return 0;
}

/* Filter, then the thread's state from a hash keyed by tid. */
SEC("uprobe")
int BPF_KPROBE(step_thread_hash)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ladder_thread *ts;

	if (!filter())
		return 0;
	ts = bpf_map_lookup_elem(&threads, &tid);
	if (!ts) {
		struct ladder_thread empty = {};

		bpf_map_update_elem(&threads, &tid, &empty, BPF_NOEXIST);
		ts = bpf_map_lookup_elem(&threads, &tid);
	}
	if (ts)
		ts->next_seq++;
	return 0;
}

/* Filter, then the thread's state from task-local storage. */
SEC("uprobe")
int BPF_KPROBE(step_thread_task)
{
	struct ladder_thread *ts;

	if (!filter())
		return 0;
	ts = bpf_task_storage_get(&task_threads, bpf_get_current_task_btf(), NULL,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ts)
		ts->next_seq++;
	return 0;
}

/* Filter and a timestamp. */
SEC("uprobe")
int BPF_KPROBE(step_ktime)
{
	__u64 *val, now;
	__u32 zero = 0;

	if (!filter())
		return 0;
	now = bpf_ktime_get_ns();
	val = bpf_map_lookup_elem(&hits, &zero);
	if (val)
		*val += now & 1;
	return 0;
}

/* Filter, a timestamp and a call record reserved, filled and submitted without wakeup. */
SEC("uprobe")
int BPF_KPROBE(step_ring)
{
	struct sp_call_rec *rec;

	if (!filter())
		return 0;
	rec = bpf_ringbuf_reserve(&ring, sizeof(*rec), 0);
	if (!rec)
		return 0;
	__builtin_memset(rec, 0, sizeof(*rec));
	rec->type = SP_REC_CALL;
	rec->size = sizeof(*rec);
	rec->ts = bpf_ktime_get_ns();
	rec->args[0] = ctx->di;
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return 0;
}

/* Filter and one user-memory read: the return address and three stack arguments. */
SEC("uprobe")
int BPF_KPROBE(step_stack)
{
	__u64 words[1 + SP_STACK_ARGS];
	__u64 *val;
	__u32 zero = 0;

	if (!filter())
		return 0;
	if (bpf_probe_read_user(words, sizeof(words), (void *)ctx->sp))
		return 0;
	val = bpf_map_lookup_elem(&hits, &zero);
	if (val)
		*val += words[0] & 1;
	return 0;
}

/* A return probe that does nothing: attached with step_count, it gives the return trap. */
SEC("uretprobe")
int BPF_KRETPROBE(step_ret_empty)
{
	return 0;
}

/* Filter and a reservation given back at once: the ring's lock and positions alone. */
SEC("uprobe")
int BPF_KPROBE(step_ring_discard)
{
	void *rec;

	if (!filter())
		return 0;
	rec = bpf_ringbuf_reserve(&ring, sizeof(struct sp_call_rec), 0);
	if (rec)
		bpf_ringbuf_discard(rec, BPF_RB_NO_WAKEUP);
	return 0;
}

/* Filter and a 16-byte record: what the ring costs apart from the bytes written. */
SEC("uprobe")
int BPF_KPROBE(step_ring_small)
{
	__u64 *rec;

	if (!filter())
		return 0;
	rec = bpf_ringbuf_reserve(&ring, 16, 0);
	if (!rec)
		return 0;
	rec[0] = SP_REC_CALL;
	rec[1] = ctx->di;
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return 0;
}

/* Filter and a 56-byte record: with the ring's 8-byte header, one cache line per record. */
SEC("uprobe")
int BPF_KPROBE(step_ring_line)
{
	__u64 *rec;

	if (!filter())
		return 0;
	rec = bpf_ringbuf_reserve(&ring, 56, 0);
	if (!rec)
		return 0;
	__builtin_memset(rec, 0, 56);
	rec[0] = SP_REC_CALL;
	rec[1] = ctx->di;
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return 0;
}
