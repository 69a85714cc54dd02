/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* uprobe_multi links (kernel 6.6+), which libbpf 1.1 predates: made with BPF_LINK_CREATE. */
#ifndef __MULTILINK_H
#define __MULTILINK_H

#include <stdbool.h>
#include <linux/types.h>

/* From the kernel's uapi: enum bpf_attach_type, for a program's expected attach type. */
#define UPROBE_MULTI_ATTACH 48	/* BPF_TRACE_UPROBE_MULTI */
#define UPROBE_SESSION_ATTACH 57	/* BPF_TRACE_UPROBE_SESSION (6.13+) */

enum multilink_kind {
	MULTILINK_ENTRY,
	MULTILINK_RETURN,
	MULTILINK_SESSION,	/* entry and return: the entry's 1 leaves the return out */
};

/*
 * One link of prog_fd at cnt offsets of the file at path, in every process (no pid);
 * cookies may be NULL. A session program must have been loaded for
 * UPROBE_SESSION_ATTACH. The link's fd, or -errno.
 */
int multilink__create(int prog_fd, const char *path, const __u64 *offsets,
		      const __u64 *cookies, __u32 cnt, enum multilink_kind kind);

#endif /* __MULTILINK_H */
