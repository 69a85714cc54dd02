/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Where CPython keeps what a stack walk and a code object reader need, per minor
 * version. Versions without _Py_DebugOffsets take them from pyoffsets_table.h,
 * generated from each version's own headers (tools/pyoffsets/gen.sh).
 */
#ifndef __PYOFFSETS_H
#define __PYOFFSETS_H

#define PYOFF_NONE	0xffff	/* the version has no such field */

struct py_offsets {
	unsigned int major, minor, micro;	/* the headers these came from */
	/* _PyRuntimeState, PyInterpreterState, PyThreadState */
	unsigned int runtime_interp_head;
	unsigned int interp_next;
	unsigned int interp_threads_head;
	unsigned int tstate_next;
	unsigned int tstate_interp;		/* checked against the list it is in */
	unsigned int tstate_thread_id;		/* pthread_self() of the thread */
	unsigned int tstate_native_thread_id;	/* its tid; PYOFF_NONE before 3.11 */
	unsigned int tstate_frame;		/* frame (3.10), cframe (3.11/12), current_frame */
	unsigned int cframe_current_frame;	/* in _PyCFrame; PYOFF_NONE where no cframe */
	unsigned int tstate_datastack_chunk;	/* frames' data stack (3.11+), else PYOFF_NONE */
	unsigned int tstate_datastack_top;
	unsigned int chunk_data;		/* where a _PyStackChunk's frames start */
	/* PyFrameObject (3.10) or _PyInterpreterFrame */
	unsigned int frame_size;
	unsigned int frame_previous;
	unsigned int frame_code;
	unsigned int frame_instr;		/* f_lasti (int, code units), else a pointer */
	unsigned int frame_owner;		/* PYOFF_NONE in 3.10 */
	int owner_cstack;			/* FRAME_OWNED_BY_CSTACK, -1 where none */
	/* PyCodeObject */
	unsigned int code_filename;
	unsigned int code_name;
	unsigned int code_qualname;		/* PYOFF_NONE in 3.10 */
	unsigned int code_firstlineno;
	unsigned int code_linetable;
	unsigned int code_bytecode;		/* co_code_adaptive (inline), or co_code (bytes) */
	/* objects */
	unsigned int object_type;
	unsigned int type_name;
	unsigned int bytes_size;
	unsigned int bytes_data;
	unsigned int unicode_length;
	unsigned int unicode_state;
	unsigned int unicode_ascii_size;	/* sizeof(PyASCIIObject): where ASCII data starts */
	unsigned int unicode_compact_size;	/* sizeof(PyCompactUnicodeObject) */
	unsigned int unicode_kind_shift;	/* state bit fields, found from the headers too */
	unsigned int unicode_compact_bit;
	unsigned int unicode_ascii_bit;
};

/* The generated table for minor (3.minor), or NULL. */
const struct py_offsets *py_offsets__table(unsigned int minor);

#endif /* __PYOFFSETS_H */
