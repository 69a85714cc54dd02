/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
#ifndef __PARSE_H
#define __PARSE_H

/* Strict non-negative decimal integer; 0 or -EINVAL. */
int parse__ulong(const char *arg, unsigned long *val);

/* A size: digits, then K, M or G (powers of 1024) or nothing (bytes); 0 or -EINVAL. */
int parse__size(const char *arg, unsigned long long *bytes);
/* Seconds, a fraction allowed ("2", "0.5"), more than 0 and at most a day, to ns. */
int parse__seconds_ns(const char *arg, unsigned long long *ns);

#endif /* __PARSE_H */
