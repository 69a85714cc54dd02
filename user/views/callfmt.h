/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Calls as text lines and as JSON objects (one per line). */
#ifndef __CALLFMT_H
#define __CALLFMT_H

#include <stdio.h>
#include "decode.h"
#include "tracefile.h"

/* Catalogue base name of a probe, "?" when the cookie is unknown. */
const char *callfmt__name(const struct tf_header *hdr, __u32 probe);
void callfmt__json(FILE *out, const struct tf_header *hdr, const struct sp_call *call);
void callfmt__text(FILE *out, const struct tf_header *hdr, const struct sp_call *call);
/* Write s as a JSON string literal. */
void callfmt__json_string(FILE *out, const char *s, size_t max_len);

#endif /* __CALLFMT_H */
