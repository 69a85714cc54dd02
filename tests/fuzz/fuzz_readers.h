/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Every reader of a recording, run as its command runs it, on a path: the
 * fuzz harnesses call these on their inputs, and test_regress on the inputs
 * they found (tests/fuzz/regress). Output goes to /dev/null; what matters is
 * that no reader crashes, hangs or reads out of bounds.
 *   dump (text and JSON), merge        fuzz_read_records
 *   report (text and JSON) and export  fuzz_read_whole: passes of a whole run, as
 *                                      cmd_report and cmd_export make them
 *   report of one pass, diff A A       fuzz_read_analysis
 *   top --replay --batch               fuzz_read_top (fuzz_top adds its screen)
 */
#ifndef __FUZZ_READERS_H
#define __FUZZ_READERS_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>
#include "cli.h"
#include "diff_view.h"
#include "dump_fmt.h"
#include "fuzz_input.h"
#include "merge.h"
#include "outfile.h"
#include "perfetto_view.h"
#include "pipeline.h"
#include "report_view.h"
#include "top_view.h"

static char fuzz_scratch_dir[] = "/tmp/specprobe-fuzz.XXXXXX";
#define FUZZ_MERGED "merged.sprb"
#define FUZZ_TRACE "trace.pftrace"

static void fuzz_scratch_remove(void)
{
	char path[sizeof(fuzz_scratch_dir) + 32];

	snprintf(path, sizeof(path), "%s/" FUZZ_MERGED, fuzz_scratch_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/" FUZZ_TRACE, fuzz_scratch_dir);
	unlink(path);
	rmdir(fuzz_scratch_dir);
}

/* A folder of this process's own for the files readers write (merge, export), gone at exit. */
static inline const char *fuzz_scratch(const char *name)
{
	static char path[sizeof(fuzz_scratch_dir) + 32];
	static bool made;

	if (!made && (!mkdtemp(fuzz_scratch_dir) || atexit(fuzz_scratch_remove)))
		abort();
	made = true;
	snprintf(path, sizeof(path), "%s/%s", fuzz_scratch_dir, name);
	return path;
}

static int fuzz_print_call(void *ctx, const struct tf_header *hdr, const struct sp_call *call)
{
	FILE *out = fuzz_devnull();

	dump_fmt__name(hdr, call->entry.probe);
	dump_fmt__text(out, hdr, call);
	dump_fmt__json_stack(out, hdr, pipeline__callstacks(ctx), call);
	return 0;
}

static int fuzz_print_gpu(void *ctx, const struct sp_rec_hdr *rec, size_t size)
{
	FILE *out = fuzz_devnull();

	(void)ctx;
	dump_fmt__gpu(out, rec, size, "kernel", false);
	dump_fmt__gpu(out, rec, size, NULL, true);
	return 0;
}

/* dump and dump --json: every call and GPU record; then merge of the file alone. */
static inline void fuzz_read_records(const char *path)
{
	static const struct pipeline_opts calls_only = { .analyse = false };
	struct pipeline_consumer printer = { .call = fuzz_print_call,
					     .gpu_record = fuzz_print_gpu };
	const char *inputs[1] = { path };
	struct merge_request req = { inputs, 1, NULL, true };
	struct pipeline *p;
	char err[512];

	p = pipeline__open(path, &calls_only, err, sizeof(err));
	if (p) {
		printer.ctx = p;
		pipeline__add(p, &printer);
		/* as dump does: what was read before a cut or a corrupt record is still finished */
		pipeline__read_all(p);
		pipeline__error(p);
		pipeline__finish(p);
		pipeline__warn_input(p, path);
		pipeline__free(p);
	}
	req.output = fuzz_scratch(FUZZ_MERGED);
	merge__run(&req);
}

static int fuzz_render_report(void *ctx, const struct results *res, const struct decode_stats *st)
{
	const struct report_opts text = { .all_cycles = true, .input = st };
	const struct report_opts json = { .json = true, .input = st };

	report__print(fuzz_devnull(), res, &text);
	return report__print(fuzz_devnull(), res, &json);
}

/* report and report --json as cmd_report reads: passes until the whole run's last. */
static inline void fuzz_report_whole(const char *path)
{
	const struct pipeline_consumer report = { .end = fuzz_render_report };
	struct wholerun *whole = wholerun__new();
	bool again = whole != NULL;
	char err[512];

	while (again) {
		const struct pipeline_opts opts = { .analyse = true, .whole = whole };
		bool last = wholerun__last_pass(whole);
		struct pipeline *p = pipeline__open(path, &opts, err, sizeof(err));
		int ret;

		if (!p)
			break;
		if (last)
			pipeline__add(p, &report);
		ret = pipeline__read_all(p);
		again = ret == -EAGAIN;
		if (!ret) {
			ret = pipeline__finish(p);
			again = ret == -EAGAIN || (!ret && !last);
			pipeline__warn_input(p, path);
		}
		pipeline__free(p);
	}
	wholerun__free(whole);
}

/* export as cmd_export runs it, into a file of the scratch folder. */
static inline void fuzz_export_whole(const char *path)
{
	struct pipeline *p = export__open_input(path);
	struct outfile out;

	if (!p)
		return;
	if (export__open_output(&out, fuzz_scratch(FUZZ_TRACE), true, path)) {
		wholerun__free(pipeline__wholerun(p));
		pipeline__free(p);
		return;
	}
	export__write(p, path, &out);
}

static inline void fuzz_read_whole(const char *path)
{
	fuzz_report_whole(path);
	fuzz_export_whole(path);
}

static bool fuzz_has_cycles(const struct cycles *cy)
{
	for (size_t l = 0; l < cy->nr_loops; l++)
		if (cy->loops[l].nr_cycles)
			return true;
	return false;
}

/* diff A A, as cmd_diff would run it: only recordings with cycles are compared */
static void fuzz_render_diff(const struct results *res)
{
	struct diff_input in = { "fuzz", res->model, &res->cycles };
	const struct diff_input *runs[2] = { &in, &in };
	const size_t nr[2] = { 1, 1 };
	struct diff d;

	if (!fuzz_has_cycles(&res->cycles))
		return;
	if (!diff__compute_runs(&d, runs, nr)) {
		diff__text(fuzz_devnull(), &d);
		diff__json(fuzz_devnull(), &d);
	}
	diff__free(&d);
}

/* One pass with the analyses (as diff reads each input), the report and a trace of it. */
static inline void fuzz_read_analysis(const char *path)
{
	static const struct pipeline_opts opts = { .analyse = true, .tick_ns = PERFETTO_TICK_NS };
	static int null_fd = -1;
	struct pipeline_consumer report = { .end = fuzz_render_report }, trace;
	struct perfetto_out *o;
	struct pipeline *p;
	char err[512];

	if (null_fd < 0 && (null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0)
		abort();
	p = pipeline__open(path, &opts, err, sizeof(err));
	if (!p)
		return;
	o = perfetto__new(null_fd, p);
	if (!o)
		abort();
	perfetto__consumer(o, &trace);
	pipeline__add(p, &trace);
	pipeline__add(p, &report);
	/* the commands read a cut recording to its last whole record and stop at a corrupt one */
	if (!pipeline__read_all(p) && !pipeline__finish(p)) {
		perfetto__close(o);
		fuzz_render_diff(pipeline__results(p));
	}
	perfetto__free(o);
	pipeline__free(p);
}

/* top --replay --batch --speed 0: the windowed pipeline, a text block per second of trace. */
static inline void fuzz_read_top(const char *path)
{
	static const struct pipeline_opts windowed = { .analyse = true, .window = true };
	static const struct top_opts opts = { .window_s = 5, .hung_ns = 500000000ull,
					       .focus_rank = -1 };
	const struct top_title title = { "replay", &opts, 80 };
	static struct top_frame frame;
	struct pipeline_consumer c;
	struct pipeline_snapshot snap;
	struct top_state *t;
	struct pipeline *p;
	__u64 ts, next = 0;
	char err[512];

	p = pipeline__open(path, &windowed, err, sizeof(err));
	if (!p)
		return;
	t = top__new();
	if (!t)
		abort();
	top__consumer(t, &c);
	pipeline__add(p, &c);
	while (pipeline__read_next(p, &ts) > 0) {
		if (!ts || ts < next)
			continue;
		next = ts + 1000000000ull;
		top__frame(t, p, ts, &opts, &frame);
		top__print(fuzz_devnull(), &frame, &title);
	}
	if (!pipeline__finish(p)) {
		pipeline__snapshot(p, &snap);
		top__frame(t, p, snap.last_ts, &opts, &frame);
		top__print(fuzz_devnull(), &frame, &title);
	}
	top__free(t);
	pipeline__free(p);
}

/* Every reader above on one path. */
static inline void fuzz_read_all(const char *path)
{
	fuzz_read_records(path);
	fuzz_read_whole(path);
	fuzz_read_analysis(path);
	fuzz_read_top(path);
}

#endif /* __FUZZ_READERS_H */
