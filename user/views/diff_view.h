/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A computed diff as text for a person, or JSON (docs/diff-json.md). */
#ifndef __DIFF_VIEW_H
#define __DIFF_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "diff.h"

#define DIFF_JSON_VERSION 1

/* Setup row `row` (0, 1, ...) as text for A and B, and its name; false past the last. */
bool diff__setup_row(const struct diff *d, int row, const char **name, char *a, char *b,
		     size_t len);

void diff__text(FILE *out, const struct diff *d);
void diff__json(FILE *out, const struct diff *d);

#endif /* __DIFF_VIEW_H */
