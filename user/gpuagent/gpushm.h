/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The ring file an activity agent hands its records through: ring.PID in the
 * folder SPECPROBE_GPU_DIR names, a header page, then a single-producer,
 * single-consumer byte ring of whole records in the recording's layouts
 * (bpf/specprobe.h). The agent writes records and its fields of the header;
 * the recorder reads records, advances the consumer offset and bumps the
 * heartbeat. Offsets run free (bytes so far); a record may wrap around the
 * end of the data. Shared by the agent and specprobe, nothing else.
 */
#ifndef __GPUSHM_H
#define __GPUSHM_H

#include <errno.h>
#include <string.h>
#include <linux/types.h>

#define GPUSHM_ENV_DIR		"SPECPROBE_GPU_DIR"	/* the folder rings are made in */
#define GPUSHM_ENV_CUPTI	"SPECPROBE_CUPTI"	/* --cupti PATH */
#define GPUSHM_RING_PREFIX	"ring."			/* ring.PID, ring.PID.N after an exec */
#define GPUSHM_AGENT_FILE	"libspecprobe-gpu.so"
/* Injected into a running process (-p): the memfds' names, as /proc/PID/maps shows them */
#define GPUSHM_AGENT_MEMFD	"specprobe-gpu-agent"
#define GPUSHM_RING_MEMFD	"specprobe-gpu-ring"
#define GPUSHM_ATTACH_FN	"specprobe_agent_attach"
#define GPUSHM_MAGIC		0x4d485047u	/* "GPHM" */
#define GPUSHM_VERSION		1
#define GPUSHM_HEADER_BYTES	4096u
#define GPUSHM_DATA_BYTES	(8u << 20)	/* a power of two */
#define GPUSHM_FILE_BYTES	(GPUSHM_HEADER_BYTES + GPUSHM_DATA_BYTES)
#define GPUSHM_MAX_RECORD	4096u		/* as the recording's own limit */
/* Heartbeat ticks (the agent's 100 ms flushes) without a change: the tracer is gone. */
#define GPUSHM_HEARTBEAT_TICKS	20

struct gpushm_header {
	__u32 magic;		/* stored last (release) by the agent: the header is whole */
	__u32 version;
	__u32 header_bytes;	/* GPUSHM_HEADER_BYTES: the data starts here */
	__u32 pid;		/* the agent's process, as getpid() gives it */
	__u64 data_bytes;	/* GPUSHM_DATA_BYTES */
	/* written by the agent */
	__u64 produced __attribute__((aligned(64)));	/* bytes written so far (release) */
	__u64 ring_dropped;	/* records that found no room */
	__u32 closed;		/* 1: the agent's last record is in (it stopped or exits) */
	__u32 pad;
	/* written by the recorder */
	__u64 consumed __attribute__((aligned(64)));	/* bytes read so far (release) */
	__u64 heartbeat;	/* bumped at each poll */
	__u32 detach;		/* 1: an injected agent turns off and lets the ring go */
};

_Static_assert(sizeof(struct gpushm_header) <= GPUSHM_HEADER_BYTES, "header page too small");

static inline void gpushm__copy_in(void *data, __u64 data_bytes, __u64 at, const void *src,
				   __u32 len)
{
	__u64 pos = at & (data_bytes - 1);
	__u64 first = data_bytes - pos < len ? data_bytes - pos : len;

	memcpy((char *)data + pos, src, first);
	memcpy(data, (const char *)src + first, len - first);
}

static inline void gpushm__copy_out(const void *data, __u64 data_bytes, __u64 at, void *dst,
				    __u32 len)
{
	__u64 pos = at & (data_bytes - 1);
	__u64 first = data_bytes - pos < len ? data_bytes - pos : len;

	memcpy(dst, (const char *)data + pos, first);
	memcpy((char *)dst + first, data, len - first);
}

/*
 * Producer: append one whole record (its size a multiple of 8) or drop it.
 * Never waits: a record with no room is counted in ring_dropped. 0 or -ENOSPC.
 */
static inline int gpushm__put(struct gpushm_header *h, void *data, __u64 data_bytes,
			      const void *rec, __u32 size)
{
	__u64 produced = __atomic_load_n(&h->produced, __ATOMIC_RELAXED);
	__u64 consumed = __atomic_load_n(&h->consumed, __ATOMIC_ACQUIRE);

	if (size > GPUSHM_MAX_RECORD || produced - consumed > data_bytes ||
	    size > data_bytes - (produced - consumed)) {
		__atomic_fetch_add(&h->ring_dropped, 1, __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	gpushm__copy_in(data, data_bytes, produced, rec, size);
	__atomic_store_n(&h->produced, produced + size, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Consumer: take the oldest whole record into buf (room bytes). Its size, 0
 * when the ring is empty, -EBADMSG when the offsets or the record's size make
 * no sense (the ring is not to be read further).
 */
static inline int gpushm__get(struct gpushm_header *h, const void *data, __u64 data_bytes,
			      void *buf, __u32 room)
{
	__u64 produced = __atomic_load_n(&h->produced, __ATOMIC_ACQUIRE);
	__u64 consumed = __atomic_load_n(&h->consumed, __ATOMIC_RELAXED);
	__u64 avail = produced - consumed;
	__u16 hdr[2];

	if (!avail)
		return 0;
	if (avail > data_bytes || avail < sizeof(hdr))
		return -EBADMSG;
	gpushm__copy_out(data, data_bytes, consumed, hdr, sizeof(hdr));
	if (hdr[1] < sizeof(hdr) || hdr[1] % 8 || hdr[1] > room || hdr[1] > avail)
		return -EBADMSG;
	gpushm__copy_out(data, data_bytes, consumed, buf, hdr[1]);
	__atomic_store_n(&h->consumed, consumed + hdr[1], __ATOMIC_RELEASE);
	return hdr[1];
}

#endif /* __GPUSHM_H */
