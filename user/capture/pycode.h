/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Python code objects of a traced process, read into SP_REC_PYCODE records. */
#ifndef __PYCODE_H
#define __PYCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "specprobe.h"

#define PYCODE_STR_MAX	1024	/* bytes kept of a file or function name, NUL included */

/*
 * The code object at code in tgid (an interpreter pyprocs__add configured) as a
 * complete sp_pycode_rec in buf: its size, or -ENOENT (tgid unknown), -EFAULT
 * (unreadable), -EINVAL (not a code object), -ENOSPC (cap too small).
 * A line table longer than fits ends in an entry with line -1.
 */
int pycode__record(pid_t tgid, __u64 code, void *buf, size_t cap);

/*
 * Decode a line table of CPython 3.minor (co_linetable: the 3.10 format, or the
 * 3.11+ location table) into at most max entries, byte offsets, consecutive equal
 * lines merged: the number written, or -EINVAL for a malformed table. *complete
 * is false when max stopped it.
 */
int pycode__decode_lines(unsigned int minor, const __u8 *table, size_t len, int firstlineno,
			 struct sp_pyline *out, size_t max, bool *complete);

#endif /* __PYCODE_H */
