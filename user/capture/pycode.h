/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Python code objects of a traced process, read from its memory for SP_REC_PYCODE. */
#ifndef __PYCODE_H
#define __PYCODE_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

/*
 * A complete struct sp_pycode_rec for the code object at code in tgid,
 * written to buf (cap bytes): its size in bytes, or a negative errno.
 */
int pycode__record(pid_t tgid, __u64 code, void *buf, size_t cap);

#endif /* __PYCODE_H */
