/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The Python stack of the calling thread, read from CPython's own structures
 * with the offsets user space found for its interpreter (pyprocs.c): the
 * thread's PyThreadState is found by its id in the interpreters' thread lists,
 * then the frame chain is followed from the current frame outwards.
 */
#ifndef __PYSTACK_BPF_H
#define __PYSTACK_BPF_H

#include "pystack.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_PY_PROCS);
	__type(key, __u32);		/* tgid */
	__type(value, struct sp_py_config);
} py_procs SEC(".maps");

static __always_inline __u64 py_read_ptr(__u64 addr)
{
	__u64 val;

	if (bpf_probe_read_user(&val, sizeof(val), (void *)addr))
		return 0;
	return val;
}

/* The id CPython keeps for the current thread, as this version stores it. */
static __always_inline __u64 py_thread_id(const struct sp_py_config *cfg)
{
	struct task_struct *task;

	if (cfg->id_kind == SP_PY_ID_TID)
		return (__u32)bpf_get_current_pid_tgid();
	task = bpf_get_current_task_btf();
	return task->thread.fsbase;
}

struct py_tstate_walk {
	const struct sp_py_config *cfg;
	__u64 id;
	__u64 interp;
	__u64 tstate;		/* the next thread state to look at; 0: go to the next interpreter */
	__u64 found;
	bool started;		/* the first interpreter's list has been entered */
};

/*
 * One step through the interpreters' thread lists (a bpf_loop callback: no
 * counters compared with constants, so the verifier's states converge).
 */
static long py_tstate_step(__u64 index, void *data)
{
	struct py_tstate_walk *w = data;
	const struct sp_py_config *cfg = w->cfg;

	if (!w->tstate) {
		if (w->started)
			w->interp = py_read_ptr(w->interp + cfg->interp_next);
		if (!w->interp)
			return 1;
		w->started = true;
		w->tstate = py_read_ptr(w->interp + cfg->interp_threads_head);
		return 0;
	}
	if (py_read_ptr(w->tstate + cfg->tstate_id) == w->id) {
		w->found = w->tstate;
		return 1;
	}
	w->tstate = py_read_ptr(w->tstate + cfg->tstate_next);
	return 0;
}

/* The calling thread's PyThreadState, or 0. */
static __always_inline __u64 py_tstate_find(const struct sp_py_config *cfg)
{
	struct py_tstate_walk w = {
		.cfg = cfg,
		.id = py_thread_id(cfg),
		.interp = py_read_ptr(cfg->runtime + cfg->runtime_interp_head),
	};

	bpf_loop(SP_PY_INTERPS * (SP_PY_THREADS + 1), py_tstate_step, &w, 0);
	return w.found;
}

/* The thread's innermost frame (a PyFrameObject in 3.10, else an interpreter frame). */
static __always_inline __u64 py_current_frame(const struct sp_py_config *cfg, __u64 tstate)
{
	__u64 frame = py_read_ptr(tstate + cfg->tstate_frame);

	if (frame && cfg->cframe_current_frame != SP_PYOFF_NONE)
		frame = py_read_ptr(frame + cfg->cframe_current_frame);
	return frame;
}

/* Pointer fields are 8-aligned and the buffer 128 bytes: masks the verifier can follow. */
#define PY_FIELD64(buf, off) (*(__u64 *)((buf) + ((off) & 0x78)))
#define PY_FIELD32(buf, off) (*(__s32 *)((buf) + ((off) & 0x7c)))

/* Byte offset of the frame's current instruction in its code's bytecode. */
static __always_inline __u32 py_frame_instr(const struct sp_py_config *cfg, const __u8 *buf,
					    __u64 code)
{
	__s64 off;

	if (cfg->instr_kind == SP_PY_INSTR_LASTI) {
		off = (__s64)PY_FIELD32(buf, cfg->frame_instr) * 2;
	} else {
		off = (__s64)(PY_FIELD64(buf, cfg->frame_instr) - code - cfg->code_bytecode);
	}
	return off < 0 || off > 0x7fffffff ? 0 : (__u32)off;
}

struct py_frame_walk {
	const struct sp_py_config *cfg;
	struct sp_py_frame *out;
	__u64 frame;
	__u32 n;
	__u32 max;
};

/* One frame: kept unless it is a C-stack shim; then on to its caller. */
static long py_frame_step(__u64 index, void *data)
{
	struct py_frame_walk *w = data;
	const struct sp_py_config *cfg = w->cfg;
	__u8 buf[SP_PY_FRAME_READ] = {};
	__u32 len = cfg->frame_read;
	__u64 code;

	if (!w->frame || w->n >= w->max || !len || len > SP_PY_FRAME_READ)
		return 1;
	if (bpf_probe_read_user(buf, len, (void *)w->frame))
		return 1;
	code = PY_FIELD64(buf, cfg->frame_code);
	if (cfg->frame_owner != SP_PYOFF_NONE &&
	    buf[cfg->frame_owner & (SP_PY_FRAME_READ - 1)] == cfg->owner_cstack)
		code = 0;
	if (code) {
		struct sp_py_frame *f = &w->out[w->n & (SP_STACK_PY - 1)];

		f->code = code;
		f->instr = py_frame_instr(cfg, buf, code);
		f->pad = 0;
		w->n++;
	}
	w->frame = PY_FIELD64(buf, cfg->frame_previous);
	return 0;
}

static __always_inline __u32 py_stack_read(struct sp_py_frame *out, __u32 max)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sp_py_config *cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	struct py_frame_walk w = { .cfg = cfg, .out = out, .max = max };
	__u64 tstate;

	if (!cfg)
		return 0;
	tstate = py_tstate_find(cfg);
	if (!tstate)
		return 0;
	w.frame = py_current_frame(cfg, tstate);
	/* Twice the frames kept: C-stack shims are walked past, not kept. */
	bpf_loop(2 * SP_STACK_PY, py_frame_step, &w, 0);
	return w.n;
}

#endif /* __PYSTACK_BPF_H */
