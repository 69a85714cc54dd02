// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* This build reads no Python interpreter: code objects stay unnamed. */
#include <errno.h>
#include "pycode.h"

int pycode__record(pid_t tgid, __u64 code, void *buf, size_t cap)
{
	return -ENOSYS;
}
