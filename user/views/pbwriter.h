/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A small protobuf encoder for streamed output: varints, tags, fixed64 and
 * length-delimited fields, sub-messages with a 4-byte redundant varint length
 * that is backpatched when the message ends, so nothing is built twice.
 * Whole top-level messages are written to the file as they end: memory is
 * bounded by the largest one, not by the output.
 */
#ifndef __PBWRITER_H
#define __PBWRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define PBW_MAX_DEPTH	8
#define PBW_LEN_BYTES	4		/* a redundant varint holds lengths below 256 MiB */
#define PBW_MAX_LEN	((1u << 28) - 1)

enum pb_wire {
	PB_VARINT = 0,
	PB_FIXED64 = 1,
	PB_LEN = 2,
	PB_FIXED32 = 5,
};

struct pbw {
	__u8 *buf;
	size_t len, cap;
	size_t open[PBW_MAX_DEPTH];	/* offsets of the open messages' length bytes */
	int depth;
	int fd;				/* -1: keep everything in buf (tests) */
	int err;			/* first error, a negative errno; later writes do nothing */
	__u64 written;			/* bytes given to fd */
};

/* Bytes varint v takes, and write it at p (which has room for 10). */
int pb__varint_len(__u64 v);
int pb__put_varint(__u8 *p, __u64 v);

int pbw__init(struct pbw *w, int fd);
void pbw__varint(struct pbw *w, __u32 field, __u64 v);
void pbw__fixed64(struct pbw *w, __u32 field, __u64 v);
void pbw__bytes(struct pbw *w, __u32 field, const void *data, size_t len);
void pbw__string(struct pbw *w, __u32 field, const char *s);
/* Open a sub-message (or a top-level record): its length is filled in by pbw__end. */
void pbw__begin(struct pbw *w, __u32 field);
void pbw__end(struct pbw *w);
/* Write what is buffered when no message is open and more than keep bytes wait (0: all). */
int pbw__flush(struct pbw *w, size_t keep);
/* Flush everything; the first error of the writer, or 0. The fd stays open. */
int pbw__close(struct pbw *w);
void pbw__free(struct pbw *w);

#endif /* __PBWRITER_H */
