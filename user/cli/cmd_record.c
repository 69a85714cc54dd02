// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe record: calls of running processes into a recording file. */
#include <argp.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "metrics_cli.h"
#include "outfile.h"
#include "recorder.h"

static struct record_env {
	struct recording_args rec;
	struct target_args targets;
	struct metrics_args metrics;
	const char *perfetto;	/* also write this Perfetto trace, at the end */
} env;

static const char doc[] =
	"Record the CUDA driver and NCCL calls of running processes.\n\n"
	"EXAMPLES:\n"
	"  specprobe record -p 4242                 # to record-4242.sprb, until Ctrl-C\n"
	"  specprobe record -o run.sprb -p 4242,4243 --duration 30\n"
	"  specprobe record -o run.sprb -- python3 serve.py --tp 2   # started traced\n"
	"  specprobe record -o run.sprb --perfetto run.pftrace -p 4242\n"
	"  specprobe record -o run.sprb --metrics 9400 -p 4242  # Prometheus: :9400\n";

enum { OPT_PERFETTO = 256 };

static const struct argp_option options[] = {
	{ "perfetto", OPT_PERFETTO, "FILE", 0,
	  "Also write a Perfetto trace, made from the recording once it is closed (as export "
	  "does; --force replaces an existing one)", 0 },
	{},
};

static const struct argp_child children[] = {
	{ &recording_argp, 0, NULL, 0 },
	{ &target_argp, 0, NULL, 0 },
	{ &metrics_argp, 0, NULL, 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case OPT_PERFETTO:
		env.perfetto = arg;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.rec;
		state->child_inputs[1] = &env.targets;
		state->child_inputs[2] = &env.metrics;
		break;
	case ARGP_KEY_END:
		if (!env.targets.nr_pids && !env.targets.cmd)
			argp_error(state, "-p PID or -- CMD is required");
		if (env.perfetto && env.rec.output && !strcmp(env.perfetto, env.rec.output))
			argp_error(state, "--perfetto FILE must not be the recording");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The trace of a closed recording, by export's code; an exit status. */
static int write_trace(struct outfile *out)
{
	struct pipeline *p = export__open_input(env.rec.output);

	if (!p) {
		outfile__discard(out);
		return 1;
	}
	return export__write(p, env.rec.output, out);
}

int cmd_record(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "[-- CMD [ARGS...]]", doc, children,
					  NULL, NULL };
	struct record_request req = { .targets = &env.targets, .rec = &env.rec };
	struct metrics_live metrics = { 0 };
	struct outfile trace = OUTFILE_INIT;
	struct record_tap tap;
	int status;

	if (cli__argp_parse(&argp, argc, argv))
		return 2;
	cli__default_output(&env.rec, &env.targets, "record");
	/* refused before anything is traced, as export refuses it */
	if (env.perfetto &&
	    export__open_output(&trace, env.perfetto, env.rec.force, env.rec.output))
		return 1;
	if (metrics_run__open(&env.metrics, &metrics.run)) {
		outfile__discard(&trace);
		return 1;
	}
	if (metrics.run) {
		metrics_live__tap(&metrics, &tap);
		req.tap = &tap;
	}
	status = recorder__run(&req);
	metrics_live__finish(&metrics);
	if (!env.perfetto)
		return status;
	if (status) {
		/* no recording to make it from: the reason is logged */
		outfile__discard(&trace);
		return status;
	}
	return write_trace(&trace);
}
