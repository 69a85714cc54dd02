// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <math.h>
#include <stdint.h>
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

int parse__size(const char *arg, unsigned long long *bytes)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || arg[0] == '-' || arg[0] == '+')
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = v << shift;
	return 0;
}

int parse__seconds_ns(const char *arg, unsigned long long *ns)
{
	double v;
	char *end;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v <= 0 || v > 86400)
		return -EINVAL;
	*ns = (unsigned long long)(v * 1e9);
	return *ns ? 0 : -EINVAL;
}
