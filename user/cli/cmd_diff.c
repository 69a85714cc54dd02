// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe diff: two recordings side by side, and whether the cycle time changed. */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "diff_view.h"
#include "log.h"
#include "pipeline.h"

enum { OPT_ALSO_A = 0x100, OPT_ALSO_B };	/* long options only */

static struct diff_env {
	const char *input[2][DIFF_MAX_RUNS];	/* A or B first, then its --also-a/--also-b */
	size_t nr[2];
	int nr_inputs;
	bool json;
} env = { .nr = { 1, 1 } };

static const char doc[] =
	/* argp wraps paragraphs itself: no newlines inside them */
	"Compare two recordings (A, then B): cycle time per loop and overall (p50, p90, p99, "
	"mean, cycles/s), phase spans and blocked time, launches and syncs per cycle, for A, "
	"for B and the change B - A. The change in cycle time gets a 95% bootstrap interval; "
	"one verdict comes of every row that compares speed (p50, mean, cycles/s, and the "
	"server's tokens/s with --server-metrics). The flagged syncs are compared by call "
	"site (count, blocked and GPU idle caused per cycle), and the setup the recordings "
	"show (ranks, graphs per role and their kernels) too.\n\n"
	"Runs of one setting differ by more than one recording shows (GPU clocks, which CPU "
	"the loop ran on): record each setting twice and give the others with --also-a and "
	"--also-b. Each side's cycles are then pooled, and the noise floor is at least twice "
	"the largest p50 difference between recordings of one side.\n\n"
	"EXAMPLES:\n"
	"  specprobe diff k3.sprb k5.sprb\n"
	"  specprobe diff k3.sprb k5.sprb --also-a k3-2.sprb --also-b k5-2.sprb\n"
	"  specprobe diff --json before.sprb after.sprb | jq .verdict.verdict\n";

static const struct argp_option options[] = {
	{ "json", 'j', NULL, 0, "One JSON document (docs/diff-json.md)", 0 },
	{ "also-a", OPT_ALSO_A, "FILE", 0, "Another recording of A's setting (repeatable)", 0 },
	{ "also-b", OPT_ALSO_B, "FILE", 0, "Another recording of B's setting (repeatable)", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	int side;

	switch (key) {
	case 'j':
		env.json = true;
		break;
	case OPT_ALSO_A:
	case OPT_ALSO_B:
		side = key == OPT_ALSO_B;
		if (env.nr[side] == DIFF_MAX_RUNS)
			argp_error(state, "at most %d recordings per side", DIFF_MAX_RUNS);
		env.input[side][env.nr[side]++] = arg;
		break;
	case ARGP_KEY_ARG:
		if (env.nr_inputs == 2)
			argp_error(state, "two recordings: specprobe diff A B");
		env.input[env.nr_inputs++][0] = arg;
		break;
	case ARGP_KEY_END:
		if (env.nr_inputs != 2)
			argp_error(state, "which recordings? specprobe diff A B");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Read and analyse one recording; NULL after one line saying why. */
static struct pipeline *analyse(const char *path)
{
	static const struct pipeline_opts opts = { .analyse = true };
	struct pipeline *p;
	char err[512];
	int ret;

	p = pipeline__open(path, &opts, err, sizeof(err));
	if (!p) {
		log_error("%s", err);
		return NULL;
	}
	ret = pipeline__read_all(p);
	if (ret == -EBADMSG) {
		log_error("%s: no diff", pipeline__error(p));
		goto fail;
	}
	if (!ret)
		pipeline__warn_input(p, path);
	if (!ret)
		ret = pipeline__finish(p);
	if (ret < 0) {
		log_error("%s: %s", path, strerror(-ret));
		goto fail;
	}
	return p;
fail:
	pipeline__free(p);
	return NULL;
}

static bool has_cycles(const struct cycles *cy)
{
	for (size_t l = 0; l < cy->nr_loops; l++)
		if (cy->loops[l].nr_cycles)
			return true;
	return false;
}

static int print(struct pipeline *rep[2][DIFF_MAX_RUNS])
{
	struct diff_input in[2][DIFF_MAX_RUNS];
	const struct diff_input *runs[2] = { in[0], in[1] };
	struct diff d;
	int ret;

	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < env.nr[s]; i++) {
			in[s][i] = (struct diff_input){ env.input[s][i],
							pipeline__results(rep[s][i])->model,
							&pipeline__results(rep[s][i])->cycles,
							pipeline__server(rep[s][i]),
							pipeline__results(rep[s][i])->syncs_err
								? NULL
								: &pipeline__results(rep[s][i])->syncs };
			if (!has_cycles(in[s][i].cycles)) {
				log_error("%s: no cycles found: nothing to compare",
					  in[s][i].path);
				return 1;
			}
		}
	ret = diff__compute_runs(&d, runs, env.nr);
	if (ret) {
		log_error("comparing the recordings: %s", strerror(-ret));
	} else {
		if (env.json)
			diff__json(stdout, &d);
		else
			diff__text(stdout, &d);
		if (fflush(stdout) || ferror(stdout)) {
			log_error("writing the diff: %s", strerror(errno));
			ret = -EIO;
		}
	}
	diff__free(&d);
	return ret ? 1 : 0;
}

int cmd_diff(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "A B", doc, NULL, NULL, NULL };
	struct pipeline *rep[2][DIFF_MAX_RUNS] = { { NULL } };
	int status = 1;

	if (cli__argp_parse(&argp, argc, argv))
		return 2;
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < env.nr[s]; i++) {
			rep[s][i] = analyse(env.input[s][i]);
			if (!rep[s][i])
				goto out;
		}
	status = print(rep);
out:
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < env.nr[s]; i++)
			pipeline__free(rep[s][i]);
	return status;
}
