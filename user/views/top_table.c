// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Fitting top's tables to a width: shrink to content, shorten, then drop by priority. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "top_table.h"

void tt__init(struct top_table *t, const struct tt_col *cols, int nr_cols, int indent)
{
	t->cols = cols;
	t->nr_cols = nr_cols < TT_MAX_COLS ? nr_cols : TT_MAX_COLS;
	t->nr_rows = 0;
	t->indent = indent;
	memset(t->shown, 0, sizeof(t->shown));
}

int tt__add_row(struct top_table *t)
{
	if (t->nr_rows >= TT_MAX_ROWS)
		return -1;
	memset(t->cells[t->nr_rows], 0, sizeof(t->cells[t->nr_rows]));
	return t->nr_rows++;
}

void tt__set(struct top_table *t, int row, int col, int style, const char *fmt, ...)
{
	va_list ap;

	if (row < 0 || row >= t->nr_rows || col < 0 || col >= t->nr_cols)
		return;
	va_start(ap, fmt);
	vsnprintf(t->cells[row][col].text, TT_CELL, fmt, ap);
	va_end(ap);
	t->cells[row][col].style = style;
}

static int widest(const struct top_table *t, int col)
{
	int w = 0;

	for (int r = 0; r < t->nr_rows; r++) {
		int n = (int)strlen(t->cells[r][col].text);

		w = n > w ? n : w;
	}
	return w;
}

static int max_of(int a, int b)
{
	return a > b ? a : b;
}

static int total(const struct top_table *t, const int *w)
{
	int sum = t->indent, n = 0;

	for (int c = 0; c < t->nr_cols; c++)
		if (w[c]) {
			sum += w[c];
			n++;
		}
	return n ? sum + n - 1 : sum;
}

/* The least needed column still in, -1: none left but the first. */
static int least_needed(const struct top_table *t, const int *w)
{
	int least = -1;

	for (int c = 1; c < t->nr_cols; c++)
		if (w[c] && (least < 0 || t->cols[c].prio < t->cols[least].prio))
			least = c;
	return least;
}

/* Room left goes to the flexible columns first, then pads text columns back. */
static void spread(const struct top_table *t, int *w, const int *want, int room)
{
	for (int pass = 0; pass < 2; pass++)
		for (int c = 0; c < t->nr_cols && room > 0; c++) {
			int more;

			if (!w[c] || (t->cols[c].min_width > 0) != !pass)
				continue;
			more = want[c] - w[c] < room ? want[c] - w[c] : room;
			if (more > 0) {
				w[c] += more;
				room -= more;
			}
		}
}

void tt__fit(struct top_table *t, int width)
{
	int want[TT_MAX_COLS], w[TT_MAX_COLS], drop;

	for (int c = 0; c < t->nr_cols; c++) {
		const struct tt_col *col = &t->cols[c];
		int content = max_of((int)strlen(col->head), widest(t, c));

		want[c] = max_of(col->width, content);
		/* text shrinks to its content, a flexible column to its least */
		w[c] = col->min_width > 0 ? col->min_width : col->left ? content : want[c];
	}
	if (width < 0) {
		memcpy(t->shown, want, sizeof(want));
		return;
	}
	while (total(t, w) > width && (drop = least_needed(t, w)) >= 0)
		w[drop] = 0;
	if (total(t, w) > width)	/* the first column alone: cut it */
		w[0] = max_of(1, width - t->indent);
	spread(t, w, want, width - total(t, w));
	memcpy(t->shown, w, sizeof(w));
}

int tt__x(const struct top_table *t, int col)
{
	int x = t->indent;

	for (int c = 0; c < col; c++)
		if (t->shown[c])
			x += t->shown[c] + 1;
	return x;
}

void tt__cell(const struct top_table *t, int row, int col, char *buf, size_t size)
{
	const char *text = row < 0 ? t->cols[col].head : t->cells[row][col].text;
	int w = t->shown[col], n = (int)strlen(text);

	if (size < 2) {
		if (size)
			buf[0] = '\0';
		return;
	}
	w = w < (int)size - 1 ? w : (int)size - 1;
	if (w <= 0) {
		buf[0] = '\0';
	} else if (n > w) {
		snprintf(buf, size, "%.*s~", w > 1 ? w - 1 : 0, text);
		buf[w] = '\0';
	} else if (t->cols[col].left) {
		snprintf(buf, size, "%-*s", w, text);
	} else {
		snprintf(buf, size, "%*s", w, text);
	}
}

void tt__line(const struct top_table *t, int row, char *buf, size_t size)
{
	size_t len = 0;
	char cell[TT_CELL + 1];

	buf[0] = '\0';
	for (int c = 0; c < t->nr_cols; c++) {
		if (!t->shown[c])
			continue;
		tt__cell(t, row, c, cell, sizeof(cell));
		len += snprintf(buf + len, len < size ? size - len : 0, "%*s%s",
				len ? 1 : t->indent, "", cell);
		if (len >= size)
			break;
	}
	len = strlen(buf);
	while (len && buf[len - 1] == ' ')
		buf[--len] = '\0';
}

void tt__cut(char *buf, size_t size, const char *text, int width)
{
	int n = (int)strlen(text);

	if (width < 0 || n <= width) {
		snprintf(buf, size, "%s", text);
		return;
	}
	snprintf(buf, size, "%.*s~", width > 1 ? width - 1 : 0, text);
	if (width < (int)size)
		buf[width] = '\0';
}
