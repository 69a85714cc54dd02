/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Record traced processes into a file; a tap sees the same records live. */
#ifndef __RECORDER_H
#define __RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include "trace_args.h"
#include "tracefile.h"

/* Sees the header, then every record exactly as it is written to the file. */
struct record_tap {
	void (*header)(void *ctx, const struct tf_header *hdr);
	void (*record)(void *ctx, const void *rec, size_t size);
	/* After each poll of the ring (at most 100 ms apart); non-zero stops the recording. */
	int (*poll)(void *ctx);
	void *ctx;
};

struct record_request {
	const struct target_args *targets;
	const struct recording_args *rec;	/* output NULL: records go to the tap only */
	const struct record_tap *tap;	/* NULL: none */
};

/* Trace, record until done, and report how it went; an exit status (0, 1). */
int recorder__run(const struct record_request *req);

#endif /* __RECORDER_H */
