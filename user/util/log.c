// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <stdarg.h>
#include <stdio.h>
#include "log.h"

bool log_verbose;

static void vlog(const char *level, const char *fmt, va_list ap)
{
	fprintf(stderr, "specprobe: %s", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

#define DEFINE_LOG(fn, level, cond)		\
	void fn(const char *fmt, ...)		\
	{					\
		va_list ap;			\
		if (!(cond))			\
			return;			\
		va_start(ap, fmt);		\
		vlog(level, fmt, ap);		\
		va_end(ap);			\
	}

DEFINE_LOG(log_error, "error: ", 1)
DEFINE_LOG(log_warn, "warning: ", 1)
DEFINE_LOG(log_info, "", 1)
DEFINE_LOG(log_debug, "debug: ", log_verbose)
