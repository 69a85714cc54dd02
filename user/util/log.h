/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* One-line messages to stderr, prefixed with the program name. */
#ifndef __LOG_H
#define __LOG_H

#include <stdbool.h>
#include <stddef.h>

extern bool log_verbose;

void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A one-line reason into err (when err_sz is not 0), for the caller to print; returns ret. */
int log_reason(char *err, size_t err_sz, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* true: keep messages (a full-screen view owns the terminal); false: print what was kept. */
void log_hold(bool hold);

#endif /* __LOG_H */
