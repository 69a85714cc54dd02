/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A small protobuf encoder for streamed output: varints, tags, fixed64 and
 * length-delimited fields, sub-messages with a 2-byte redundant varint length
 * that is backpatched when the message ends, so nothing is built twice (a
 * message of 16 KiB or more moves up by two bytes to take a 4-byte length).
 * Whole top-level messages are written to the file as they end: memory is
 * bounded by the largest one, not by the output.
 *
 * The field writers are inline: an exporter calls them a dozen times a record,
 * and with a constant field number the tag folds to a constant.
 */
#ifndef __PBWRITER_H
#define __PBWRITER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>

#define PBW_MAX_DEPTH	8
#define PBW_LEN_BYTES	2		/* reserved: redundant varint of lengths < 16 KiB */
#define PBW_LONG_BYTES	4		/* what longer messages take, up to 256 MiB */
#define PBW_SHORT_LEN	((1u << 14) - 1)
#define PBW_MAX_LEN	((1u << 28) - 1)
#define PBW_ROOM	32		/* a tag, a varint and a length fit in it */

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

/* Bytes varint v takes. */
static inline int pb__varint_len(__u64 v)
{
	int n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Write varint v at p, which has room for 10; the bytes written. */
static inline int pb__put_varint(__u8 *p, __u64 v)
{
	int n = 0;

	while (v >= 0x80) {
		p[n++] = (__u8)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (__u8)v;
	return n;
}

int pbw__init(struct pbw *w, int fd);
/* Grow for need more bytes; false (and err set) when there is no memory, or after an error. */
bool pbw__grow(struct pbw *w, size_t need);

static inline bool pbw__room(struct pbw *w, size_t need)
{
	return (!w->err && w->len + need <= w->cap) || pbw__grow(w, need);
}

static inline void pbw__tag(struct pbw *w, __u32 field, enum pb_wire type)
{
	w->len += pb__put_varint(w->buf + w->len, ((__u64)field << 3) | type);
}

static inline void pbw__varint(struct pbw *w, __u32 field, __u64 v)
{
	if (!pbw__room(w, PBW_ROOM))
		return;
	pbw__tag(w, field, PB_VARINT);
	w->len += pb__put_varint(w->buf + w->len, v);
}

static inline void pbw__fixed64(struct pbw *w, __u32 field, __u64 v)
{
	if (!pbw__room(w, PBW_ROOM))
		return;
	pbw__tag(w, field, PB_FIXED64);
	for (int i = 0; i < 8; i++)
		w->buf[w->len++] = (__u8)(v >> (8 * i));
}

static inline void pbw__bytes(struct pbw *w, __u32 field, const void *data, size_t len)
{
	if (!pbw__room(w, PBW_ROOM + len))
		return;
	pbw__tag(w, field, PB_LEN);
	w->len += pb__put_varint(w->buf + w->len, len);
	memcpy(w->buf + w->len, data, len);
	w->len += len;
}

static inline void pbw__string(struct pbw *w, __u32 field, const char *s)
{
	pbw__bytes(w, field, s, strlen(s));
}

/*
 * A sub-message of two varint fields (f1 = v1, f2 = v2), e.g. an annotation's
 * name id and value: its length is known, so it takes one byte, not four.
 */
static inline void pbw__pair(struct pbw *w, __u32 field, __u32 f1, __u64 v1, __u32 f2, __u64 v2)
{
	__u8 *len_at;

	if (!pbw__room(w, 2 * PBW_ROOM))
		return;
	pbw__tag(w, field, PB_LEN);
	len_at = w->buf + w->len++;
	pbw__tag(w, f1, PB_VARINT);
	w->len += pb__put_varint(w->buf + w->len, v1);
	pbw__tag(w, f2, PB_VARINT);
	w->len += pb__put_varint(w->buf + w->len, v2);
	*len_at = (__u8)(w->buf + w->len - len_at - 1);	/* two tags, two varints: < 128 */
}

/* Open a sub-message (or a top-level record): its length is filled in by pbw__end. */
static inline void pbw__begin(struct pbw *w, __u32 field)
{
	if (!pbw__room(w, PBW_ROOM))
		return;
	if (w->depth == PBW_MAX_DEPTH) {
		w->err = -E2BIG;
		return;
	}
	pbw__tag(w, field, PB_LEN);
	w->open[w->depth++] = w->len;
	w->len += PBW_LEN_BYTES;
}

/* Close a message of 16 KiB or more. */
void pbw__end_long(struct pbw *w, size_t at, size_t len);

static inline void pbw__end(struct pbw *w)
{
	size_t at, len;

	if (w->err || !w->depth)
		return;
	at = w->open[--w->depth];
	len = w->len - at - PBW_LEN_BYTES;
	if (len > PBW_SHORT_LEN) {
		pbw__end_long(w, at, len);
		return;
	}
	/* 7 bits per byte, a continuation bit on the first: non-minimal but valid */
	w->buf[at] = (__u8)(len | 0x80);
	w->buf[at + 1] = (__u8)(len >> 7);
}

/* Write what is buffered when no message is open and more than keep bytes wait (0: all). */
int pbw__flush(struct pbw *w, size_t keep);
/* Flush everything; the first error of the writer, or 0. The fd stays open. */
int pbw__close(struct pbw *w);
void pbw__free(struct pbw *w);

#endif /* __PBWRITER_H */
