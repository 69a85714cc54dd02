// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe diff: two recordings side by side, and whether the cycle time changed. */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "diff.h"
#include "log.h"
#include "record.h"
#include "tracefile.h"

static struct diff_env {
	const char *input[2];
	int nr_inputs;
	bool json;
} env;

static const char doc[] =
	"Compare two recordings (A, then B): cycle time per loop and overall (p50, p90, p99,\n"
	"mean, cycles/s), phase spans and blocked time, launches and syncs per cycle, for A,\n"
	"for B and the change B - A. The change in cycle time gets a 95% bootstrap interval and\n"
	"a verdict; setup the recordings show (ranks, graphs per role and their kernels) is\n"
	"compared too.\n\n"
	"EXAMPLES:\n"
	"  specprobe diff k3.sprb k5.sprb\n"
	"  specprobe diff --json before.sprb after.sprb | jq .cycle_time.verdict\n";

static const struct argp_option options[] = {
	{ "json", 'j', NULL, 0, "One JSON document (docs/diff-json.md)", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'j':
		env.json = true;
		break;
	case ARGP_KEY_ARG:
		if (env.nr_inputs == 2)
			argp_error(state, "two recordings: specprobe diff A B");
		env.input[env.nr_inputs++] = arg;
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
static struct reporter *analyse(const char *path)
{
	struct reporter *rep = NULL;
	struct tf_reader *r;
	const void *rec;
	char err[512];
	int ret;

	r = tf_reader__open(path, err, sizeof(err));
	if (!r) {
		log_error("%s", err);
		return NULL;
	}
	rep = reporter__new(tf_reader__header(r));
	if (!rep) {
		log_error("out of memory");
		goto fail;
	}
	while ((ret = tf_reader__next(r, &rec)) > 0) {
		ret = reporter__feed(rep, rec, ((const struct sp_rec_hdr *)rec)->size);
		if (ret)
			break;
	}
	if (ret == -ENODATA || ret == -EBADMSG) {
		log_error("%s: no diff", tf_reader__error(r));
		goto fail;
	}
	if (!ret)
		ret = reporter__finish(rep);
	if (ret < 0) {
		log_error("%s: %s", path, strerror(-ret));
		goto fail;
	}
	tf_reader__free(r);
	return rep;
fail:
	reporter__free(rep);
	tf_reader__free(r);
	return NULL;
}

static bool has_cycles(const struct cycles *cy)
{
	for (size_t l = 0; l < cy->nr_loops; l++)
		if (cy->loops[l].nr_cycles)
			return true;
	return false;
}

static int print(struct reporter *rep[2])
{
	struct diff_input in[2];
	struct diff d;
	int ret;

	for (int s = 0; s < 2; s++) {
		in[s] = (struct diff_input){ env.input[s], reporter__model(rep[s]),
					     reporter__cycles(rep[s]) };
		if (!has_cycles(in[s].cycles)) {
			log_error("%s: no cycles found: nothing to compare", in[s].path);
			return 1;
		}
	}
	ret = diff__compute(&d, &in[0], &in[1]);
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
	struct reporter *rep[2] = { NULL, NULL };
	int status = 1;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 2;
	for (int s = 0; s < 2; s++) {
		rep[s] = analyse(env.input[s]);
		if (!rep[s])
			goto out;
	}
	status = print(rep);
out:
	reporter__free(rep[0]);
	reporter__free(rep[1]);
	return status;
}
