// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe record: calls of running processes into a recording file. */
#include <argp.h>
#include "cli.h"
#include "recorder.h"

static struct record_env {
	struct recording_args rec;
	struct target_args targets;
} env;

static const char doc[] =
	"Record the CUDA driver and NCCL calls of running processes.\n\n"
	"EXAMPLES:\n"
	"  specprobe record -o run.sprb -p 4242     # until Ctrl-C or the process exits\n"
	"  specprobe record -o run.sprb -p 4242,4243 --duration 30\n"
	"  specprobe record -o run.sprb -- python3 serve.py --tp 2   # started traced\n";

static const struct argp_child children[] = {
	{ &recording_argp, 0, NULL, 0 },
	{ &target_argp, 0, NULL, 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.rec;
		state->child_inputs[1] = &env.targets;
		break;
	case ARGP_KEY_END:
		if (!env.rec.output)
			argp_error(state, "-o FILE is required");
		if (!env.targets.nr_pids && !env.targets.cmd)
			argp_error(state, "-p PID or -- CMD is required");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int cmd_record(int argc, char **argv)
{
	static const struct argp argp = { NULL, parse_arg, "[-- CMD [ARGS...]]", doc, children,
					  NULL, NULL };
	struct record_request req = { .targets = &env.targets, .rec = &env.rec };

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 2;
	return recorder__run(&req);
}
