// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What `report`, `export` and `diff` make of any bytes given as a recording:
 * the pipeline with the model and the analyses, the report in text and JSON,
 * the Perfetto trace, and the recording diffed against itself.
 */
#include <errno.h>
#include <fcntl.h>
#include "diff_view.h"
#include "fuzz_input.h"
#include "perfetto_view.h"
#include "pipeline.h"
#include "report_view.h"

static int render_report(void *ctx, const struct results *res, const struct decode_stats *st)
{
	static const struct report_opts all = { .all_cycles = true };
	const struct report_opts json = { .json = true, .input = st };

	report__print(fuzz_devnull(), res, &all);
	return report__print(fuzz_devnull(), res, &json);
}

static bool has_cycles(const struct cycles *cy)
{
	for (size_t l = 0; l < cy->nr_loops; l++)
		if (cy->loops[l].nr_cycles)
			return true;
	return false;
}

/* diff A A, as cmd_diff would run it: only recordings with cycles are compared */
static void render_diff(const struct results *res)
{
	struct diff_input in = { "fuzz", res->model, &res->cycles };
	const struct diff_input *runs[2] = { &in, &in };
	const size_t nr[2] = { 1, 1 };
	struct diff d;

	if (!has_cycles(&res->cycles))
		return;
	if (!diff__compute_runs(&d, runs, nr)) {
		diff__text(fuzz_devnull(), &d);
		diff__json(fuzz_devnull(), &d);
	}
	diff__free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct pipeline_opts opts = { .analyse = true, .tick_ns = PERFETTO_TICK_NS };
	static int null_fd = -1;
	struct pipeline_consumer report = { .end = render_report }, trace;
	struct perfetto_out *o;
	struct pipeline *p;
	char err[512];

	if (null_fd < 0 && (null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0)
		abort();
	p = pipeline__open(fuzz_input_path(data, size), &opts, err, sizeof(err));
	if (!p)
		return 0;
	o = perfetto__new(null_fd, p);
	if (!o)
		abort();
	perfetto__consumer(o, &trace);
	pipeline__add(p, &trace);
	pipeline__add(p, &report);
	/* the commands read a cut recording to its last whole record and stop at a corrupt one */
	if (!pipeline__read_all(p) && !pipeline__finish(p)) {
		perfetto__close(o);
		render_diff(pipeline__results(p));
	}
	perfetto__free(o);
	pipeline__free(p);
	return 0;
}
