// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include "multilink.h"

#define UPROBE_MULTI_RETURN 1	/* BPF_F_UPROBE_MULTI_RETURN */

/* BPF_LINK_CREATE for uprobe_multi, laid out as the kernel's bpf_attr. */
struct uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u32 pad;
};

int multilink__create(int prog_fd, const char *path, const __u64 *offsets,
		      const __u64 *cookies, __u32 cnt, enum multilink_kind kind)
{
	struct uprobe_multi_attr attr = {
		.prog_fd = prog_fd,
		.attach_type = kind == MULTILINK_SESSION ? UPROBE_SESSION_ATTACH
							 : UPROBE_MULTI_ATTACH,
		.path = (unsigned long)path,
		.offsets = (unsigned long)offsets,
		.cookies = (unsigned long)cookies,
		.cnt = cnt,
		.multi_flags = kind == MULTILINK_RETURN ? UPROBE_MULTI_RETURN : 0,
	};
	int fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));

	return fd < 0 ? -errno : fd;
}
