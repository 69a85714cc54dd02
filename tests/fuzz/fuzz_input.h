/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Every reader under fuzz takes a path, so the input goes into a memory file
 * and the reader opens it through /proc/self/fd, as it would open a file.
 */
#ifndef __FUZZ_INPUT_H
#define __FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static int fuzz_input_fd = -1;

/* The path of a file holding exactly data[0..size); the same path every call. */
static inline const char *fuzz_input_path(const uint8_t *data, size_t size)
{
	static char path[64];

	if (fuzz_input_fd < 0) {
		fuzz_input_fd = memfd_create("fuzz-input", MFD_CLOEXEC);
		if (fuzz_input_fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fuzz_input_fd);
	}
	if (ftruncate(fuzz_input_fd, 0) ||
	    (size && pwrite(fuzz_input_fd, data, size, 0) != (ssize_t)size)) {
		perror("writing the fuzz input");
		abort();
	}
	return path;
}

/* Renderers write here: a real FILE whose bytes go nowhere. */
static inline FILE *fuzz_devnull(void)
{
	static FILE *out;

	if (!out)
		out = fopen("/dev/null", "we");
	if (!out)
		abort();
	return out;
}

#endif /* __FUZZ_INPUT_H */
