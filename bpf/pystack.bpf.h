/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The Python stack of the calling thread, read from CPython's own structures
 * with the offsets user space found for its interpreter (pyprocs.c): the
 * thread's PyThreadState is found by its id in the interpreters' thread lists,
 * then the frame chain is followed from the current frame outwards.
 * py_stack_read's out must have room for SP_STACK_PY frames.
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
	__u64 tstate;		/* next thread state to look at; 0: the next interpreter's */
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

/* Where a thread's PyThreadState was last found: a hint, checked before use. */
struct py_tstate_hint {
	__u64 runtime;		/* the interpreter it was found in */
	__u64 tstate;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);		/* tid */
	__type(value, struct py_tstate_hint);
} py_tstates SEC(".maps");

/*
 * The calling thread's PyThreadState, or 0. The list is newest first, so the
 * main thread of a process with many threads is found last: where it was found
 * before is kept, and used while that thread state still holds the thread's id.
 */
static __always_inline __u64 py_tstate_find(const struct sp_py_config *cfg)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid, tgid = pid_tgid >> 32;
	struct py_tstate_hint *hint = bpf_map_lookup_elem(&py_tstates, &tid);
	struct py_tstate_walk w = { .cfg = cfg, .id = py_thread_id(cfg) };
	struct py_tstate_hint found = { .runtime = cfg->runtime, .tgid = tgid };

	if (hint && hint->tgid == tgid && hint->runtime == cfg->runtime &&
	    py_read_ptr(hint->tstate + cfg->tstate_id) == w.id)
		return hint->tstate;
	w.interp = py_read_ptr(cfg->runtime + cfg->runtime_interp_head);
	bpf_loop(SP_PY_INTERPS * (SP_PY_THREADS + 1), py_tstate_step, &w, 0);
	if (w.found) {
		found.tstate = w.found;
		bpf_map_update_elem(&py_tstates, &tid, &found, BPF_ANY);
	}
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

/*
 * The top of the thread's frame data stack (3.11+), read at once: the frames of
 * most calls lie there, one after the other, and are then taken from this copy
 * instead of one read each.
 */
struct py_window {
	__u64 start;		/* address of data[0] */
	__u32 len;		/* bytes copied; 0: no window */
	__u32 pad;
	__u8 frame[SP_PY_FRAME_READ];	/* one frame read on its own (kept off the BPF stack) */
	__u8 data[SP_PY_WINDOW];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_window);
} py_window SEC(".maps");

/* Aligned offsets the verifier can bound: 8-byte loads from the window or a frame buffer. */
#define PY_WIN_MASK8	((SP_PY_WINDOW - 1) & ~7)
#define PY_WIN_MASK1	(SP_PY_WINDOW - 1)
#define PY_BUF_MASK8	((SP_PY_FRAME_READ - 1) & ~7)
#define PY_BUF_MASK4	((SP_PY_FRAME_READ - 1) & ~3)

static __always_inline void py_window_fill(const struct sp_py_config *cfg, __u64 tstate,
					   struct py_window *win)
{
	__u64 stack[2], base, start, len;	/* stack: datastack_chunk, datastack_top */

	win->len = 0;
	if (cfg->tstate_datastack == SP_PYOFF_NONE ||
	    bpf_probe_read_user(stack, sizeof(stack), (void *)(tstate + cfg->tstate_datastack)))
		return;
	base = stack[0] + cfg->chunk_data;
	if (!stack[0] || stack[1] <= base)
		return;
	start = stack[1] - base > SP_PY_WINDOW ? stack[1] - SP_PY_WINDOW : base;
	len = stack[1] - start;
	barrier_var(len);	/* the bound checked on the register passed */
	if (len == 0 || len > SP_PY_WINDOW)
		return;
	if (bpf_probe_read_user(win->data, len, (void *)start))
		return;
	win->start = start;
	win->len = len;
}

/* One frame's fields, from the window when it holds the whole frame. */
struct py_frame_fields {
	__u64 code;
	__u64 previous;
	__u64 instr;		/* f_lasti (sign-extended) or the instruction pointer */
	__u8 owner;
};

static __always_inline bool py_fields_from_window(const struct sp_py_config *cfg,
						  const struct py_window *win, __u64 frame,
						  struct py_frame_fields *f)
{
	__u64 off = frame - win->start;

