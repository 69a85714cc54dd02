// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Protobuf wire encoding for streamed output (pbwriter.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pbwriter.h"

#define PBW_START_CAP	(64 * 1024)
#define PBW_ROOM	32	/* a tag, a varint and a length fit in it */

int pb__varint_len(__u64 v)
{
	int n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

int pb__put_varint(__u8 *p, __u64 v)
{
	int n = 0;

	while (v >= 0x80) {
		p[n++] = (__u8)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (__u8)v;
	return n;
}

int pbw__init(struct pbw *w, int fd)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->buf = malloc(PBW_START_CAP);
	if (!w->buf)
		return -ENOMEM;
	w->cap = PBW_START_CAP;
	return 0;
}

/* Room for need more bytes; false (and err set) when there is none. */
static bool pbw__reserve(struct pbw *w, size_t need)
{
	size_t cap = w->cap;
	__u8 *buf;

	if (w->err)
		return false;
	if (w->len + need <= w->cap)
		return true;
	while (cap < w->len + need)
		cap *= 2;
	buf = realloc(w->buf, cap);
	if (!buf) {
		w->err = -ENOMEM;
		return false;
	}
	w->buf = buf;
	w->cap = cap;
	return true;
}

static void pbw__tag(struct pbw *w, __u32 field, enum pb_wire type)
{
	w->len += pb__put_varint(w->buf + w->len, ((__u64)field << 3) | type);
}

void pbw__varint(struct pbw *w, __u32 field, __u64 v)
{
	if (!pbw__reserve(w, PBW_ROOM))
		return;
	pbw__tag(w, field, PB_VARINT);
	w->len += pb__put_varint(w->buf + w->len, v);
}

void pbw__fixed64(struct pbw *w, __u32 field, __u64 v)
{
	if (!pbw__reserve(w, PBW_ROOM))
		return;
	pbw__tag(w, field, PB_FIXED64);
	for (int i = 0; i < 8; i++)
		w->buf[w->len++] = (__u8)(v >> (8 * i));
}

void pbw__bytes(struct pbw *w, __u32 field, const void *data, size_t len)
{
	if (!pbw__reserve(w, PBW_ROOM + len))
		return;
	pbw__tag(w, field, PB_LEN);
	w->len += pb__put_varint(w->buf + w->len, len);
	memcpy(w->buf + w->len, data, len);
	w->len += len;
}

void pbw__string(struct pbw *w, __u32 field, const char *s)
{
	pbw__bytes(w, field, s, strlen(s));
}

void pbw__begin(struct pbw *w, __u32 field)
{
	if (!pbw__reserve(w, PBW_ROOM))
		return;
	if (w->depth == PBW_MAX_DEPTH) {
		w->err = -E2BIG;
		return;
	}
	pbw__tag(w, field, PB_LEN);
	w->open[w->depth++] = w->len;
	w->len += PBW_LEN_BYTES;
}

void pbw__end(struct pbw *w)
{
	size_t at, len;
	__u8 *p;

	if (w->err || !w->depth)
		return;
	at = w->open[--w->depth];
	len = w->len - at - PBW_LEN_BYTES;
	if (len > PBW_MAX_LEN) {
		w->err = -E2BIG;
		return;
	}
	/* 7 bits per byte, continuation bits on all but the last: non-minimal but valid */
	p = w->buf + at;
	p[0] = (__u8)(len | 0x80);
	p[1] = (__u8)((len >> 7) | 0x80);
	p[2] = (__u8)((len >> 14) | 0x80);
	p[3] = (__u8)(len >> 21);
}

int pbw__flush(struct pbw *w, size_t keep)
{
	size_t done = 0;

	if (w->err)
		return w->err;
	if (w->fd < 0 || w->depth || w->len <= keep)
		return 0;
	while (done < w->len) {
		ssize_t n = write(w->fd, w->buf + done, w->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			w->err = n < 0 ? -errno : -EIO;
			return w->err;
		}
		done += n;
	}
	w->written += done;
	w->len = 0;
	return 0;
}

int pbw__close(struct pbw *w)
{
	if (!w->err && w->depth)
		w->err = -EINVAL;
	return pbw__flush(w, 0);
}

void pbw__free(struct pbw *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}
