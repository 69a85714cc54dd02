// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* top's tables at every width: no line longer, the least needed columns gone first. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "top_table.h"
#include "top_view.h"

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

#define MS 1000000ull
#define SEC 1000000000ull

/* A cycle of 10 ms from start; gpu_busy: draft, verify; idle over a 10 ms GPU window. */
static struct cycle gpu_cycle(__u32 index, __u64 start, bool known, __u64 draft, __u64 verify,
			      __u64 idle)
{
	struct cycle c = { .index = index, .start_ns = start, .end_ns = start + 10 * MS };

	c.phase[PHASE_DRAFT].span_ns = 2 * MS;
	c.phase[PHASE_VERIFY].span_ns = 1 * MS;
	c.gpu_known = known;
	c.phase[PHASE_DRAFT].gpu_busy_ns = draft;
	c.phase[PHASE_VERIFY].gpu_busy_ns = verify;
	c.phase[PHASE_EXTEND].gpu_busy_ns = known ? 1 * MS : 0;
	c.gpu_start_ns = start + 1 * MS;
	c.gpu_end_ns = start + 11 * MS;
	c.gpu_idle_ns = idle;
	return c;
}

/* The loop table of a batch block: its header and first row. */
static void batch_loops(const struct top_frame *f, const struct top_opts *o, char *head,
			char *row, size_t size)
{
	struct top_title title = { "end", o, 0 };
	char *text = NULL, *at;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_int_equal(top__print(out, f, &title), 0);
	fclose(out);
	at = strstr(text, "LOOPS\n");
	assert_non_null(at);
	at += 6;
	snprintf(head, size, "%.*s", (int)strcspn(at, "\n"), at);
	at += strcspn(at, "\n") + 1;
	snprintf(row, size, "%.*s", (int)strcspn(at, "\n"), at);
	free(text);
}

/* Cycles with GPU figures: the window's means in top's GPU columns, the totals for metrics. */
static void test_gpu_columns(void **state)
{
	const struct pipeline_opts popts = { .analyse = false };
	struct tf_header hdr = { .version = 1 };
	struct sp_call_rec rec = { .type = SP_REC_CALL, .size = sizeof(rec), .ts = 10 * SEC,
				   .tgid = 10, .tid = 11, .seq = 1 };
	const struct top_opts o = { .window_s = 5, .hung_ns = 100 * SEC, .focus_rank = -1 };
	struct loop lp = { .tgid = 10, .tid = 11, .rank = 0 };
	struct cycle c[3] = {
		gpu_cycle(0, 9 * SEC, true, 2 * MS, 6 * MS, 2 * MS),
		gpu_cycle(1, 9 * SEC + 10 * MS, true, 3 * MS, 7 * MS, 1 * MS),
		gpu_cycle(2, 9 * SEC + 20 * MS, false, 0, 0, 0),
	};
	struct pipeline *p = pipeline__new(&hdr, &popts);
	struct top_state *t = top__new();
	static struct top_frame f;
	static struct top_totals tot;
	struct pipeline_consumer cons;
	char head[512], row[512];

	assert_non_null(p);
	assert_non_null(t);
	top__consumer(t, &cons);
	assert_int_equal(pipeline__feed(p, &rec, sizeof(rec)), 0);
	assert_int_equal(pipeline__finish(p), 0);

	/* before any cycle with GPU figures: the table as it always was */
	assert_int_equal(cons.cycle(cons.ctx, &lp, &c[2]), 0);
	top__frame(t, p, 10 * SEC, &o, &f);
	assert_false(f.gpu);
	batch_loops(&f, &o, head, row, sizeof(head));
	assert_null(strstr(head, "gpu"));

	assert_int_equal(cons.cycle(cons.ctx, &lp, &c[0]), 0);
	assert_int_equal(cons.cycle(cons.ctx, &lp, &c[1]), 0);
	top__frame(t, p, 10 * SEC, &o, &f);
	assert_true(f.gpu);
	assert_int_equal(f.nr_loops, 1);
	assert_int_equal(f.loops[0].cycles, 3);
	assert_int_equal(f.loops[0].gpu_cycles, 2);
	assert_true(f.loops[0].gpu_draft_ns == 2.5 * MS);
	assert_true(f.loops[0].gpu_verify_ns == 6.5 * MS);
	assert_true(f.loops[0].gpu_idle_share == 0.15);
	batch_loops(&f, &o, head, row, sizeof(head));
	assert_string_equal(head, "  rank     pid     tid  cycles/s  tok/s  p50_ms  p99_ms   total "
				  " draft verify accept extend blocked   acc gpu_draft_ms gpu_verify_ms "
				  "gpu_idle");
	assert_string_equal(row, "     0      10      11     100.0      -  10.000  10.000       3 "
				 "   20%    10%     0%     0%      0%     -        2.500         6.500 "
				 "     15%");

	top__totals(t, p, 5, &tot);
	assert_int_equal(tot.nr_loops, 1);
	assert_int_equal(tot.loops[0].gpu_cycles, 2);
	assert_int_equal(tot.loops[0].gpu_phase_ns[PHASE_DRAFT], 5 * MS);
	assert_int_equal(tot.loops[0].gpu_phase_ns[PHASE_VERIFY], 13 * MS);
	assert_int_equal(tot.loops[0].gpu_phase_ns[PHASE_EXTEND], 2 * MS);
	assert_int_equal(tot.loops[0].gpu_idle_ns, 3 * MS);

	top__free(t);
	pipeline__free(p);
}

/* A loop with no GPU figures in the window, where another had some: dashes. */
static void test_gpu_dashes(void **state)
{
	const struct top_opts o = { .window_s = 5, .hung_ns = SEC, .focus_rank = -1 };
	static struct top_frame f;
	struct top_title title = { "end", &o, 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	f.gpu = true;
	f.nr_loops = 1;
	f.loops[0] = (struct top_loop_row){ .tgid = 12, .tid = 13, .rank = 1, .idle = true };
	assert_int_equal(top__print(out, &f, &title), 0);
	fclose(out);
	assert_non_null(strstr(text,
		"     1      12      13      idle      -       -       -       0 "
		"    0%     0%     0%     0%      0%     -            -             - "
		"       -\n"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_width),
		cmocka_unit_test(test_no_limit_keeps_all),
		cmocka_unit_test(test_cut_site),
		cmocka_unit_test(test_gpu_columns),
		cmocka_unit_test(test_gpu_dashes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
