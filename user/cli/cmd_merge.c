// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe merge: recordings of several hosts or ranks onto one clock, in one recording. */
#include <argp.h>
#include <string.h>
#include "cli.h"
#include "merge.h"

static struct merge_env {
	const char *inputs[MERGE_MAX_INPUTS];
	int nr_inputs;
	const char *output;
	bool force;
} env;

static const char doc[] =
	"Merge recordings of several hosts or ranks into one, on the first one's clock.\n\n"
	"Each input's monotonic times are moved by the difference between its realtime offset "
	"and the first input's; the bound printed covers how closely each clock pair was read, "
	"not the hosts' NTP offsets, which no recording holds. Tgids of a second host get "
	"N << 22 added, and so do those of an input holding a process an earlier one holds "
	"(another window of it). Every cycle of every input is kept: each process is judged "
	"from its own input's attach mark. The output reads with report, diff, dump and "
	"export.\n\n"
	"EXAMPLES:\n"
	"  specprobe merge rank0.sprb rank1.sprb -o all.sprb\n"
	"  specprobe merge hostA/run.sprb hostB/run.sprb -o both.sprb  # rings: as sets\n\n"
	"The output is written aside and renamed into place once whole; it may be none of the "
	"inputs, nor a segment of one (compared by device and inode), nor a name a reader of "
	"an input takes for a segment of it (FILE.N of an input FILE).\n";

static const struct argp_option options[] = {
	{ "output", 'o', "FILE", 0, "The merged recording", 0 },
	{ "force", 'f', NULL, 0, "Overwrite an existing output", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'o':
		env.output = arg;
		break;
	case 'f':
		env.force = true;
		break;
	case ARGP_KEY_ARG:
		if (env.nr_inputs == MERGE_MAX_INPUTS)
			argp_error(state, "at most %d inputs", MERGE_MAX_INPUTS);
		env.inputs[env.nr_inputs++] = arg;
		break;
	case ARGP_KEY_END:
		if (!env.nr_inputs)
			argp_error(state, "at least one recording to merge is required");
		if (!env.output)
			argp_error(state, "-o FILE is required");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int cmd_merge(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "RECORDING...", doc, NULL, NULL,
					  NULL };
	struct merge_request req;

	if (cli__argp_parse(&argp, argc, argv))
		return 2;
	req = (struct merge_request){ env.inputs, env.nr_inputs, env.output, env.force };
	return merge__run(&req);
}
