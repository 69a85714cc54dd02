/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Map from a two-word key (process, handle) to a pointer: driver handles are
 * only unique inside one process. Insert, replace, look up and remove.
 */
#ifndef __HMAP_H
#define __HMAP_H

#include <stddef.h>
#include <linux/types.h>

struct hmap_slot {
	__u64 a, b;
	void *value;		/* NULL: empty slot */
};

struct hmap {
	struct hmap_slot *slots;
	size_t cap;		/* power of two */
	size_t len;
};

void *hmap__get(const struct hmap *m, __u64 a, __u64 b);
/* Set or replace (value not NULL); 0, -EINVAL or -ENOMEM. */
int hmap__set(struct hmap *m, __u64 a, __u64 b, void *value);
/* Remove the entry; its value, or NULL when there was none. */
void *hmap__remove(struct hmap *m, __u64 a, __u64 b);
void hmap__free(struct hmap *m);

#endif /* __HMAP_H */
