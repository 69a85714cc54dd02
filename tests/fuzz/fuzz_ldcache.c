// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Any bytes as /etc/ld.so.cache, looked up for libcuda and for a library it does list. */
#include <string.h>
#include "fuzz_input.h"
#include "ldsearch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_path(data, size);
	char found[4096];

	ldsearch__cache(path, "libcuda.so.1", found, sizeof(found));
	ldsearch__cache(path, "libc.so.6", found, sizeof(found));
	return 0;
}
