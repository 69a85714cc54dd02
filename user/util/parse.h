/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
#ifndef __PARSE_H
#define __PARSE_H

/* Strict non-negative decimal integer; 0 or -EINVAL. */
int parse__ulong(const char *arg, unsigned long *val);

/* A size: digits, then K, M or G (powers of 1024) or nothing (bytes); 0 or -EINVAL. */
int parse__size(const char *arg, unsigned long long *bytes);
/* A duration (parse__duration_ns, bare seconds) more than 0 and at most a day, to ns. */
int parse__seconds_ns(const char *arg, unsigned long long *ns);

/*
 * A duration: a number, a fraction allowed, then ms, s or m, or nothing for bare_unit_ns
 * ("30", "1.5s", "500ms", "2m"); at most a year, 0 allowed; to ns. 0 or -EINVAL.
 */
int parse__duration_ns(const char *arg, unsigned long long bare_unit_ns, unsigned long long *ns);
#define DURATION_HINT "e.g. 30, 1.5s, 500ms or 2m"
#define PARSE_NS_PER_S 1000000000ull
#define PARSE_NS_PER_MS 1000000ull

#endif /* __PARSE_H */
