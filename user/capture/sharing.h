/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Tracers on one process record on their own, each every call; a tracer only
 * says it is not alone. Each holds a shared flock on /run/specprobe/pid.N for
 * the processes it traces; one that cannot first take it alone has company.
 * The last one out removes the file; those of tracers killed before that (no
 * lock held on them) are removed by the next tracer that marks.
 */
#ifndef __SHARING_H
#define __SHARING_H

#include <linux/types.h>

struct sharing_mark {
	int fd;
	__u32 tgid;
};

struct sharing {
	struct sharing_mark *marks;
	int nr;
	int dir_fd;	/* /run/specprobe, held while marks are */
};

/* Marks tgids[0..n) as traced by us; a line for each one another tracer marked. */
void sharing__mark(struct sharing *s, const __u32 *tgids, int n);
/* Drops the marks (and the files no other tracer holds). */
void sharing__release(struct sharing *s);

#endif /* __SHARING_H */
