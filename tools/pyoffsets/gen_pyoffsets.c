// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Prints one struct py_offsets initialiser for the CPython whose headers it is
 * compiled against (-I.../include/python3.X, Py_BUILD_CORE): offsetof() and
 * sizeof() from the interpreter's own structs, not numbers copied by hand.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#endif
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#if PY_VERSION_HEX < 0x030b0000
#include <frameobject.h>
#endif

#define OFF(type, field) ((unsigned int)offsetof(type, field))

/* The lowest bit a state bit field sets: bit fields have no offsetof(). */
static unsigned int state_bit(PyASCIIObject *obj)
{
	unsigned int word, bit;

	memcpy(&word, (char *)obj + offsetof(PyASCIIObject, state), sizeof(word));
	for (bit = 0; bit < 32; bit++)
		if (word & (1u << bit))
			return bit;
	return 0;
}

static void print_unicode(void)
{
	PyASCIIObject obj;

	printf("\t\t.unicode_length = %u,\n", OFF(PyASCIIObject, length));
	printf("\t\t.unicode_state = %u,\n", OFF(PyASCIIObject, state));
	printf("\t\t.unicode_ascii_size = %u,\n", (unsigned int)sizeof(PyASCIIObject));
	printf("\t\t.unicode_compact_size = %u,\n", (unsigned int)sizeof(PyCompactUnicodeObject));
	memset(&obj, 0, sizeof(obj));
	obj.state.kind = 1;
	printf("\t\t.unicode_kind_shift = %u,\n", state_bit(&obj));
	memset(&obj, 0, sizeof(obj));
	obj.state.compact = 1;
	printf("\t\t.unicode_compact_bit = %u,\n", state_bit(&obj));
	memset(&obj, 0, sizeof(obj));
	obj.state.ascii = 1;
	printf("\t\t.unicode_ascii_bit = %u,\n", state_bit(&obj));
}

static void print_threads(void)
{
	printf("\t\t.runtime_interp_head = %u,\n", OFF(_PyRuntimeState, interpreters.head));
	printf("\t\t.interp_next = %u,\n", OFF(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030b0000
	printf("\t\t.interp_threads_head = %u,\n", OFF(PyInterpreterState, threads.head));
	printf("\t\t.tstate_native_thread_id = %u,\n", OFF(PyThreadState, native_thread_id));
#else
	printf("\t\t.interp_threads_head = %u,\n", OFF(PyInterpreterState, tstate_head));
	printf("\t\t.tstate_native_thread_id = PYOFF_NONE,\n");
#endif
	printf("\t\t.tstate_next = %u,\n", OFF(PyThreadState, next));
	printf("\t\t.tstate_interp = %u,\n", OFF(PyThreadState, interp));
	printf("\t\t.tstate_thread_id = %u,\n", OFF(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030b0000
	printf("\t\t.tstate_datastack_chunk = %u,\n", OFF(PyThreadState, datastack_chunk));
	printf("\t\t.tstate_datastack_top = %u,\n", OFF(PyThreadState, datastack_top));
	printf("\t\t.chunk_data = %u,\n", OFF(_PyStackChunk, data));
#else
	printf("\t\t.tstate_datastack_chunk = PYOFF_NONE,\n");
	printf("\t\t.tstate_datastack_top = PYOFF_NONE,\n");
	printf("\t\t.chunk_data = PYOFF_NONE,\n");
#endif
#if PY_VERSION_HEX >= 0x030d0000
	printf("\t\t.tstate_frame = %u,\n", OFF(PyThreadState, current_frame));
	printf("\t\t.cframe_current_frame = PYOFF_NONE,\n");
#elif PY_VERSION_HEX >= 0x030b0000
	printf("\t\t.tstate_frame = %u,\n", OFF(PyThreadState, cframe));
	printf("\t\t.cframe_current_frame = %u,\n", OFF(_PyCFrame, current_frame));
#else
	printf("\t\t.tstate_frame = %u,\n", OFF(PyThreadState, frame));
	printf("\t\t.cframe_current_frame = PYOFF_NONE,\n");
#endif
}

static void print_frame(void)
{
#if PY_VERSION_HEX >= 0x030b0000
	printf("\t\t.frame_size = %u,\n", (unsigned int)sizeof(_PyInterpreterFrame));
	printf("\t\t.frame_previous = %u,\n", OFF(_PyInterpreterFrame, previous));
	printf("\t\t.frame_owner = %u,\n", OFF(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX >= 0x030d0000
	printf("\t\t.frame_code = %u,\n", OFF(_PyInterpreterFrame, f_executable));
	printf("\t\t.frame_instr = %u,\n", OFF(_PyInterpreterFrame, instr_ptr));
#else
	printf("\t\t.frame_code = %u,\n", OFF(_PyInterpreterFrame, f_code));
	printf("\t\t.frame_instr = %u,\n", OFF(_PyInterpreterFrame, prev_instr));
#endif
#if PY_VERSION_HEX >= 0x030c0000
	printf("\t\t.owner_cstack = %d,\n", (int)FRAME_OWNED_BY_CSTACK);
#else
	printf("\t\t.owner_cstack = -1,\n");
#endif
#else
	printf("\t\t.frame_size = %u,\n", (unsigned int)sizeof(PyFrameObject));
	printf("\t\t.frame_previous = %u,\n", OFF(PyFrameObject, f_back));
	printf("\t\t.frame_owner = PYOFF_NONE,\n");
	printf("\t\t.frame_code = %u,\n", OFF(PyFrameObject, f_code));
	printf("\t\t.frame_instr = %u,\n", OFF(PyFrameObject, f_lasti));
	printf("\t\t.owner_cstack = -1,\n");
#endif
}

static void print_code(void)
{
	printf("\t\t.code_filename = %u,\n", OFF(PyCodeObject, co_filename));
	printf("\t\t.code_name = %u,\n", OFF(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030b0000
	printf("\t\t.code_qualname = %u,\n", OFF(PyCodeObject, co_qualname));
	printf("\t\t.code_bytecode = %u,\n", OFF(PyCodeObject, co_code_adaptive));
#else
	printf("\t\t.code_qualname = PYOFF_NONE,\n");
	printf("\t\t.code_bytecode = %u,\n", OFF(PyCodeObject, co_code));
#endif
	printf("\t\t.code_firstlineno = %u,\n", OFF(PyCodeObject, co_firstlineno));
	printf("\t\t.code_linetable = %u,\n", OFF(PyCodeObject, co_linetable));
	printf("\t\t.object_type = %u,\n", OFF(PyObject, ob_type));
	printf("\t\t.type_name = %u,\n", OFF(PyTypeObject, tp_name));
	printf("\t\t.bytes_size = %u,\n", OFF(PyVarObject, ob_size));
	printf("\t\t.bytes_data = %u,\n", OFF(PyBytesObject, ob_sval));
}

int main(void)
{
	printf("\t{\n");
	printf("\t\t.major = %d, .minor = %d, .micro = %d,\n", PY_MAJOR_VERSION, PY_MINOR_VERSION,
	       PY_MICRO_VERSION);
	print_threads();
	print_frame();
	print_code();
	print_unicode();
	printf("\t},\n");
	return 0;
}
