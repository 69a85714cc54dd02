/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The probe catalogue: every entry point specprobe attaches to, and how to read it. */
#ifndef __CATALOG_H
#define __CATALOG_H

#include <stdbool.h>
#include <linux/types.h>
#include "specprobe.h"

enum sp_lib {
	SP_LIB_CUDA = 0,	/* libcuda.so* */
	SP_LIB_NCCL = 1,	/* libnccl.so* */
	SP_LIB_NR,
};

enum sp_class {
	SP_CLASS_LAUNCH,
	SP_CLASS_GRAPH,
	SP_CLASS_SYNC,
	SP_CLASS_POLL,
	SP_CLASS_COPY,
	SP_CLASS_PINNED,
	SP_CLASS_MEMORY,
	SP_CLASS_EVENT,
	SP_CLASS_NAMES,
	SP_CLASS_LIFECYCLE,
	SP_CLASS_NCCL,
	SP_CLASS_DRIVER,	/* cuGetProcAddress: where driver pointers come from */
	SP_CLASS_NR,
};

/* How a dereferenced argument is decoded. */
enum sp_data_kind {
	SP_DATA_NONE,
	SP_DATA_LAUNCH_CONFIG,	/* CUlaunchConfig */
	SP_DATA_STRING,
};

struct catalog_entry {
	const char *name;	/* base name, without _v2/_ptsz/... */
	enum sp_lib lib;
	enum sp_class cls;
	bool completion;	/* entry + completion kind */
	bool wake;		/* blocking: wake the reader at entry */
	/*
	 * Arguments in call order, comma separated, each "name:fmt" with fmt
	 * h (hex handle or pointer), z (64-bit size), u (32-bit unsigned), d (32-bit signed), or "-" to skip
	 * a position. Positions 7..9 are read from the stack.
	 */
	const char *args;
	__u8 data_arg;		/* SP_NO_ARG or argument index (0-based) */
	enum sp_data_kind data_kind;
	__u8 out_arg;		/* SP_NO_ARG or argument index of an output pointer */
	const char *out_name;	/* JSON name of the value read through out_arg */
};

extern const struct catalog_entry catalog[];
extern const int catalog_len;

/* Entry for an exported symbol, accepting variants (_v2, _ptsz, pnccl...). NULL if none. */
const struct catalog_entry *catalog__match(const char *symbol, enum sp_lib lib);
/* Exact base-name lookup. */
const struct catalog_entry *catalog__find(const char *base);
/* Fill the BPF spec for an entry. */
void catalog__spec(const struct catalog_entry *e, struct sp_probe_spec *spec);
/*
 * Are call sites recorded for this entry by default? Blocking and implicitly
 * synchronising calls: syncs, queries, copies that may touch host memory,
 * alloc and free that may synchronise, NCCL's blocking communicator calls.
 * Launches and other calls that return at once are not.
 */
bool catalog__stack_default(const struct catalog_entry *e);
enum sp_stack_pick catalog__stack_pick(const struct catalog_entry *e);
/* Number of argument positions the entry declares (0..SP_MAX_ARGS). */
int catalog__nargs(const struct catalog_entry *e);
/* Name and format of argument i; false if that position is skipped or absent. */
bool catalog__arg(const struct catalog_entry *e, int i, char *name, size_t name_sz, char *fmt);
/* Position of the first argument named one of names (NULL-terminated), or SP_NO_ARG. */
int catalog__arg_index(const struct catalog_entry *e, const char *const *names);
const char *catalog__class_name(enum sp_class cls);

#endif /* __CATALOG_H */
