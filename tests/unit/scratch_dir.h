/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A directory of its own under /tmp for each test (cmocka state), removed afterwards. */
#ifndef __SCRATCH_DIR_H
#define __SCRATCH_DIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline int scratch_dir_new(void **state, const char *prefix)
{
	char *dir = malloc(256);

	if (!dir)
		return -1;
	snprintf(dir, 256, "/tmp/%s.XXXXXX", prefix);
	if (!mkdtemp(dir)) {
		free(dir);
		return -1;
	}
	*state = dir;
	return 0;
}

/* The files it holds, then the directory: the tests make no subdirectories. */
static inline int scratch_dir_free(void **state)
{
	char *dir = *state;
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
	free(dir);
	return 0;
}

#endif /* __SCRATCH_DIR_H */
