/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A mutator that knows a recording's layout (docs/recording-format.md). Random
 * bytes rarely make a record whose pid, tid, call number or cookie is wrong
 * yet whose size and kind still read; the readers index by exactly those. So
 * most mutations pick a record and change one such field: to the value the
 * same field has in another record (another process, another thread), to one
 * never seen, or to an edge; or take a run of records out, or repeat one. The
 * rest are libFuzzer's own byte changes.
 */
#ifndef __FUZZ_FIELDS_H
#define __FUZZ_FIELDS_H

#include <stdint.h>
#include <string.h>
#include <linux/types.h>
#include "specprobe.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

#define FIELDS_MAX_RECORDS 4096

struct fields_rng {
	uint64_t s;
};

static inline uint32_t fields_rand(struct fields_rng *r, uint32_t below)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return below ? (uint32_t)(r->s % below) : 0;
}

/* The records' offsets after the header, up to a cut: how many (at most max). */
static inline size_t fields_records(const uint8_t *data, size_t size, uint32_t *offs, size_t max)
{
	uint32_t hlen;
	size_t off, n = 0;

	if (size < 16 || memcmp(data, "SPECPRB\n", 8))
		return 0;
	memcpy(&hlen, data + 12, 4);
	for (off = 16 + (size_t)hlen; off + 4 <= size && n < max;) {
		uint16_t rsize;

		memcpy(&rsize, data + off + 2, 2);
		if (rsize < 4 || off + rsize > size)
			break;
		offs[n++] = off;
		off += rsize;
	}
	return n;
}

/* Offsets of the fields a reader indexes by, in a record of this kind (0 ends the list). */
static inline const uint8_t *fields_of(uint16_t type)
{
	/* probe, tgid, tid, seq, parent seq, depth (a byte) */
	static const uint8_t call[] = { 4, 16, 20, 24, 28, 32, 0 };
	/* probe, tgid, tid, seq, depth (a byte) */
	static const uint8_t ret[] = { 4, 16, 20, 24, 30, 0 };
	/* tgid, tid, seq, the native and Python frame counts (16 bits each) */
	static const uint8_t stack[] = { 4, 8, 12, 16, 18, 0 };
	/* tgid, and the word after the time: a parent, tid, library, rank, number */
	static const uint8_t other[] = { 4, 8, 16, 20, 0 };

	switch (type) {
	case SP_REC_CALL:
		return call;
	case SP_REC_RET:
		return ret;
	case SP_REC_STACK:
		return stack;
	default:
		return other;
	}
}

static inline uint32_t fields_new_value(struct fields_rng *r, uint32_t old, uint32_t other)
{
	switch (fields_rand(r, 8)) {
	case 0:
		return other;			/* another record's: another process or thread */
	case 1:
		return old | 1u << 24;		/* a pid or tid never seen (byte 3 flipped) */
	case 2:
		return old + 1 + fields_rand(r, 16);
	case 3:
		return old - 1 - fields_rand(r, 16);
	case 4:
		return 0;
	case 5:
		return 0xffffffffu - fields_rand(r, 4);
	case 6:
		return old ^ 1u << fields_rand(r, 32);
	default:
		return fields_rand(r, 64);
	}
}

/* One field of one record changed; sizes are left alone unless the field is the size. */
static inline void fields_change(struct fields_rng *r, uint8_t *data, size_t size,
				 const uint32_t *offs, size_t n)
{
	uint32_t off = offs[fields_rand(r, n)], peer = offs[fields_rand(r, n)];
	uint16_t type, rsize, peer_size;
	const uint8_t *fields;
	uint32_t old, other = 0;
	size_t nf = 0, at;

	memcpy(&type, data + off, 2);
	memcpy(&rsize, data + off + 2, 2);
	if (!fields_rand(r, 16)) {
		/* the size: a little off, or far */
		uint16_t v = fields_rand(r, 2) ? rsize + 8 * (fields_rand(r, 5) - 2)
					       : (uint16_t)fields_new_value(r, rsize, 0);

		memcpy(data + off + 2, &v, 2);
		return;
	}
	fields = fields_of(type);
	while (fields[nf])
		nf++;
	at = fields[fields_rand(r, nf)];
	if (at + 4 > rsize)
		at = 4;
	if (at + 4 > rsize || off + at + 4 > size)
		return;
	memcpy(&old, data + off + at, 4);
	memcpy(&peer_size, data + peer + 2, 2);
	if (peer + at + 4 <= size && at + 4 <= peer_size)
		memcpy(&other, data + peer + at, 4);
	if ((type == SP_REC_CALL && at == 32) || (type == SP_REC_RET && at == 30)) {
		data[off + at] = (uint8_t)fields_new_value(r, data[off + at], other);
		return;
	}
	old = fields_new_value(r, old, other);
	memcpy(data + off + at, &old, 4);
}

/* Records i .. i+k-1 taken out (a run removed from the middle of a file). */
static inline size_t fields_remove(struct fields_rng *r, uint8_t *data, size_t size,
				   const uint32_t *offs, size_t n)
{
	size_t i = fields_rand(r, n), k = 1 + fields_rand(r, 16);
	size_t from = offs[i], to = i + k < n ? offs[i + k] : size;

	memmove(data + from, data + to, size - to);
	return size - (to - from);
}

/* Record i written again at another record's place. */
static inline size_t fields_repeat(struct fields_rng *r, uint8_t *data, size_t size,
				   size_t max_size, const uint32_t *offs, size_t n)
{
	size_t i = fields_rand(r, n), at = offs[fields_rand(r, n)];
	uint16_t rsize;
	uint8_t rec[4096];

	memcpy(&rsize, data + offs[i] + 2, 2);
	if (size + rsize > max_size || rsize > sizeof(rec) || offs[i] + rsize > size)
		return size;
	memcpy(rec, data + offs[i], rsize);
	memmove(data + at + rsize, data + at, size - at);
	memcpy(data + at, rec, rsize);
	return size + rsize;
}

/*
 * Mutate data[0, size - tail): the last tail bytes (a harness's own parameters)
 * stay as they are, after the recording.
 */
static inline size_t fields_mutate(uint8_t *data, size_t size, size_t max_size, unsigned int seed,
				   size_t tail)
{
	static uint32_t offs[FIELDS_MAX_RECORDS];
	struct fields_rng r = { seed * 0x9e3779b97f4a7c15ull + 1 };
	size_t n, body, out, room;
	uint8_t keep[16];

	if (size < tail || tail > sizeof(keep) || max_size < size)
		return LLVMFuzzerMutate(data, size, max_size);
	body = size - tail;
	room = max_size - tail;
	memcpy(keep, data + body, tail);
	n = fields_records(data, body, offs, FIELDS_MAX_RECORDS);
	switch (n ? fields_rand(&r, 8) : 7) {
	case 0:
	case 1:
	case 2:
	case 3:
		fields_change(&r, data, body, offs, n);
		out = body;
		break;
	case 4:
		out = fields_remove(&r, data, body, offs, n);
		break;
	case 5:
		out = fields_repeat(&r, data, body, room, offs, n);
		break;
	default:
		out = LLVMFuzzerMutate(data, body, room);
		break;
	}
	memcpy(data + out, keep, tail);
	return out + tail;
}

#endif /* __FUZZ_FIELDS_H */
