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
