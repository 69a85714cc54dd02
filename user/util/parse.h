/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
#ifndef __PARSE_H
#define __PARSE_H

/* Strict non-negative decimal integer; 0 or -EINVAL. */
int parse__ulong(const char *arg, unsigned long *val);

#endif /* __PARSE_H */
