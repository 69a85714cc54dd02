// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Paths resolved through no link another user could plant (safepath.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "log.h"
#include "safepath.h"

#define MAX_HOPS 40 /* links followed in one path, as the kernel allows */

static bool forced_walk;

void safepath__force_walk(bool on)
{
	forced_walk = on;
}

const char *safepath__kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a folder";
	case S_IFLNK:
		return "a symbolic link";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
	case S_IFBLK:
		return "a device";
	default:
		return "not a regular file";
	}
}

static bool trusted_uid(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* NULL when a link of link_st in a folder of dir_st may be followed, else why not. */
static const char *distrust(const struct stat *dir_st, const struct stat *link_st, char *why,
			    size_t why_sz)
{
	if (!trusted_uid(link_st->st_uid))
		snprintf(why, why_sz, "owned by uid %u", (unsigned int)link_st->st_uid);
	else if (!trusted_uid(dir_st->st_uid))
		snprintf(why, why_sz, "in a folder of uid %u", (unsigned int)dir_st->st_uid);
	else if ((dir_st->st_mode & (S_IWGRP | S_IWOTH)) && !(dir_st->st_mode & S_ISVTX))
		snprintf(why, why_sz, "in a folder others can write");
	else
		return NULL;
	return why;
}

/*
 * path with "." and empty components dropped and "x/.." taken away by the
 * text; leading ".." of a relative path stay. 0 or -ENAMETOOLONG.
 */
static int normalize(const char *path, char *out, size_t out_sz)
{
	size_t len = 0, keep = path[0] == '/'; /* ".." never removes the leading "/" */

	if (out_sz < 2)
		return -ENAMETOOLONG;
	out[0] = '/';
	len = keep;
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");

		if (n == 2 && !strncmp(p, "..", 2)) {
			char *slash;
			size_t last;

			out[len] = '\0';
			slash = strrchr(out + keep, '/');
			last = slash ? (size_t)(slash - out) + 1 : keep;
			if (len > keep && strcmp(out + last, "..")) {
				/* the component before goes, and its slash */
				len = last > keep ? last - 1 : keep;
				n = 0;
			} else if (keep) {
				n = 0; /* "/.." is "/" */
			}
		} else if (n == 1 && *p == '.') {
			n = 0;
		}
		if (n) {
			if (len + (len > keep) + n + 1 > out_sz)
				return -ENAMETOOLONG;
			if (len > keep)
				out[len++] = '/';
			memcpy(out + len, p, n);
			len += n;
		}
		p += strcspn(p, "/");
		p += strspn(p, "/");
	}
	out[len] = '\0';
	return 0;
}

static int walk(int fd, const char *dir, int *hops, char *err, size_t err_sz);

/* fd's folder holds a link comp of link_st: the folder it leads to, if it may be followed. */
static int follow(int fd, const char *comp, const struct stat *link_st, const char *shown,
		  int *hops, char *err, size_t err_sz)
{
	char target[PATH_MAX], why[64];
	struct stat dir_st;
	ssize_t n;
	int ret;

	if (fstat(fd, &dir_st)) {
		ret = -errno;
		close(fd);
		return log_reason(err, err_sz, ret, "%s: %s", shown, strerror(-ret));
	}
	if (distrust(&dir_st, link_st, why, sizeof(why))) {
		close(fd);
		return log_reason(err, err_sz, -ELOOP,
				  "%s: a symbolic link in the path, %s: refusing "
				  "to follow it",
				  shown, why);
	}
	if (++*hops > MAX_HOPS) {
		close(fd);
		return log_reason(err, err_sz, -ELOOP, "%s: too many symbolic links", shown);
	}
	n = readlinkat(fd, comp, target, sizeof(target) - 1);
	if (n <= 0) {
		ret = n < 0 ? -errno : -ENOENT;
		close(fd);
		return log_reason(err, err_sz, ret, "%s: %s", shown, strerror(-ret));
	}
	target[n] = '\0';
	return walk(fd, target, hops, err, err_sz);
}

