// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Telling a tracer that another specprobe traces the same process. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include "log.h"
#include "sharing.h"

#define SHARING_DIR "/run/specprobe"

static void mark_path(char *buf, size_t len, __u32 tgid)
{
	snprintf(buf, len, SHARING_DIR "/pid.%u", tgid);
}

/* A mark held shared, or -1; *company when another tracer held one already. */
static int take_mark(__u32 tgid, bool *company)
{
	char path[64];
	int fd;

	mark_path(path, sizeof(path), tgid);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
	if (fd < 0)
		return -1;
	*company = flock(fd, LOCK_EX | LOCK_NB) != 0;
	/* from exclusive to shared, or shared beside the others' */
	if (flock(fd, LOCK_SH | LOCK_NB)) {
		close(fd);
		return -1;
	}
	return fd;
}

void sharing__mark(struct sharing *s, const __u32 *tgids, int n)
{
	s->marks = NULL;
	s->nr = 0;
	/* only root may create the folder: nobody else can plant marks in it */
	if ((mkdir(SHARING_DIR, 0700) && errno != EEXIST) || n <= 0)
		return;
	s->marks = calloc(n, sizeof(*s->marks));
	for (int i = 0; s->marks && i < n; i++) {
		bool company;
		int fd = take_mark(tgids[i], &company);

		if (fd < 0) {
			log_debug("cannot mark pid %u as traced: %s", tgids[i], strerror(errno));
			continue;
		}
		if (company)
			log_info("pid %u is traced by another specprobe as well: each records "
				 "every call on its own", tgids[i]);
		s->marks[s->nr++] = (struct sharing_mark){ fd, tgids[i] };
	}
}

void sharing__release(struct sharing *s)
{
	for (int i = 0; i < s->nr; i++) {
		char path[64];

		/* the last tracer out removes the file */
		mark_path(path, sizeof(path), s->marks[i].tgid);
		if (!flock(s->marks[i].fd, LOCK_EX | LOCK_NB))
			unlink(path);
		close(s->marks[i].fd);
	}
	free(s->marks);
	s->marks = NULL;
	s->nr = 0;
}
