// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* diff's GPU rows (--gpu): shown only when both recordings have GPU figures, exact values. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "diff_view.h"

#define MS 1e6

struct two {
	struct tf_header hdr;
	struct model *m[2];
	struct cycles cy;
	struct diff_input in[2];
	struct diff d;
};

/* A diff of two empty recordings whose summaries are set by hand. */
static void two_init(struct two *t)
{
	memset(t, 0, sizeof(*t));
	t->hdr.version = 1;
	for (int s = 0; s < 2; s++) {
		t->m[s] = model__new(&t->hdr);
		assert_non_null(t->m[s]);
		t->in[s] = (struct diff_input){ s ? "b.sprb" : "a.sprb", t->m[s], &t->cy };
		t->d.in[s] = &t->in[s];
		t->d.runs[s] = (struct diff_runs){ .in = &t->in[s], .nr = 1 };
		t->d.side[s].sum.cycles = 4;
	}
}

static void two_free(struct two *t)
{
	for (int s = 0; s < 2; s++)
		model__free(t->m[s]);
}

static char *render(const struct diff *d, bool json)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (json)
		diff__json(out, d);
	else
		diff__text(out, d);
	fclose(out);
	return text;
}

static void set_gpu(struct cycle_summary *s, size_t cycles, double draft, double verify,
		    double idle)
{
	s->gpu_cycles = cycles;
	s->phase[PHASE_DRAFT].gpu_busy_ns = draft;
	s->phase[PHASE_VERIFY].gpu_busy_ns = verify;
	s->gpu_idle_ns = idle;
}

static void test_gpu_rows(void **state)
{
	static struct two t;
	char *text;

	two_init(&t);
	/* one side only: no rows */
	set_gpu(&t.d.side[0].sum, 3, 2.2 * MS, 28.4 * MS, 1.1 * MS);
	text = render(&t.d, false);
	assert_null(strstr(text, "GPU"));
	free(text);
	text = render(&t.d, true);
	assert_null(strstr(text, "\"gpu\""));
	free(text);

	set_gpu(&t.d.side[1].sum, 4, 2.0 * MS, 25.9 * MS, 0.6 * MS);
	assert_true(diff__gpu(&t.d));
	text = render(&t.d, false);
	assert_non_null(strstr(text,
		"\nGPU per cycle (ms, means over the cycles with GPU figures: A 3, B 4)\n"
		"  busy            A        B   change\n"
		"  draft       2.200    2.000   -0.200\n"
		"  verify     28.400   25.900   -2.500\n"
		"  accept      0.000    0.000   +0.000\n"
		"  extend      0.000    0.000   +0.000\n"
		"  other       0.000    0.000   +0.000\n"
		"  idle        1.100    0.600   -0.500\n"
		"\nSetup"));
	free(text);
	text = render(&t.d, true);
	assert_non_null(strstr(text,
		",\"gpu\":{\"cycles\":{\"a\":3,\"b\":4},\"busy_mean_ns\":{"
		"\"draft\":{\"a\":2200000.0,\"b\":2000000.0,\"change\":-200000.0},"
		"\"verify\":{\"a\":28400000.0,\"b\":25900000.0,\"change\":-2500000.0},"
		"\"accept\":{\"a\":0.0,\"b\":0.0,\"change\":0.0},"
		"\"extend\":{\"a\":0.0,\"b\":0.0,\"change\":0.0},"
		"\"other\":{\"a\":0.0,\"b\":0.0,\"change\":0.0}},"
		"\"idle_mean_ns\":{\"a\":1100000.0,\"b\":600000.0,\"change\":-500000.0}},"
		"\"verdict\":"));
	free(text);
	two_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
