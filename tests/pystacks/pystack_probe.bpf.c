// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The Python stack reader alone on a uprobe: one record per hit, with its cost. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "specprobe.h"
#include "pystack.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* false: the record is written without the stack, to measure what the stack adds */
const volatile bool read_python = true;

struct pystack_probe_rec {
	__u32 tid;
	__u32 nr;
	__u64 cookie;		/* which entry point */
	__u64 read_ns;		/* time py_stack_read took */
	struct sp_py_frame frames[SP_STACK_PY];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} records SEC(".maps");

SEC("uprobe")
int pystack_hit(struct pt_regs *ctx)
{
	struct pystack_probe_rec *rec;
	__u64 start;

	if (!bpf_map_lookup_elem(&py_procs, &(__u32){ bpf_get_current_pid_tgid() >> 32 }))
		return 0;
	rec = bpf_ringbuf_reserve(&records, sizeof(*rec), 0);
	if (!rec)
		return 0;
	start = bpf_ktime_get_ns();
	rec->nr = read_python ? py_stack_read(rec->frames, SP_STACK_PY) : 0;
	rec->read_ns = bpf_ktime_get_ns() - start;
	rec->tid = (__u32)bpf_get_current_pid_tgid();
	rec->cookie = bpf_get_attach_cookie(ctx);
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);	/* the reader polls: no IPI per hit */
	return 0;
}
