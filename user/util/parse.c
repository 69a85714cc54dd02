// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include "parse.h"

int parse__ulong(const char *arg, unsigned long *val)
{
	char *end;

	errno = 0;
	*val = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-')
		return -EINVAL;
	return 0;
}
