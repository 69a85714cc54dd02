/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Where the Python stack reader finds a process's frames (pystack.bpf.h, pyprocs.c). */
#ifndef __PYSTACK_H
#define __PYSTACK_H

#define SP_PY_PROCS	1024	/* processes with a Python interpreter configured */
#define SP_PY_INTERPS	4	/* interpreters searched for the calling thread */
#define SP_PY_THREADS	256	/* thread states searched per interpreter */
#define SP_PY_FRAME_READ	128	/* most bytes of one frame read (through its last field) */
#define SP_PYOFF_NONE	0xffff	/* no such field in this version */
/* Bytes of the thread's frame data stack below its top read at once (3.11+). */
#define SP_PY_WINDOW	8192

enum sp_py_id_kind {
	SP_PY_ID_TID = 0,	/* tstate holds the thread's tid (native_thread_id, 3.11+) */
	SP_PY_ID_FSBASE = 1,	/* it holds pthread_self(): the fs base on x86-64 glibc (3.10) */
};

enum sp_py_instr_kind {
	SP_PY_INSTR_LASTI = 0,	/* an int: index of the last instruction, in 2-byte units */
	SP_PY_INSTR_PTR = 1,	/* a pointer into the code object's inline bytecode */
};

/* One traced process's interpreter: the value of the py_procs map, keyed by tgid. */
struct sp_py_config {
	__u64 runtime;			/* address of _PyRuntime in the process */
	__u32 version;			/* PY_VERSION_HEX */
	__u16 runtime_interp_head;	/* _PyRuntime.interpreters.head */
	__u16 interp_next;
	__u16 interp_threads_head;
	__u16 tstate_next;
	__u16 tstate_id;		/* native_thread_id or thread_id, as id_kind says */
	__u16 tstate_frame;		/* frame (3.10), cframe (3.11, 3.12), current_frame */
	__u16 cframe_current_frame;	/* SP_PYOFF_NONE: tstate_frame points at the frame */
	__u16 frame_previous;
	__u16 frame_code;
	__u16 frame_instr;
	__u16 frame_owner;		/* SP_PYOFF_NONE: no owner field */
	__u16 frame_read;		/* bytes of a frame read at once, <= SP_PY_FRAME_READ */
	__u16 code_bytecode;		/* offset of the inline bytecode (SP_PY_INSTR_PTR) */
	__u16 tstate_datastack;		/* datastack_chunk, datastack_top after it; or NONE */
	__u16 chunk_data;		/* offset of a _PyStackChunk's frames */
	__u16 pad16;
	__u8 id_kind;
	__u8 instr_kind;
	__u8 owner_cstack;		/* owner value of C-stack shim frames; 0xff: none */
	__u8 pad[5];
};

#endif /* __PYSTACK_H */
