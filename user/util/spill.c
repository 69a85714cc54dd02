// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Temporary files for records a pass keeps for the end (spill.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "spill.h"

static bool failed;

const char *spill__dir(void)
{
	const char *dir = getenv("TMPDIR");

	return dir && *dir ? dir : "/tmp";
}

bool spill__failed(void)
{
	return failed;
}

static int fail(void)
{
	int err = errno ? errno : EIO;

	failed = true;
	return -err;
}

FILE *spill__open(void)
{
	char path[4096];
	FILE *f;
	int fd;

	/* a file with no name at all: nothing to plant in its place, nothing left behind */
	fd = open(spill__dir(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		goto opened;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
		fail();
		return NULL;
	}
	if (snprintf(path, sizeof(path), "%s/specprobe-XXXXXX", spill__dir()) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		fail();
		return NULL;
	}
	fd = mkstemp(path);
	if (fd < 0) {
		fail();
		return NULL;
	}
	/* nothing to clean up after, whatever ends the process */
	unlink(path);
opened:
	f = fdopen(fd, "w+");
	if (!f) {
		int err = errno;

		close(fd);
		errno = err;
		fail();
	}
	return f;
}

int spill__write(FILE **f, const void *rec, size_t size)
{
	errno = 0;
	if (!*f && !(*f = spill__open()))
		return -errno;
	if (fwrite(rec, size, 1, *f) != 1)
		return fail();
	return 0;
}

int spill__flush(FILE *f)
{
	errno = 0;
	if (f && (fflush(f) || ferror(f)))
		return fail();
	return 0;
}
