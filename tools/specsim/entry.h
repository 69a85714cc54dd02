/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What every exported entry point of the look-alike libraries starts with. */
#ifndef __SPECSIM_ENTRY_H
#define __SPECSIM_ENTRY_H

#define SIM_EXPORT __attribute__((visibility("default")))

/*
 * gcc gives a function that needs no stack no frame, whatever the flags; asking
 * for the frame address forces push %rbp; mov %rsp,%rbp first, as in the real
 * libraries, so a uprobe hit is emulated instead of single-stepped.
 */
#define SIM_FRAME() __asm__ volatile("" : : "r"(__builtin_frame_address(0)))

#endif /* __SPECSIM_ENTRY_H */