/* One component from the folder fd (which it takes): the folder it names, or -errno. */
static int step(int fd, const char *comp, const char *shown, int *hops, char *err, size_t err_sz)
{
	int next = openat(fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC), ret;
	struct stat st;

	if (next < 0 || fstat(next, &st)) {
		ret = -errno;
		if (next >= 0)
			close(next);
		close(fd);
		return log_reason(err, err_sz, ret, "%s: %s", shown, strerror(-ret));
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return next;
	}
	close(next);
	if (S_ISLNK(st.st_mode))
		return follow(fd, comp, &st, shown, hops, err, err_sz);
	close(fd);
	return log_reason(err, err_sz, -ENOTDIR, "%s: %s, not a folder", shown,
			  safepath__kind(st.st_mode));
}

/* The folder dir names from fd (which it takes; "/" starts at the root), a component at a time. */
static int walk(int fd, const char *dir, int *hops, char *err, size_t err_sz)
{
	char comp[NAME_MAX + 1], shown[PATH_MAX];
	const char *p = dir;

	if (*p == '/') {
		close(fd);
		fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return log_reason(err, err_sz, -errno, "/: %s", strerror(errno));
	}
	p += strspn(p, "/");
	while (*p && fd >= 0) {
		size_t n = strcspn(p, "/");

		if (n > NAME_MAX) {
			close(fd);
			return log_reason(err, err_sz, -ENAMETOOLONG, "%.*s: %s",
					  (int)(p - dir + n), dir, strerror(ENAMETOOLONG));
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		snprintf(shown, sizeof(shown), "%.*s", (int)(p - dir + n), dir);
		p += n;
		p += strspn(p, "/");
		if (strcmp(comp, "."))
			fd = step(fd, comp, shown, hops, err, err_sz);
	}
	return fd;
}

/* The folder dir names (normalized; "" is "."): openat2 first, the walk where it cannot. */
static int open_folder(const char *dir, int *hops, char *err, size_t err_sz)
{
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS};
	const char *no2 = getenv("SPECPROBE_NO_OPENAT2");
	int fd;

	if (!*dir)
		dir = ".";
	if (!forced_walk && !(no2 && *no2 && strcmp(no2, "0"))) {
		fd = syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof(how));
		if (fd >= 0)
			return fd;
		/* a link, missing, refused, or no openat2: the walk says which and why */
	}
	fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return log_reason(err, err_sz, -errno, "the current folder: %s", strerror(errno));
	return walk(fd, dir, hops, err, err_sz);
}

/* Split path (normalized) at its last component: dir gets the rest ("" for none). */
static void split(const char *path, char *dir, size_t dir_sz, const char **name)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		dir[0] = '\0';
		*name = path;
	} else {
		snprintf(dir, dir_sz, "%.*s", slash == path ? 1 : (int)(slash - path), path);
		*name = slash + 1;
	}
}

/* A link at sp's name that may be followed: sp moves to where it leads. 0 or -errno. */
static int follow_last(struct safepath *sp, const char *path, int *hops, char *err, size_t err_sz)
{
	char target[PATH_MAX], dir[PATH_MAX], why[64];
	const char *name;
	struct stat st, dir_st;
	ssize_t n;

	while (!fstatat(sp->dirfd, sp->name, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode)) {
		if (fstat(sp->dirfd, &dir_st))
			return log_reason(err, err_sz, -errno, "%s: %s", path, strerror(errno));
		if (distrust(&dir_st, &st, why, sizeof(why)))
			return log_reason(err, err_sz, -ELOOP,
					  "%s: a symbolic link, %s: refusing to "
					  "follow it",
					  path, why);
		if (++*hops > MAX_HOPS)
			return log_reason(err, err_sz, -ELOOP, "%s: too many symbolic links", path);
		n = readlinkat(sp->dirfd, sp->name, target, sizeof(target) - 1);
		if (n <= 0)
			return log_reason(err, err_sz, n ? -errno : -ENOENT, "%s: %s", path,
					  strerror(n ? errno : ENOENT));
		target[n] = '\0';
		split(target, dir, sizeof(dir), &name);
		if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
			/* it names a folder: that folder, as "." of itself */
			snprintf(dir, sizeof(dir), "%s", target);
			name = ".";
		}
		if (strlen(name) > NAME_MAX)
			return log_reason(err, err_sz, -ENAMETOOLONG, "%s: %s", target,
					  strerror(ENAMETOOLONG));
		snprintf(sp->name, sizeof(sp->name), "%s", name);
		sp->dirfd = walk(sp->dirfd, *dir ? dir : ".", hops, err, err_sz);
		if (sp->dirfd < 0)
			return sp->dirfd;
	}
	return 0;
}

