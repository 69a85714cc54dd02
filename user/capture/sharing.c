// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Telling a tracer that another specprobe traces the same process. */
#include <dirent.h>
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

static void mark_name(char *buf, size_t len, __u32 tgid)
{
	snprintf(buf, len, "pid.%u", tgid);
}

/* Is fd still the file at name (not one a last tracer out unlinked meanwhile)? */
static bool still_named(int dir_fd, const char *name, int fd)
{
	struct stat held, named;

	return !fstat(fd, &held) && !fstatat(dir_fd, name, &named, AT_SYMLINK_NOFOLLOW) &&
	       held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

/* A mark held shared, or -1; *company when another tracer held one already. */
static int take_mark(int dir_fd, __u32 tgid, bool *company)
{
	char name[32];
	int fd = -1;

	mark_name(name, sizeof(name), tgid);
	/* a file unlinked between our open and our lock is no mark: take the new one */
	for (int tries = 0; tries < 16; tries++) {
		fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
			    0600);
		if (fd < 0)
			return -1;
		*company = flock(fd, LOCK_EX | LOCK_NB) != 0;
		/* from exclusive to shared, or shared beside the others' */
		if (flock(fd, LOCK_SH | LOCK_NB)) {
			close(fd);
			return -1;
		}
		if (still_named(dir_fd, name, fd))
			return fd;
		close(fd);
	}
	errno = EAGAIN;
	return -1;
}

/*
 * Marks of tracers that died (SIGKILL) without removing them: a mark no one
 * holds a lock on is no one's, and goes. One a live tracer has just opened
 * and not yet locked is taken anew by it (take_mark), so none is lost.
 */
static void clear_dead_marks(int dir_fd)
{
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int cleared = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		int mark;

		if (strncmp(e->d_name, "pid.", 4))
			continue;
		mark = openat(dir_fd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (mark < 0)
			continue;
		if (!flock(mark, LOCK_EX | LOCK_NB) && still_named(dir_fd, e->d_name, mark) &&
		    !unlinkat(dir_fd, e->d_name, 0))
			cleared++;
		close(mark);
	}
	closedir(d);
	if (cleared)
		log_debug("%d mark(s) of tracers gone removed from " SHARING_DIR, cleared);
}

/* The folder of marks, root's alone (made so), held open; -1 when it is not. */
static int open_marks_dir(void)
{
	struct stat st;
	int fd;

	/* only root may create the folder: nobody else can plant marks in it */
	if (mkdir(SHARING_DIR, 0700) && errno != EEXIST)
		return -1;
	fd = open(SHARING_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		log_debug(SHARING_DIR " is not this user's alone: no marks");
		close(fd);
		return -1;
	}
	return fd;
}

void sharing__mark(struct sharing *s, const __u32 *tgids, int n)
{
	s->marks = NULL;
	s->nr = 0;
	s->dir_fd = n > 0 ? open_marks_dir() : -1;
	if (s->dir_fd < 0)
		return;
	clear_dead_marks(s->dir_fd);
	s->marks = calloc(n, sizeof(*s->marks));
	if (!s->marks) {
		close(s->dir_fd);
		s->dir_fd = -1;
	}
	for (int i = 0; s->marks && i < n; i++) {
		bool company;
		int fd = take_mark(s->dir_fd, tgids[i], &company);

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
		char name[32];

		/* the last tracer out removes the file */
		mark_name(name, sizeof(name), s->marks[i].tgid);
		if (!flock(s->marks[i].fd, LOCK_EX | LOCK_NB) &&
		    still_named(s->dir_fd, name, s->marks[i].fd))
			unlinkat(s->dir_fd, name, 0);
		close(s->marks[i].fd);
	}
	/* the folder is held exactly while marks are (a tracer never marked holds none) */
	if (s->marks)
		close(s->dir_fd);
	s->dir_fd = -1;
	free(s->marks);
	s->marks = NULL;
	s->nr = 0;
}
