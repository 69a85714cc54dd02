// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Memory bookkeeping. Device memory is real process memory, so simulated copies
 * move real bytes; the ranges say what is device memory and which host memory
 * is pinned, which decides whether an "async" copy really is.
 */
#include <stdlib.h>
#include "sim.h"

struct range {
	uintptr_t start;
	size_t len;
	int kind;
};

struct range_set {
	struct range *r;
	size_t len, cap;
};

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct range_set dev_ranges, host_ranges;

static int range_add(struct range_set *set, uintptr_t start, size_t len, int kind)
{
	if (set->len == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 64;
		struct range *grown = realloc(set->r, cap * sizeof(*grown));

		if (!grown)
			return CUDA_ERROR_OUT_OF_MEMORY;
		set->r = grown;
		set->cap = cap;
	}
	set->r[set->len++] = (struct range){ start, len, kind };
	return 0;
}

static struct range *range_find(struct range_set *set, uintptr_t p)
{
	for (size_t i = 0; i < set->len; i++)
		if (p >= set->r[i].start && p < set->r[i].start + set->r[i].len)
			return &set->r[i];
	return NULL;
}

static void range_drop(struct range_set *set, struct range *r)
{
	*r = set->r[--set->len];
}

/* Host memory counts as pinned when the copy starts inside a pinned range. */
enum sim_host_kind sim_host_kind(const void *p, size_t bytes)
{
	struct range *r;
	enum sim_host_kind kind = HOST_PAGEABLE;

	pthread_mutex_lock(&mem_lock);
	r = range_find(&host_ranges, (uintptr_t)p);
	if (r)
		kind = r->kind;
	pthread_mutex_unlock(&mem_lock);
	return kind;
}

bool sim_is_device(uintptr_t p)
{
	bool found;

	pthread_mutex_lock(&mem_lock);
	found = range_find(&dev_ranges, p) != NULL;
	pthread_mutex_unlock(&mem_lock);
	return found;
}

/* A device-side pointer: device memory or pinned host memory, all of [p, p+bytes). */
bool sim_dev_ok(uintptr_t p, size_t bytes)
{
	struct range *r;
	bool ok;

	pthread_mutex_lock(&mem_lock);
	r = range_find(&dev_ranges, p);
	if (!r)
		r = range_find(&host_ranges, p);
	ok = r && p + bytes <= r->start + r->len;
	pthread_mutex_unlock(&mem_lock);
	return ok;
}

int sim_dev_alloc(CUdeviceptr *dptr, size_t bytes)
{
	size_t len = (bytes ? bytes + 255 : 256) & ~(size_t)255;
	void *p = aligned_alloc(256, len);
	int err;

	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&mem_lock);
	err = range_add(&dev_ranges, (uintptr_t)p, len, 0);
	pthread_mutex_unlock(&mem_lock);
	if (err) {
		free(p);
		return err;
	}
	*dptr = (CUdeviceptr)(uintptr_t)p;
	return 0;
}

/* Forgets an allocation; the caller frees it. */
int sim_dev_forget(CUdeviceptr dptr)
{
	struct range *r;
	int err = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&mem_lock);
	r = range_find(&dev_ranges, (uintptr_t)dptr);
	if (r && r->start == (uintptr_t)dptr) {
		range_drop(&dev_ranges, r);
		err = 0;
	}
	pthread_mutex_unlock(&mem_lock);
	return err;
}

int sim_host_add(void *p, size_t bytes, enum sim_host_kind kind)
{
	int err = 0;

	pthread_mutex_lock(&mem_lock);
	if (range_find(&host_ranges, (uintptr_t)p) ||
	    (bytes && range_find(&host_ranges, (uintptr_t)p + bytes - 1)))
		err = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	else
		err = range_add(&host_ranges, (uintptr_t)p, bytes ? bytes : 1, kind);
	pthread_mutex_unlock(&mem_lock);
	return err;
}

/* Forgets a range that starts at p; *len (when given) says how long it was. */
int sim_host_remove(void *p, enum sim_host_kind kind, size_t *len)
{
	struct range *r;
	int err = kind == HOST_REGISTERED ? CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
					  : CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&mem_lock);
	r = range_find(&host_ranges, (uintptr_t)p);
	if (r && r->start == (uintptr_t)p && r->kind == (int)kind) {
		if (len)
			*len = r->len;
		range_drop(&host_ranges, r);
		err = 0;
	}
	pthread_mutex_unlock(&mem_lock);
	return err;
}
