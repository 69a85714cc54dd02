/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Files named by the user. An output never changes a file in place: it is
 * written under a temporary name in its own folder (O_EXCL, never through a
 * link, created with its final mode) and renamed onto its name, at once or
 * once whole. A file already at the name is replaced (with force), never
 * truncated or opened, so one that someone else planted stays theirs, as it was.
 * The folder is resolved once through no link another user could plant
 * (safepath.h) and held open: every name is made relative to it.
 * Inputs open without blocking on a FIFO and must be regular files.
 */
#ifndef __OUTFILE_H
#define __OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct outfile {
	int fd;			/* -1 once closed */
	int dirfd;		/* its folder, held open; -1 once discarded */
	char *path;		/* the name it gets, as the user gave it */
	char *name;		/* that name in dirfd */
	char *tmp;		/* its name in dirfd until renamed; NULL after */
	bool force;		/* replace a regular file at path */
};

#define OUTFILE_INIT { .fd = -1, .dirfd = -1 }

/*
 * Check path (a symlink or any non-regular file is refused; an existing file
 * without force) and create the temporary file. 0, or -errno with a one-line
 * reason in err and nothing left behind.
 */
int outfile__open(struct outfile *o, const char *path, bool force, mode_t mode, char *err,
		  size_t err_sz);
/* The same for name in the folder dirfd (not taken: the outfile holds a copy), shown as path. */
int outfile__openat(struct outfile *o, int dirfd, const char *name, const char *path, bool force,
		    mode_t mode, char *err, size_t err_sz);
/* What outfile__open checks before it creates anything: 0 or -errno with the reason. */
int outfile__check(const char *path, bool force, char *err, size_t err_sz);
/* Rename it onto path now; fd stays open. 0 or -errno with the reason in err. */
int outfile__publish(struct outfile *o, char *err, size_t err_sz);
/* Close fd (a failed close is a failed write), then publish; on failure nothing is left. */
int outfile__commit(struct outfile *o, char *err, size_t err_sz);
/* Close, and remove the temporary file unless published. Accepts OUTFILE_INIT. */
void outfile__discard(struct outfile *o);

/* Not an errno of the kernel's: what infile__open says of a FIFO, device or folder. */
#define ENOTREG 4095
/* Open path read-only (O_NONBLOCK, O_CLOEXEC): a descriptor, -errno, or -ENOTREG. */
int infile__open(const char *path);
/* strerror, which knows ENOTREG too. */
const char *infile__strerror(int err);

#endif /* __OUTFILE_H */
