// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Protobuf wire encoding for streamed output (pbwriter.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pbwriter.h"

#define PBW_START_CAP	(64 * 1024)

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

bool pbw__grow(struct pbw *w, size_t need)
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

void pbw__end_long(struct pbw *w, size_t at, size_t len)
{
	__u8 *p;

	if (len > PBW_MAX_LEN) {
		w->err = -E2BIG;
		return;
	}
	if (!pbw__room(w, PBW_LONG_BYTES - PBW_LEN_BYTES))
		return;
	/* the closed messages inside move with it; the open ones all start before at */
	p = w->buf + at;
	memmove(p + PBW_LONG_BYTES, p + PBW_LEN_BYTES, len);
	w->len += PBW_LONG_BYTES - PBW_LEN_BYTES;
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
