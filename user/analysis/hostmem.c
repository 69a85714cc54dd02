// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Pinned or pageable. The driver pins what cuMemHostAlloc returns in shared
 * mappings of /dev/zero; cuMemHostRegister pins pages in place, invisible in
 * the maps. So memory mapped at attach in any other mapping may have been
 * registered before it: unknown. Memory mapped later would have been
 * registered under the probes' eyes: pageable.
 */
#include <errno.h>
#include <stdlib.h>
#include "hostmem.h"
#include "specprobe.h"

static bool grow(struct host_range **table, __u32 *cap, __u32 need)
{
	struct host_range *grown;
	__u32 n;

	if (need <= *cap)
		return true;
	n = *cap ? *cap * 2 : 64;
	grown = realloc(*table, n * sizeof(*grown));
	if (!grown)
		return false;
	*table = grown;
	*cap = n;
	return true;
}

int hostmem__pin(struct host_ranges *h, __u64 start, __u64 bytes)
{
	if (!grow(&h->pinned, &h->cap_pinned, h->nr_pinned + 1))
		return -ENOMEM;
	h->pinned[h->nr_pinned++] = (struct host_range){ start, start + bytes, 0 };
	return 0;
}

void hostmem__unpin(struct host_ranges *h, __u64 start)
{
	for (__u32 i = 0; i < h->nr_pinned; i++)
		if (h->pinned[i].start == start) {
			h->pinned[i] = h->pinned[--h->nr_pinned];
			return;
		}
}

/* Index of the first mapping that starts after addr. */
static __u32 upper_bound(const struct host_ranges *h, __u64 addr)
{
	__u32 lo = 0, hi = h->nr_mapped;

	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (h->mapped[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int hostmem__add_mapping(struct host_ranges *h, __u64 start, __u64 end, __u32 kind)
{
	__u32 at;

	if (end <= start)
		return 0;
	if (!grow(&h->mapped, &h->cap_mapped, h->nr_mapped + 1))
		return -ENOMEM;
	/* /proc/PID/maps is sorted: this is an append but for a second snapshot */
	at = upper_bound(h, start);
	for (__u32 i = h->nr_mapped; i > at; i--)
		h->mapped[i] = h->mapped[i - 1];
	h->mapped[at] = (struct host_range){ start, end, kind };
	h->nr_mapped++;
	h->mapped_read = true;
	return 0;
}

void hostmem__forget_mappings(struct host_ranges *h)
{
	h->nr_mapped = 0;
	h->mapped_read = false;
}

static const struct host_range *mapping_of(const struct host_ranges *h, __u64 addr)
{
	__u32 i = upper_bound(h, addr);

	if (!i || addr >= h->mapped[i - 1].end)
		return NULL;
	return &h->mapped[i - 1];
}

struct host_class hostmem__classify(const struct host_ranges *h, __u64 addr, bool all_seen)
{
	const struct host_range *map;

	for (__u32 i = 0; i < h->nr_pinned; i++)
		if (addr >= h->pinned[i].start && addr < h->pinned[i].end)
			return (struct host_class){ HOST_PINNED, HOST_FROM_TRACED };
	if (all_seen)
		return (struct host_class){ HOST_PAGEABLE, HOST_FROM_TRACED };
	if (!h->mapped_read)
		return (struct host_class){ HOST_UNKNOWN, HOST_FROM_NONE };
	map = mapping_of(h, addr);
	if (!map)
		return (struct host_class){ HOST_PAGEABLE, HOST_FROM_AFTER_ATTACH };
	if (map->kind == SP_HOSTMEM_DRIVER)
		return (struct host_class){ HOST_PINNED, HOST_FROM_MAPS };
	return (struct host_class){ HOST_UNKNOWN, HOST_FROM_MAPS };
}

void hostmem__free(struct host_ranges *h)
{
	if (!h)
		return;
	free(h->pinned);
	free(h->mapped);
	*h = (struct host_ranges){ 0 };
}

static const char *const kind_names[HOST_KIND_NR] = {
	[HOST_UNKNOWN] = "unknown", [HOST_PINNED] = "pinned", [HOST_PAGEABLE] = "pageable",
};
static const char *const from_names[HOST_FROM_NR] = {
	[HOST_FROM_NONE] = "none",	   [HOST_FROM_TRACED] = "traced",
	[HOST_FROM_MAPS] = "maps",	   [HOST_FROM_AFTER_ATTACH] = "after-attach",
	[HOST_FROM_MEASURED] = "measured",
};

const char *hostmem__kind_name(enum host_kind kind)
{
	return kind < HOST_KIND_NR ? kind_names[kind] : "?";
}

const char *hostmem__from_name(enum host_from from)
{
	return from < HOST_FROM_NR ? from_names[from] : "?";
}
