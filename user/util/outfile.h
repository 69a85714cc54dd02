/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Files named by the user. An output never changes a file in place: it is
 * written under a temporary name in its own folder (O_EXCL, never through a
 * link, created with its final mode) and renamed onto its name, at once or
 * once whole. A file already at the name is replaced (with force), never
 * truncated or opened, so one that someone else planted stays theirs, as it was.
 * Inputs open without blocking on a FIFO and must be regular files.
 */
#ifndef __OUTFILE_H
#define __OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct outfile {
	int fd;			/* -1 once closed */
	char *path;		/* the name it gets */
	char *tmp;		/* its name until renamed; NULL after */
	bool force;		/* replace a regular file at path */
};

#define OUTFILE_INIT { .fd = -1 }

/*
 * Check path (a symlink or any non-regular file is refused; an existing file
 * without force) and create the temporary file. 0, or -errno with a one-line
 * reason in err and nothing left behind.
 */
int outfile__open(struct outfile *o, const char *path, bool force, mode_t mode, char *err,
		  size_t err_sz);
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
