/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A table of top that fits a width: when the line would be too long its text columns
 * shrink to their content, a flexible column shortens, then the least needed columns
 * go, so that no line wraps. The screen and the batch text render the same tables.
 */
#ifndef __TOP_TABLE_H
#define __TOP_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#define TT_MAX_COLS 20
#define TT_MAX_ROWS 64
#define TT_CELL 128

struct tt_col {
	const char *head;
	int width;		/* preferred width; a flexible column's most */
	int prio;		/* kept longer the higher; the first column's is the highest */
	bool left;		/* text, left-aligned */
	int min_width;		/* > 0: flexible, shortened down to this */
};

struct tt_cell {
	char text[TT_CELL];
	int style;		/* the renderer's: colours, attributes */
};

struct top_table {
	const struct tt_col *cols;
	int nr_cols, nr_rows;
	int indent;		/* spaces before the first column */
	int shown[TT_MAX_COLS];	/* each column's width once fitted, 0: left out */
	struct tt_cell cells[TT_MAX_ROWS][TT_MAX_COLS];
};

void tt__init(struct top_table *t, const struct tt_col *cols, int nr_cols, int indent);
/* A new row, -1 when the table is full. */
int tt__add_row(struct top_table *t);
void tt__set(struct top_table *t, int row, int col, int style, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* The widths for lines of at most width columns; width < 0: no limit. */
void tt__fit(struct top_table *t, int width);
/* Where a shown column starts. */
int tt__x(const struct top_table *t, int col);
/* A cell as shown (padded to its width, or cut with '~'); row -1: the header. */
void tt__cell(const struct top_table *t, int row, int col, char *buf, size_t size);
/* A whole line, without trailing spaces; row -1: the header. */
void tt__line(const struct top_table *t, int row, char *buf, size_t size);
/* A line of text cut to width (< 0: no limit), with '~' where it was cut. */
void tt__cut(char *buf, size_t size, const char *text, int width);

#endif /* __TOP_TABLE_H */
