// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Outputs written aside and renamed into place; inputs that must be regular files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include "log.h"
#include "outfile.h"
#include "safepath.h"

#define TMP_TRIES 64
#define TMP_NAME_MAX 200 /* of the final name, kept in the temporary one */

/* What is at name in dirfd now: 0 when the output may take the name. */
static int check_target(int dirfd, const char *name, const char *path, bool force, char *err,
			size_t err_sz)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			return 0;
		return log_reason(err, err_sz, -errno, "%s: %s", path, strerror(errno));
	}
	if (S_ISLNK(st.st_mode))
		return log_reason(err, err_sz, -ELOOP,
				  "%s is a symbolic link: refusing to write through it", path);
	if (!S_ISREG(st.st_mode))
		return log_reason(err, err_sz, -EEXIST,
				  "%s is not a regular file: refusing to replace it", path);
	if (!force)
		return log_reason(err, err_sz, -EEXIST, "%s exists: use --force to overwrite",
				  path);
	return 0;
}

int outfile__check(const char *path, bool force, char *err, size_t err_sz)
{
	struct safepath sp;
	int ret = safepath__resolve(path, false, &sp, err, err_sz);

	if (!ret)
		ret = check_target(sp.dirfd, sp.name, path, force, err, err_sz);
	safepath__release(&sp);
	return ret;
}

/* ".NAME.RANDOM": in the same folder, so the rename never crosses a file system. */
static char *tmp_name(const char *name)
{
	static unsigned int counter;
	unsigned int r;
	char *tmp;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned int)getpid() << 16 ^ (unsigned int)time(NULL) ^ counter++;
	if (asprintf(&tmp, ".%.*s.%08x", TMP_NAME_MAX, name, r) < 0)
		return NULL;
	return tmp;
}

/* The file just made must be ours alone: a regular file of this user, with one name. */
static int check_created(struct outfile *o, mode_t mode, char *err, size_t err_sz)
{
	struct stat st;

	if (fstat(o->fd, &st))
		return log_reason(err, err_sz, -errno, "creating %s: %s", o->path, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1)
		return log_reason(err, err_sz, -EPERM,
				  "%s: the file created for it is not this user's "
				  "own (uid %u, %lu links): refusing to write it",
				  o->path, (unsigned int)st.st_uid, (unsigned long)st.st_nlink);
	/* the mode asked for, whatever the umask */
	if (fchmod(o->fd, mode))
		return log_reason(err, err_sz, -errno, "setting the mode of %s: %s", o->path,
				  strerror(errno));
	return 0;
}

/* The temporary file, made here and now in o's folder. */
static int create_tmp(struct outfile *o, mode_t mode, char *err, size_t err_sz)
{
	int ret;

	for (int i = 0; i < TMP_TRIES; i++) {
		free(o->tmp);
		o->tmp = tmp_name(o->name);
		if (!o->tmp)
			return log_reason(err, err_sz, -ENOMEM, "%s: out of memory", o->path);
		/* O_EXCL: a file made here and now, created with its mode; never a FIFO's wait */
		o->fd =
		    openat(o->dirfd, o->tmp,
			   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
		if (o->fd >= 0)
			return check_created(o, mode, err, err_sz);
		if (errno != EEXIST)
			break;
	}
	ret = -errno;
	free(o->tmp);
	o->tmp = NULL;
	return log_reason(err, err_sz, ret, "creating %s: %s", o->path, strerror(-ret));
}

int outfile__openat(struct outfile *o, int dirfd, const char *name, const char *path, bool force,
		    mode_t mode, char *err, size_t err_sz)
{
	int ret;

	*o = (struct outfile)OUTFILE_INIT;
	o->force = force;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return log_reason(err, err_sz, -EISDIR, "%s names a folder, not a file", path);
	ret = check_target(dirfd, name, path, force, err, err_sz);
	if (ret)
		return ret;
	o->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (o->dirfd < 0)
		return log_reason(err, err_sz, -errno, "%s: %s", path, strerror(errno));
	o->path = strdup(path);
	o->name = strdup(name);
	ret = o->path && o->name ? create_tmp(o, mode, err, err_sz)
				 : log_reason(err, err_sz, -ENOMEM, "%s: out of memory", path);
	if (ret)
		outfile__discard(o);
	return ret;
}

int outfile__open(struct outfile *o, const char *path, bool force, mode_t mode, char *err,
		  size_t err_sz)
{
	struct safepath sp;
	int ret;

	*o = (struct outfile)OUTFILE_INIT;
	ret = safepath__resolve(path, false, &sp, err, err_sz);
	if (!ret)
		ret = outfile__openat(o, sp.dirfd, sp.name, path, force, mode, err, err_sz);
	safepath__release(&sp);
	return ret;
}

/* Without force the name must still be free: never replace what came meanwhile. */
static int rename_noreplace(int dirfd, const char *from, const char *to)
{
	if (!renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* a file system without it: a second name, then the first goes */
	if (linkat(dirfd, from, dirfd, to, 0))
		return -errno;
	unlinkat(dirfd, from, 0);
	return 0;
}

int outfile__publish(struct outfile *o, char *err, size_t err_sz)
{
	int ret;

	if (!o->tmp)
		return 0;
	if (o->force)
		ret = renameat(o->dirfd, o->tmp, o->dirfd, o->name) ? -errno : 0;
	else
		ret = rename_noreplace(o->dirfd, o->tmp, o->name);
	if (ret == -EEXIST)
		log_reason(err, err_sz, ret, "%s exists: use --force to overwrite", o->path);
	else if (ret)
		log_reason(err, err_sz, ret, "renaming to %s: %s", o->path, strerror(-ret));
	if (ret)
		unlinkat(o->dirfd, o->tmp, 0);
	free(o->tmp);
	o->tmp = NULL;
	return ret;
}

int outfile__commit(struct outfile *o, char *err, size_t err_sz)
{
	int ret = 0;

	if (o->fd >= 0 && close(o->fd))
		ret = log_reason(err, err_sz, -errno, "writing %s: %s", o->path, strerror(errno));
	o->fd = -1;
	if (!ret)
		ret = outfile__publish(o, err, err_sz);
	if (ret)
		outfile__discard(o);
	return ret;
}

void outfile__discard(struct outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp && o->dirfd >= 0)
		unlinkat(o->dirfd, o->tmp, 0);
	if (o->dirfd >= 0)
		close(o->dirfd);
	o->dirfd = -1;
	free(o->tmp);
	free(o->path);
	free(o->name);
	o->tmp = o->path = o->name = NULL;
}

int infile__open(const char *path)
{
	struct stat st;
	int fd, ret;

	/* refused before it is opened: opening a device may already do something */
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOTREG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* and again on what was opened, should the name have changed between */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		ret = S_ISREG(st.st_mode) ? -errno : -ENOTREG;
		close(fd);
		return ret;
	}
	return fd;
}

const char *infile__strerror(int err)
{
	return err == ENOTREG ? "not a regular file" : strerror(err);
}
