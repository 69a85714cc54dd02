// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <stdarg.h>
#include <stdio.h>
#include "log.h"

bool log_verbose;

#define HELD_LINES 64

/* Lines kept while a full-screen view owns the terminal, printed once it lets go. */
static char held[HELD_LINES][256];
static int nr_held, held_lost;
static bool holding;

static void vlog(const char *level, const char *fmt, va_list ap)
{
	int n;

	if (holding) {
		if (nr_held == HELD_LINES) {
			held_lost++;
			return;
		}
		n = snprintf(held[nr_held], sizeof(held[0]), "specprobe: %s", level);
		vsnprintf(held[nr_held] + n, sizeof(held[0]) - n, fmt, ap);
		nr_held++;
		return;
	}
	fprintf(stderr, "specprobe: %s", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void log_hold(bool hold)
{
	holding = hold;
	if (hold)
		return;
	for (int i = 0; i < nr_held; i++)
		fprintf(stderr, "%s\n", held[i]);
	if (held_lost)
		fprintf(stderr, "specprobe: %d more messages\n", held_lost);
	nr_held = held_lost = 0;
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

int log_reason(char *err, size_t err_sz, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && err_sz) {
		va_start(ap, fmt);
		vsnprintf(err, err_sz, fmt, ap);
		va_end(ap);
	}
	return ret;
}
