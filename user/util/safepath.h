/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The paths of files specprobe writes, and of recordings it reads, resolved
 * so that no link another user could plant redirects them. The rule: a
 * symbolic link anywhere in the path is followed only when the link and the
 * folder holding it belong to root or to this user, and that folder is
 * writable by no one else (or sticky, as /tmp is); any other link is refused
 * with a line naming it. ".." is taken by the text (a/b/../c is a/c): with
 * no link followed, that is where the name leads.
 *
 * The folder is resolved once and held open: files are made and opened
 * relative to it, so renaming a folder of the path afterwards, or planting a
 * link in its place, redirects nothing. A path with no link resolves in one
 * openat2(RESOLVE_NO_SYMLINKS); without openat2 (kernels before 5.6, or a
 * filter refusing it), or with a link in the path, the components are walked
 * one by one with O_NOFOLLOW. SPECPROBE_NO_OPENAT2=1 always walks.
 */
#ifndef __SAFEPATH_H
#define __SAFEPATH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct safepath {
	int dirfd;			/* the folder, held open; -1 when none */
	char name[NAME_MAX + 1];	/* the last component, in that folder */
};

#define SAFEPATH_INIT { .dirfd = -1 }

/*
 * Resolve path to the folder of its last component. follow_last: a trusted
 * link there is followed as well (a reader's), and an untrusted one refused;
 * otherwise the last component is left as it is (a writer replaces it, never
 * writes through it). The name need not exist. 0, or -errno with a line
 * naming the path and the reason in err.
 */
int safepath__resolve(const char *path, bool follow_last, struct safepath *out, char *err,
		      size_t err_sz);
/* Close the folder; accepts SAFEPATH_INIT. */
void safepath__release(struct safepath *sp);

/*
 * Open name in dirfd read-only (O_NONBLOCK, O_CLOEXEC), refusing anything but
 * a regular file before it is opened (opening a device may already do
 * something) and again after. A descriptor, or -errno with the reason in err,
 * shown as path.
 */
int safepath__open_regular(int dirfd, const char *name, const char *path, char *err,
			   size_t err_sz);
/* Resolve (following trusted links) and open a regular file to read, as above. */
int safepath__open_file(const char *path, char *err, size_t err_sz);
/*
 * The folder path itself, held open (O_DIRECTORY), following trusted links;
 * made with mode first when create and missing. A descriptor or -errno.
 */
int safepath__open_dir(const char *path, bool create, mode_t mode, char *err, size_t err_sz);

/* "a symbolic link", "a FIFO", "a folder" ...: what a file of this mode is. */
const char *safepath__kind(mode_t mode);
/* The walk even where openat2 works (tests of the fallback); also SPECPROBE_NO_OPENAT2=1. */
void safepath__force_walk(bool on);

#endif /* __SAFEPATH_H */
