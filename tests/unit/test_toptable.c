// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* top's tables at every width: no line longer, the least needed columns gone first. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "top_table.h"

static const struct tt_col cols[] = {
	{ "RANK", 4, 100 },
	{ "PID", 7, 50 },
	{ "FLAGGED SYNC", 24, 98, true },
	{ "POSITION", 13, 96, true },
	{ "KIND", 13, 40, true },
	{ "COUNT/S", 8, 80 },
	{ "TOTAL", 8, 70 },
	{ "CALL SITE", 0, 30, true, 16 },
};

#define NR_COLS ((int)(sizeof(cols) / sizeof(cols[0])))

static struct top_table table;

static void fill(struct top_table *t)
{
	static const char *const sites[] = { "plant_calls+0x499 (specsim-server)", "" };

	tt__init(t, cols, NR_COLS, 1);
	for (int i = 0; i < 2; i++) {
		int row = tt__add_row(t);

		tt__set(t, row, 0, 0, "%d", i);
		tt__set(t, row, 1, 0, "%u", 4242u + i);
		tt__set(t, row, 2, 0, "%s", "cuStreamSynchronize");
		tt__set(t, row, 3, 0, "%s", "draft-verify");
		tt__set(t, row, 4, 0, "%s", "stream");
		tt__set(t, row, 5, 0, "%.1f", 35.2);
		/* a count wider than its column's preferred width widens it */
		tt__set(t, row, 6, 0, "%llu", i ? 1234567890123ull : 43ull);
		tt__set(t, row, 7, 0, "%s", sites[i]);
	}
}

static void check_width(int width)
{
	char line[TT_MAX_COLS * (TT_CELL + 1) + 8], cell[TT_CELL + 1];
	int lowest_shown = 1000, highest_gone = -1;

	fill(&table);
	tt__fit(&table, width);
	for (int r = -1; r < table.nr_rows; r++) {
		/* every line starts with its first column: no line is the tail of another */
		const char *first = r < 0 ? "RANK" : table.cells[r][0].text, *at;

		tt__line(&table, r, line, sizeof(line));
		assert_true((int)strlen(line) <= width);
		at = line + strspn(line, " ");
		assert_memory_equal(at, first, strlen(first));
		assert_true(at[strlen(first)] == ' ' || !at[strlen(first)]);
	}
	for (int c = 0; c < NR_COLS; c++) {
		if (table.shown[c] && cols[c].prio < lowest_shown)
			lowest_shown = cols[c].prio;
		if (!table.shown[c] && cols[c].prio > highest_gone)
			highest_gone = cols[c].prio;
	}
	assert_true(table.shown[0] > 0);
	assert_true(highest_gone < lowest_shown);
	/* a text column is never cut: shown whole or left out */
	for (int c = 1; c < NR_COLS - 1; c++)
		if (table.shown[c] && cols[c].left)
			for (int r = 0; r < table.nr_rows; r++) {
				tt__cell(&table, r, c, cell, sizeof(cell));
				assert_non_null(strstr(cell, table.cells[r][c].text));
			}
}

static void test_every_width(void **state)
{
	(void)state;
	for (int width = 40; width <= 200; width++)
		check_width(width);
}

static void test_no_limit_keeps_all(void **state)
{
	char line[TT_MAX_COLS * (TT_CELL + 1) + 8];

	(void)state;
	fill(&table);
	tt__fit(&table, -1);
	for (int c = 0; c < NR_COLS; c++)
		assert_true(table.shown[c] >= cols[c].width);
	tt__line(&table, 0, line, sizeof(line));
	assert_non_null(strstr(line, "plant_calls+0x499 (specsim-server)"));
	tt__line(&table, 1, line, sizeof(line));
	assert_non_null(strstr(line, "1234567890123"));
}

static void test_cut_site(void **state)
{
	char cell[TT_CELL + 1];

	(void)state;
	fill(&table);
	tt__fit(&table, 100);
	assert_int_equal(table.shown[NR_COLS - 1] > 0, 1);
	tt__cell(&table, 0, NR_COLS - 1, cell, sizeof(cell));
	assert_int_equal((int)strlen(cell), table.shown[NR_COLS - 1]);
	assert_int_equal(cell[strlen(cell) - 1], '~');
	assert_memory_equal(cell, "plant_calls", 11);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_width),
		cmocka_unit_test(test_no_limit_keeps_all),
		cmocka_unit_test(test_cut_site),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
