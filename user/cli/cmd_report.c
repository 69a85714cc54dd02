// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe report: cycles, phases and graphs of a recording, or of processes traced now. */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "log.h"
#include "recorder.h"
#include "pipeline.h"
#include "report_view.h"
#include "spill.h"

static struct report_env {
	const char *input;
	struct recording_args rec;	/* live: how to record, and where the recording is kept */
	struct target_args targets;
	struct report_opts opts;
} env;

static const char doc[] =
	"Decode cycles, their phases, the CUDA graphs and the syncs that stall the loop, of a "
	"recording (FILE) or of processes traced now (-p PID, or -- CMD started under trace): "
	"then the calls are recorded as 'specprobe record' does, the recording is kept (-o, "
	"default report-PID.sprb here) and the report is printed at the end. Both give the "
	"same report for the same recording.\n\n"
	"EXAMPLES:\n"
	"  specprobe report run.sprb\n"
	"  specprobe report --json run.sprb | jq .summary\n"
	"  specprobe report -p 4242 --duration 10 -o run.sprb\n"
	"  specprobe report -o run.sprb -- python3 serve.py\n";

enum { OPT_ALL_CYCLES = 256 };

static const struct argp_option options[] = {
	{ "json", 'j', NULL, 0, "One JSON document (docs/report-json.md)", 0 },
	{ "all-cycles", OPT_ALL_CYCLES, NULL, 0, "Text: every cycle in the cycle tables", 0 },
	{},
};

static const struct argp_child children[] = {
	{ &recording_argp, 0, "Live reports (the recording is kept, default report-PID.sprb):", 1 },
	{ &target_argp, 0, NULL, 2 },
	{},
};

static bool live(void)
{
	return env.targets.nr_pids > 0 || env.targets.cmd;
}

static void check_all(struct argp_state *state)
{
	if (env.input && live())
		argp_error(state, "either a recording FILE or -p PID / -- CMD, not both");
	if (!env.input && !live())
		argp_error(state,
			   "which recording? specprobe report FILE, or -p PID / -- CMD to trace now");
	if (env.input && (env.rec.output || env.rec.duration_ns || env.rec.force ||
			  env.rec.ring_mb || env.rec.mode_set))
		argp_error(state, "-o, --duration, --force, --ring-mb and --mode are for live "
				  "reports (-p, --)");
	if (env.input && env.rec.sample_on_ns)
		argp_error(state, "--sample is for live reports (-p, --)");
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'j':
		env.opts.json = true;
		break;
	case OPT_ALL_CYCLES:
		env.opts.all_cycles = true;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.rec;
		state->child_inputs[1] = &env.targets;
		break;
	case ARGP_KEY_ARG:
		/* after "--" comes the command to start under trace (the -p/-- child takes it) */
		if (cli__after_dashdash(state))
			return ARGP_ERR_UNKNOWN;
		if (env.input)
			argp_error(state, "one recording at a time");
		/* "report 4242": a pid meant, unless such a recording is here */
		if (access(arg, F_OK))
			cli__pid_hint(state, arg, "recording");
		env.input = arg;
		break;
	case ARGP_KEY_END:
		check_all(state);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The report is the pipeline's one consumer: it prints when the analyses are done. */
static int print_report(void *ctx, const struct results *res, const struct decode_stats *st)
{
	env.opts.input = st;
	return report__print(stdout, res, &env.opts);
}

static const struct pipeline_consumer report_consumer = { .end = print_report };

/* The last pass's end: with results made, an error is the report's own (writing it). */
static int finished(struct pipeline *p, int ret)
{
	if (ret && pipeline__results(p)) {
		log_error("writing the report: %s", strerror(errno));
		return 1;
	}
	if (ret && spill__failed()) {
		log_error("analysing the recording: temporary files in %s: %s (set TMPDIR "
			  "to a folder with room)", spill__dir(), strerror(-ret));
		return 1;
	}
	if (ret) {
		log_error("analysing the recording: %s", strerror(-ret));
		return 1;
	}
	return 0;
}

/* One pass over the recording; 1: another must follow, else the exit status. */
static int report_pass(const char *path, struct wholerun *whole)
{
	const struct pipeline_opts opts = { .analyse = true, .whole = whole };
	bool last = wholerun__last_pass(whole);
	struct pipeline *p;
	char err[512];
	int ret, status = 1;

	p = pipeline__open(path, &opts, err, sizeof(err));
	if (!p) {
		log_error("%s", err);
		return 2;
	}
	if (last)
		pipeline__add(p, &report_consumer);
	ret = pipeline__read_all(p);
	if (ret == -EBADMSG) {
		log_error("%s: no report", pipeline__error(p));
		status = 2;
	} else if (ret == -EAGAIN) {
		status = 1;
	} else if (ret < 0 && !spill__failed()) {
		log_error("%s: %s", path, strerror(-ret));
		status = 2;
	} else if (ret < 0) {
		status = finished(p, ret) ? 2 : 0;
	} else {
		int end = pipeline__finish(p);

		if (end == -EAGAIN || (!end && !last))
			status = 1;
		else
			status = finished(p, end) ? 2 : 0;
		/* what the reader made of the file, once */
		if (last && end != -EAGAIN)
			pipeline__warn_input(p, path);
		/* the GPU times are the recording's: --gpu on a file only asks for them */
		if (last && end != -EAGAIN && env.rec.gpu && !live() && !pipeline__gpu_stats(p))
			log_warn("%s has no GPU records: it was recorded without --gpu; record with "
				 "--gpu for GPU times (docs/gpu-timeline.md)", path);
	}
	pipeline__free(p);
	return status;
}

/*
 * A recording is read in passes (wholerun.h): the report's memory does not
 * grow with the recording's length, and it equals the whole run's.
 */
static int report_file(const char *path)
{
	struct wholerun *whole = wholerun__new();
	int status;

	if (!whole) {
		log_error("out of memory");
		return 1;
	}
	while ((status = report_pass(path, whole)) == 1)
		;
	wholerun__free(whole);
	return status == 2 ? 1 : 0;
}

/* Live: recorded as 'specprobe record' does, then the recording is reported. */
static int report_live(void)
{
	struct record_request req = { .targets = &env.targets, .rec = &env.rec };
	int status;

	cli__default_output(&env.rec, &env.targets, "report");
	status = recorder__run(&req);
	if (status)
		return status;
	status = report_file(env.rec.output);
	log_info("the recording is in %s: 'specprobe report %s' reports it again",
		 env.rec.output, env.rec.output);
	return status;
}

int cmd_report(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "[FILE | -- CMD [ARGS...]]", doc,
					  children, NULL, NULL };

	if (cli__argp_parse(&argp, argc, argv))
		return 2;
	return live() ? report_live() : report_file(env.input);
}
