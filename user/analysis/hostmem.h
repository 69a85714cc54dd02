/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Host memory of one process: is a copy's host pointer pinned or pageable?
 * From the allocations the probes saw (cuMemHostAlloc, cuMemHostRegister), the
 * mappings read at attach (docs/host-memory.md), and whether the process was
 * traced from its context's creation.
 */
#ifndef __HOSTMEM_H
#define __HOSTMEM_H

#include <stdbool.h>
#include <linux/types.h>

enum host_kind {
	HOST_UNKNOWN,
	HOST_PINNED,
	HOST_PAGEABLE,
	HOST_KIND_NR,
};

/* What told the kind. */
enum host_from {
	HOST_FROM_NONE,
	HOST_FROM_TRACED,	/* the allocation was seen, or every one would have been */
	HOST_FROM_MAPS,		/* the mapping at attach: the driver's shared memory */
	HOST_FROM_AFTER_ATTACH,	/* mapped after attach and never registered */
	HOST_FROM_MEASURED,	/* the copy's blocked time showed that it waited */
	HOST_FROM_NR,
};

struct host_range {
	__u64 start, end;
	__u32 kind;		/* enum sp_hostmem_kind; 0 for a range the probes saw pinned */
};

struct host_ranges {
	struct host_range *pinned;	/* seen allocated or registered while traced */
	__u32 nr_pinned, cap_pinned;
	struct host_range *mapped;	/* writable mappings at attach, by start */
	__u32 nr_mapped, cap_mapped;
	bool mapped_read;		/* a snapshot of the mappings came */
};

struct host_class {
	enum host_kind kind;
	enum host_from from;
};

int hostmem__pin(struct host_ranges *h, __u64 start, __u64 bytes);
void hostmem__unpin(struct host_ranges *h, __u64 start);
/* One SP_REC_HOSTMEM range; 0 or -ENOMEM. */
int hostmem__add_mapping(struct host_ranges *h, __u64 start, __u64 end, __u32 kind);
/* After an execve the old mappings are gone. */
void hostmem__forget_mappings(struct host_ranges *h);
/* all_seen: traced from its context's creation on, so memory not seen pinned is pageable. */
struct host_class hostmem__classify(const struct host_ranges *h, __u64 addr, bool all_seen);
void hostmem__free(struct host_ranges *h);
const char *hostmem__kind_name(enum host_kind kind);
const char *hostmem__from_name(enum host_from from);

#endif /* __HOSTMEM_H */