	if (frame < win->start || off + cfg->frame_read > win->len)
		return false;
	f->code = *(__u64 *)(win->data + ((off + cfg->frame_code) & PY_WIN_MASK8));
	f->previous = *(__u64 *)(win->data + ((off + cfg->frame_previous) & PY_WIN_MASK8));
	f->instr = *(__u64 *)(win->data + ((off + cfg->frame_instr) & PY_WIN_MASK8));
	f->owner = win->data[(off + cfg->frame_owner) & PY_WIN_MASK1];
	return true;
}

static __always_inline bool py_fields_read(const struct sp_py_config *cfg, struct py_window *win,
					   __u64 frame, struct py_frame_fields *f)
{
	__u8 *buf = win->frame;
	__u32 len = cfg->frame_read;

	if (!len || len > SP_PY_FRAME_READ || bpf_probe_read_user(buf, len, (void *)frame))
		return false;
	f->code = *(__u64 *)(buf + (cfg->frame_code & PY_BUF_MASK8));
	f->previous = *(__u64 *)(buf + (cfg->frame_previous & PY_BUF_MASK8));
	if (cfg->instr_kind == SP_PY_INSTR_LASTI)
		f->instr = (__s64)*(__s32 *)(buf + (cfg->frame_instr & PY_BUF_MASK4));
	else
		f->instr = *(__u64 *)(buf + (cfg->frame_instr & PY_BUF_MASK8));
	f->owner = buf[cfg->frame_owner & (SP_PY_FRAME_READ - 1)];
	return true;
}

/* Byte offset of the frame's current instruction in its code's bytecode. */
static __always_inline __u32 py_frame_instr(const struct sp_py_config *cfg,
					    const struct py_frame_fields *f)
{
	__s64 off;

	if (cfg->instr_kind == SP_PY_INSTR_LASTI)
		off = (__s64)f->instr * 2;
	else
		off = (__s64)(f->instr - f->code - cfg->code_bytecode);
	return off < 0 || off > 0x7fffffff ? 0 : (__u32)off;
}

struct py_frame_walk {
	const struct sp_py_config *cfg;
	struct py_window *win;
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
	struct py_frame_fields f;

	if (!w->frame || w->n >= w->max)
		return 1;
	if (!py_fields_from_window(cfg, w->win, w->frame, &f) &&
	    !py_fields_read(cfg, w->win, w->frame, &f))
		return 1;
	if (cfg->frame_owner != SP_PYOFF_NONE && f.owner == cfg->owner_cstack)
		f.code = 0;
	if (f.code) {
		struct sp_py_frame *out = &w->out[w->n & (SP_STACK_PY - 1)];

		out->code = f.code;
		out->instr = py_frame_instr(cfg, &f);
		/*
		 * the innermost frame's place in the thread's frame stack: deeper
		 * call paths that end in the same frames (one model's code run
		 * from two generations) are told apart by it
		 */
		out->depth_mark = w->n ? 0 : (__u32)w->frame;
		w->n++;
	}
	w->frame = f.previous;
	return 0;
}

/* What a stack read fills: SP_STACK_PY frames, its size known to the verifier. */
struct py_stack_out {
	struct sp_py_frame frames[SP_STACK_PY];
};

/*
 * A global function: verified once on its own, not once per path of every
 * probe that calls it (its loops would make that too long for the verifier).
 */
__noinline __u32 py_stack_read_global(struct py_stack_out *out, __u32 max)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	struct sp_py_config *cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	struct py_window *win = bpf_map_lookup_elem(&py_window, &zero);
	struct py_frame_walk w = { .cfg = cfg, .win = win, .max = max };
	__u64 tstate;

	if (!out || !cfg || !win)
		return 0;
	w.out = out->frames;
	tstate = py_tstate_find(cfg);
	if (!tstate)
		return 0;
	w.frame = py_current_frame(cfg, tstate);
	/* a repeated call site's key takes a few frames: one read each, no window */
	win->len = 0;
	if (max > SP_STACK_KEY_PY)
		py_window_fill(cfg, tstate, win);
	/* Twice the frames kept: C-stack shims are walked past, not kept. */
	bpf_loop(2 * SP_STACK_PY, py_frame_step, &w, 0);
	return w.n;
}

/* out: room for SP_STACK_PY frames whatever max is. */
static __always_inline __u32 py_stack_read(struct sp_py_frame *out, __u32 max)
{
	return py_stack_read_global((struct py_stack_out *)out, max);
}

#endif /* __PYSTACK_BPF_H */
