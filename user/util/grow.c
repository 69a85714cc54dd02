// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "grow.h"

int grow__zeroed(void **arr, size_t *nr, size_t want, size_t size)
{
	void *grown;

	if (want <= *nr)
		return 0;
	grown = realloc(*arr, want * size);
	if (!grown)
		return -ENOMEM;
	memset((char *)grown + *nr * size, 0, (want - *nr) * size);
	*arr = grown;
	*nr = want;
	return 0;
}
