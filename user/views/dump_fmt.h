/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Calls as text lines and as JSON objects (one per line). */
#ifndef __DUMP_FMT_H
#define __DUMP_FMT_H

#include <stdbool.h>
#include <stdio.h>
#include "decode.h"
#include "tracefile.h"

/* Catalogue base name of a probe, "?" when the cookie is unknown. */
const char *dump_fmt__name(const struct tf_header *hdr, __u32 probe);
void dump_fmt__json(FILE *out, const struct tf_header *hdr, const struct sp_call *call);
/* The same, with "stack" (named from stacks) when the call has one. */
void dump_fmt__json_stack(FILE *out, const struct tf_header *hdr, const struct callstacks *stacks,
			  const struct sp_call *call);
void dump_fmt__text(FILE *out, const struct tf_header *hdr, const struct sp_call *call);
/* A --server-metrics sample, or a failed scrape: a line as calls have, or a JSON object. */
void dump_fmt__srvmetric_text(FILE *out, const struct sp_srvmetric_rec *m);
void dump_fmt__srvmetric_json(FILE *out, const struct sp_srvmetric_rec *m);

/*
 * --gpu: an execution (SP_REC_GPU, kernel its kernel's name or NULL), a
 * kernel name (SP_REC_GPU_NAME) or an agent's state (SP_REC_GPU_STATE); a
 * line as calls have, or a JSON object with "record" "gpu", "gpu_name" or
 * "gpu_state". rec is a whole record of size bytes.
 */
void dump_fmt__gpu(FILE *out, const struct sp_rec_hdr *rec, size_t size, const char *kernel,
		   bool json);
/* What an execution ran ("graph", "kernel", "memcpy", "memset"), "unknown" for others. */
const char *dump_fmt__gpu_kind(__u8 kind);

#endif /* __DUMP_FMT_H */
