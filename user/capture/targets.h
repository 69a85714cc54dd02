/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Traced processes and the CUDA/NCCL libraries they map (from /proc). */
#ifndef __TARGETS_H
#define __TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "catalog.h"
#include "tracefile.h"

struct target_lib {
	char *path;		/* as the target's /proc/PID/maps names it */
	char *open_path;	/* a path that reaches the same file from here */
	int fd;			/* O_PATH to the file, behind open_path; -1 when none */
	__u64 dev;
	__u64 ino;
	enum sp_lib kind;
};

struct targets {
	__u32 *tgids;		/* requested pids and their descendants */
	int nr_tgids;
	struct target_lib *libs;	/* unique by (dev, ino) */
	int nr_libs;
	struct tf_map *maps;	/* every mapping of those libraries, .lib indexes libs */
	int nr_maps;
	int maps_ever;		/* mappings ever listed, those of exited processes included */
	struct target_lib *loaders;	/* dynamic loaders the processes run, unique files */
	int nr_loaders;
};

/* Library kind from a path's basename, or -1. */
int targets__lib_kind(const char *path);
/*
 * Collect pids, their descendants and the libraries they map. Fails with a
 * one-line reason when a pid does not exist, or when nothing maps a CUDA
 * library unless may_wait (libraries will be caught when they are mapped).
 */
int targets__discover(const int *pids, int nr_pids, bool may_wait, struct targets *t, char *err,
		      size_t err_sz);
/*
 * Add the CUDA/NCCL libraries, their mappings and the dynamic loader of one
 * process (new ones only); 0 or -errno.
 */
int targets__scan(struct targets *t, __u32 tgid);
/* Index of the library with this stat() identity, or -1. */
int targets__find_lib(const struct targets *t, __u64 dev, __u64 ino);
/* A forked child maps what its parent mapped: copy the parent's mappings; 0 or -ENOMEM. */
int targets__inherit_maps(struct targets *t, __u32 parent, __u32 child);
/* Add every live descendant of the listed tgids; 0 or -errno. */
int targets__add_descendants(struct targets *t);
/* Follow one more process (a traced process forked it); 0 or -ENOMEM. */
int targets__add_tgid(struct targets *t, __u32 tgid);
/*
 * A process exited: drop it and its mappings (keeping the order of the rest).
 * *maps_mark, an index into maps, moves back by the mappings removed before it.
 * The index tgid had, or -1 if it was not listed.
 */
int targets__remove_tgid(struct targets *t, __u32 tgid, int *maps_mark);
/* Add one library file given by path (--lib); 0 or -errno. */
int targets__add_lib_file(struct targets *t, const char *path, char *err, size_t err_sz);
/* Process state letter of /proc/PID/stat (R, S, T, Z...); false if gone. */
bool targets__read_state(__u32 tgid, char *state);
/* utime + stime of a process so far, in ns (clock-tick resolution); false if gone. */
bool targets__cpu_ns(__u32 tgid, __u64 *cpu_ns);
typedef int (*hostmem_fn)(void *ctx, __u64 start, __u64 end, __u32 kind);
/* Each writable mapping of tgid with its enum sp_hostmem_kind; 0 or fn's first error. */
int targets__host_mappings(__u32 tgid, hostmem_fn fn, void *ctx);
/* Each executable mapping of tgid, in address order (path "" when anonymous); 0 or fn's error. */
typedef int (*exec_map_fn)(void *ctx, __u64 start, __u64 end, __u64 pgoff, const char *path);
int targets__exec_mappings(__u32 tgid, exec_map_fn fn, void *ctx);
/* The pid a process has in its own pid namespace, 0 if it is the host's or unknown. */
__u32 targets__ns_pid(__u32 tgid);
/*
 * How long each thread of tgid has waited for a CPU so far (schedstat's second
 * field), as SP_REC_RUNQ records of SP_RUNQ_MARK read at ts into out[room]: how many.
 */
int targets__runq_delays(__u32 tgid, __u64 ts, struct sp_runq_rec *out, int room);
/* Is tgid still alive (not gone, not a zombie)? */
bool targets__alive(__u32 tgid);
void targets__free(struct targets *t);

#endif /* __TARGETS_H */
