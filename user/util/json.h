/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* JSON string literals, shared by every JSON output. */
#ifndef __JSON_H
#define __JSON_H

#include <stddef.h>
#include <stdio.h>

/* Write at most max_len bytes of s (up to its NUL) as a JSON string literal. */
void json__string(FILE *out, const char *s, size_t max_len);

#endif /* __JSON_H */
