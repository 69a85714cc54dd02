/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Python interpreters of traced processes: which CPython, where its _PyRuntime
 * is and the offsets of its structures, written into the BPF stack reader's map
 * (py_procs) and kept for naming code objects (pycode.c).
 */
#ifndef __PYPROCS_H
#define __PYPROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pyoffsets.h"
#include "pystack.h"

struct py_proc {
	pid_t tgid;
	unsigned int version;		/* PY_VERSION_HEX, or 3.minor from the file name */
	__u64 runtime;			/* address of _PyRuntime */
	bool debug_offsets;		/* offsets read from _Py_DebugOffsets (3.13) */
	char path[256];			/* the file that defines _PyRuntime */
	struct py_offsets off;
};

/*
 * Find tgid's interpreter and its offsets into proc: 0, -ENOENT when the process
 * has no CPython mapped, -EPROTONOSUPPORT for a version not known here, or -errno;
 * err says why.
 */
int pyprocs__probe(pid_t tgid, struct py_proc *proc, char *err, size_t err_sz);
/* The BPF reader's view of proc: -E2BIG when an offset does not fit. */
int pyprocs__config(const struct py_proc *proc, struct sp_py_config *cfg);
/* Probe tgid, write its config into map_fd (py_procs) and keep it: 0 or -errno. */
int pyprocs__add(int map_fd, pid_t tgid);
/* The interpreter pyprocs__add kept for tgid, or NULL. */
const struct py_proc *pyprocs__find(pid_t tgid);
void pyprocs__remove(int map_fd, pid_t tgid);
/* len bytes of tgid's memory at addr: 0 or -errno (-EFAULT for a short read). */
int pyprocs__read(pid_t tgid, __u64 addr, void *buf, size_t len);

#endif /* __PYPROCS_H */
