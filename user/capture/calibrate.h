/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What one probe hit costs on this host: the same BPF programs attached to a
 * function of specprobe itself that starts like a driver entry point
 * (push %rbp; mov %rsp,%rbp), timed without, with an entry probe and with a
 * return probe as well.
 */
#ifndef __CALIBRATE_H
#define __CALIBRATE_H

#include <linux/types.h>

struct calibration {
	__u32 calls;
	__u64 entry_ps;		/* added by an entry probe, per call */
	__u64 return_ps;	/* added by the return probe on top */
	__u64 stack_ps;		/* added by a repeated call site's native stack, on top */
};

/* The probed function and where it lies in its file; 0 or -errno. */
int calibrate__target(char *path, size_t path_sz, __u64 *offset);
/* Call the target calls times and return the ns that took. */
__u64 calibrate__time_calls(__u32 calls);

#endif /* __CALIBRATE_H */
