/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Python frames of the current thread, for SP_REC_STACK. This build reads
 * none: a process without a configured Python interpreter has no frames.
 */
#ifndef __PYSTACK_BPF_H
#define __PYSTACK_BPF_H

/* Fill out[0..max) innermost first; the number of frames written. */
static __always_inline __u32 py_stack_read(struct sp_py_frame *out, __u32 max)
{
	return 0;
}

#endif /* __PYSTACK_BPF_H */
