/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A recording run from another command: report records live through it. */
#ifndef __RECORD_H
#define __RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include "cli.h"
#include "tracefile.h"

/* Sees the header, then every record exactly as it is written to the file. */
struct record_tap {
	void (*header)(void *ctx, const struct tf_header *hdr);
	void (*record)(void *ctx, const void *rec, size_t size);
	void *ctx;
};

struct record_request {
	const struct target_args *targets;
	const struct recording_args *rec;	/* output required */
	const struct record_tap *tap;	/* NULL: none */
};

/* What 'specprobe record' does after parsing; its exit status. */
int record__run(const struct record_request *req);

#endif /* __RECORD_H */
