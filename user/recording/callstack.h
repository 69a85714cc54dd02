/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Call sites: the checks of stack, code-object and mapping records, and the
 * reader's table of stacks, named from the recording's SP_REC_OBJMAP (ELF
 * symbols of the mapped file, when its build id matches) and SP_REC_PYCODE.
 */
#ifndef __CALLSTACK_H
#define __CALLSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "specprobe.h"

/* Well-formed records of their kind, size bytes (the header's size agrees). */
bool callstack__stack_ok(const struct sp_stack_rec *rec, size_t size);
bool callstack__pycode_ok(const struct sp_pycode_rec *rec, size_t size);
bool callstack__objmap_ok(const struct sp_objmap_rec *rec, size_t size);

static inline const __u64 *callstack__ips(const struct sp_stack_rec *rec)
{
	return (const __u64 *)(rec + 1);
}

static inline const struct sp_py_frame *callstack__py(const struct sp_stack_rec *rec)
{
	return (const struct sp_py_frame *)(callstack__ips(rec) + rec->nr_native);
}

/* Parts of a checked SP_REC_PYCODE. */
const char *callstack__pycode_file(const struct sp_pycode_rec *rec);
const char *callstack__pycode_name(const struct sp_pycode_rec *rec);
const struct sp_pyline *callstack__pycode_lines(const struct sp_pycode_rec *rec);
/* The line the instruction at byte offset instr belongs to; -1 when the table has none. */
int callstack__pycode_line(const struct sp_pycode_rec *rec, __u32 instr);

/* One native frame: a return address, innermost first. */
struct cs_native {
	__u64 addr;
	const char *object;	/* the mapped file's path; NULL: no mapping named it */
	const char *symbol;	/* NULL: unsymbolised, offset is then into the object's file */
	__u64 offset;		/* from the symbol's start (or the file's) to addr */
};

struct cs_python {
	__u64 code;
	__u32 instr;
	const char *file;	/* NULL: the code object was not read */
	const char *function;
	int line;		/* -1: unknown */
};

struct cs_stack {
	__u32 tgid;
	__u32 nr_native, nr_py;
	struct cs_native *native;
	struct cs_python *py;
	__u32 site;		/* index + 1 into the sites */
	__u32 image;		/* execve calls of tgid before it: the program it names */
};

/* Where a call was made: the innermost Python line and the innermost native caller. */
struct cs_site {
	const struct cs_python *py;	/* innermost named Python frame; NULL: none */
	const struct cs_native *native;	/* innermost outside libcuda/libnccl; NULL: none */
	char *label;		/* "file:line (function) · symbol+0x.. (object)" */
};

struct callstacks;

struct callstacks *callstacks__new(void);
/* Take an SP_REC_OBJMAP or SP_REC_PYCODE (other kinds are left alone); 0, -EBADMSG, -ENOMEM. */
int callstacks__feed(struct callstacks *db, const void *rec, size_t size);
/* tgid ran execve (SP_REC_EXEC): its later stacks are named by the records that follow. */
int callstacks__exec(struct callstacks *db, __u32 tgid);
/* The id (1...) of a checked stack record's stack, named now; 0 when out of memory. */
__u32 callstacks__intern(struct callstacks *db, const struct sp_stack_rec *rec);
/* NULL for id 0 or an unknown id. */
const struct cs_stack *callstacks__stack(const struct callstacks *db, __u32 id);
const struct cs_site *callstacks__site(const struct callstacks *db, __u32 site);
__u32 callstacks__nr_sites(const struct callstacks *db);
void callstacks__free(struct callstacks *db);

#endif /* __CALLSTACK_H */
