/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Records in (from a file or live, the same way), the model and its analyses out. */
#ifndef __REPORTER_H
#define __REPORTER_H

#include <stddef.h>
#include "results.h"
#include "tracefile.h"

struct reporter;

/* A reporter for records of a trace described by hdr. NULL on no memory. */
struct reporter *reporter__new(const struct tf_header *hdr);
/* Any record, in the order the ring buffer (or the file) gave it; 0 or -errno. */
int reporter__feed(struct reporter *r, const void *rec, size_t size);
/* End of input: the last calls, the analyses; 0 or -errno. */
int reporter__finish(struct reporter *r);
/* After finish: what the outputs are made of; NULL before. */
const struct results *reporter__results(const struct reporter *r);
void reporter__free(struct reporter *r);

#endif /* __REPORTER_H */
