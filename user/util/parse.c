// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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
	if (parse__duration_ns(arg, PARSE_NS_PER_S, ns) || !*ns || *ns > 86400 * PARSE_NS_PER_S)
		return -EINVAL;
	return 0;
}

/* The unit after a duration's number, in ns; 0 for an unknown one. */
static double duration_unit_ns(const char *unit, double bare_unit_ns)
{
	if (!*unit)
		return bare_unit_ns;
	if (!strcmp(unit, "ms"))
		return 1e6;
	if (!strcmp(unit, "s"))
		return 1e9;
	if (!strcmp(unit, "m"))
		return 60e9;
	return 0;
}

int parse__duration_ns(const char *arg, unsigned long long bare_unit_ns, unsigned long long *ns)
{
	double v, unit_ns;
	char *end;

	/* strtod would take hex, inf and nan, and skip leading blanks */
	if (!(arg[0] >= '0' && arg[0] <= '9') && arg[0] != '.')
		return -EINVAL;
	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || strpbrk(arg, "xXpP"))
		return -EINVAL;
	unit_ns = duration_unit_ns(end, bare_unit_ns);
	/* a year at most: far from overflowing 64 bits of ns */
	if (!unit_ns || !isfinite(v) || v * unit_ns > 365 * 86400e9)
		return -EINVAL;
	*ns = (unsigned long long)(v * unit_ns + 0.5);
	return 0;
}