/* O_PATH is enough to resolve from; a folder read or written through wants a real descriptor. */
static int reopen_dir(int fd)
{
	int real = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (real < 0)
		return fd; /* search-only (--x): O_PATH still serves the *at calls */
	close(fd);
	return real;
}

int safepath__resolve(const char *path, bool follow, struct safepath *out, char *err, size_t err_sz)
{
	char norm[PATH_MAX], dir[PATH_MAX];
	const char *name;
	int hops = 0, ret;

	*out = (struct safepath)SAFEPATH_INIT;
	if (!*path)
		return log_reason(err, err_sz, -ENOENT, "an empty path names no file");
	if (normalize(path, norm, sizeof(norm)))
		return log_reason(err, err_sz, -ENAMETOOLONG, "%s: %s", path,
				  strerror(ENAMETOOLONG));
	split(norm, dir, sizeof(dir), &name);
	if (!*name)
		name = ".";
	if (strlen(name) > NAME_MAX)
		return log_reason(err, err_sz, -ENAMETOOLONG, "%s: %s", path,
				  strerror(ENAMETOOLONG));
	snprintf(out->name, sizeof(out->name), "%s", name);
	ret = open_folder(dir, &hops, err, err_sz);
	if (ret < 0)
		return ret;
	out->dirfd = ret;
	if (follow && (ret = follow_last(out, path, &hops, err, err_sz))) {
		if (out->dirfd < 0)
			out->dirfd = -1; /* the walk took it */
		safepath__release(out);
		return ret;
	}
	out->dirfd = reopen_dir(out->dirfd);
	return 0;
}

void safepath__release(struct safepath *sp)
{
	if (sp->dirfd >= 0)
		close(sp->dirfd);
	sp->dirfd = -1;
}

int safepath__open_regular(int dirfd, const char *name, const char *path, char *err, size_t err_sz)
{
	struct stat st, opened;
	int fd, ret;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return log_reason(err, err_sz, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return log_reason(err, err_sz, S_ISLNK(st.st_mode) ? -ELOOP : -EINVAL,
				  "%s is %s, not a regular file: refusing to read it", path,
				  safepath__kind(st.st_mode));
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return log_reason(err, err_sz, -errno, "%s: %s", path, strerror(errno));
	/* the name may have changed between: what was opened must be what was looked at */
	if (fstat(fd, &opened) || !S_ISREG(opened.st_mode) || opened.st_ino != st.st_ino ||
	    opened.st_dev != st.st_dev) {
		ret = log_reason(err, err_sz, -EAGAIN,
				 "%s changed as it was opened: refusing to read it", path);
		close(fd);
		return ret;
	}
	return fd;
}

int safepath__open_file(const char *path, char *err, size_t err_sz)
{
	struct safepath sp;
	int fd = safepath__resolve(path, true, &sp, err, err_sz);

	if (fd)
		return fd;
	fd = safepath__open_regular(sp.dirfd, sp.name, path, err, err_sz);
	safepath__release(&sp);
	return fd;
}

int safepath__open_dir(const char *path, bool create, mode_t mode, char *err, size_t err_sz)
{
	struct safepath sp;
	int fd = safepath__resolve(path, true, &sp, err, err_sz);

	if (fd)
		return fd;
	if (create && mkdirat(sp.dirfd, sp.name, mode) && errno != EEXIST) {
		fd = log_reason(err, err_sz, -errno, "creating %s: %s", path, strerror(errno));
		safepath__release(&sp);
		return fd;
	}
	fd = openat(sp.dirfd, sp.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		struct stat st;

		fd = -errno;
		if (!fstatat(sp.dirfd, sp.name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(st.st_mode))
			log_reason(err, err_sz, -ENOTDIR, "%s is %s, not a folder", path,
				   safepath__kind(st.st_mode));
		else
			log_reason(err, err_sz, fd, "%s: %s", path, strerror(-fd));
	}
	safepath__release(&sp);
	return fd;
}
