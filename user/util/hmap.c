// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include "hmap.h"

static size_t slot_of(size_t cap, __u64 a, __u64 b)
{
	__u64 h = (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full);

	h ^= h >> 29;
	return (size_t)h & (cap - 1);
}

static struct hmap_slot *find(const struct hmap *m, __u64 a, __u64 b)
{
	size_t s;

	if (!m->cap)
		return NULL;
	for (s = slot_of(m->cap, a, b); m->slots[s].value; s = (s + 1) & (m->cap - 1))
		if (m->slots[s].a == a && m->slots[s].b == b)
			return &m->slots[s];
	return &m->slots[s];
}

void *hmap__get(const struct hmap *m, __u64 a, __u64 b)
{
	struct hmap_slot *s = find(m, a, b);

	return s ? s->value : NULL;
}

static int grow(struct hmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct hmap_slot *old = m->slots;
	size_t old_cap = m->cap;

	m->slots = calloc(cap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].value)
			*find(m, old[i].a, old[i].b) = old[i];
	free(old);
	return 0;
}

int hmap__set(struct hmap *m, __u64 a, __u64 b, void *value)
{
	struct hmap_slot *s;

	/* an emptied slot would cut probe chains: callers mark dead objects instead */
	if (!value)
		return -EINVAL;
	if ((m->len + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	s = find(m, a, b);
	if (!s->value)
		m->len++;
	s->a = a;
	s->b = b;
	s->value = value;
	return 0;
}

/* Linear probing: move later entries of the chain back into the hole, so no chain is cut. */
void *hmap__remove(struct hmap *m, __u64 a, __u64 b)
{
	struct hmap_slot *s = find(m, a, b);
	size_t hole, i, home;
	void *value;

	if (!s || !s->value)
		return NULL;
	value = s->value;
	hole = s - m->slots;
	for (i = (hole + 1) & (m->cap - 1); m->slots[i].value; i = (i + 1) & (m->cap - 1)) {
		home = slot_of(m->cap, m->slots[i].a, m->slots[i].b);
		/* moves unless its home lies cyclically in (hole, i] */
		if (((i - home) & (m->cap - 1)) >= ((i - hole) & (m->cap - 1))) {
			m->slots[hole] = m->slots[i];
			hole = i;
		}
	}
	m->slots[hole] = (struct hmap_slot){ 0 };
	m->len--;
	return value;
}

void hmap__free(struct hmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->len = 0;
}
