// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "log.h"
#include "parse.h"

int cli__parse_pids(const char *arg, int *pids, int *nr_pids, int max_pids)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		unsigned long pid;

		if (parse__ulong(tok, &pid) || pid == 0 || pid > 0x7fffffff ||
		    *nr_pids >= max_pids)
			ret = -EINVAL;
		else
			pids[(*nr_pids)++] = pid;
	}
	free(copy);
	return ret;
}

#define OPT_STACKS 0x200	/* no short option */

static const struct argp_option recording_options[] = {
	{ "output", 'o', "FILE", 0, "Recording to write", 0 },
	{ "duration", 'd', "SECONDS", 0, "Stop after this long", 0 },
	{ "force", 'f', NULL, 0, "Overwrite an existing recording", 0 },
	{ "ring-mb", 'r', "MB", 0, "Ring buffer size in MiB, a power of two (default 64)", 0 },
	{ "mode", 'm', "OCTAL", 0, "Permissions of the recording (default 0600: only you read it)",
	  0 },
	{ "stacks", OPT_STACKS, "WHICH", 0,
	  "Call sites (native and Python stacks) of: syncs (blocking and implicitly "
	  "synchronising calls, the default), all, none", 0 },
	{},
};

/* Octal permission bits, no set-id or sticky bit: 0 or -EINVAL. */
static int parse_mode(const char *arg, unsigned int *mode)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 8);
	if (errno || end == arg || *end || arg[0] == '-' || v > 0777)
		return -EINVAL;
	*mode = v;
	return 0;
}

static error_t parse_recording_arg(int key, char *arg, struct argp_state *state)
{
	struct recording_args *rec = state->input;

	switch (key) {
	case 'o':
		rec->output = arg;
		break;
	case 'd':
		if (parse__ulong(arg, &rec->duration_s) || rec->duration_s == 0)
			argp_error(state, "invalid duration '%s'", arg);
		break;
	case 'f':
		rec->force = true;
		break;
	case 'm':
		if (parse_mode(arg, &rec->mode))
			argp_error(state, "--mode takes octal permissions up to 0777, e.g. 0640");
		rec->mode_set = true;
		break;
	case OPT_STACKS:
		if (!strcmp(arg, "syncs"))
			rec->stacks = STACKS_SYNCS;
		else if (!strcmp(arg, "all"))
			rec->stacks = STACKS_ALL;
		else if (!strcmp(arg, "none"))
			rec->stacks = STACKS_NONE;
		else
			argp_error(state, "--stacks takes syncs, all or none");
		break;
	case 'r':
		if (parse__ulong(arg, &rec->ring_mb) || !rec->ring_mb ||
		    (rec->ring_mb & (rec->ring_mb - 1)) || rec->ring_mb > 4096)
			argp_error(state, "--ring-mb must be a power of two up to 4096");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp recording_argp = { recording_options, parse_recording_arg, NULL, NULL, NULL,
				     NULL, NULL };

static const struct argp_option target_options[] = {
	{ "pid", 'p', "PID[,PID...]", 0, "Trace these processes and their descendants", 0 },
	{ "lib", 'l', "PATH", 0, "Attach to this library file as well", 0 },
	{ "user", 'u', "USER", 0, "Run the command after -- as this user (name or uid)", 0 },
	{ "verbose", 'v', NULL, 0, "Debug messages, libbpf's included", 0 },
	{},
};

static error_t parse_target_arg(int key, char *arg, struct argp_state *state)
{
	struct target_args *targets = state->input;

	switch (key) {
	case 'p':
		if (cli__parse_pids(arg, targets->pids, &targets->nr_pids, MAX_PIDS))
			argp_error(state, "invalid pid list '%s'", arg);
		break;
	case 'l':
		if (targets->nr_libs == MAX_LIBS)
			argp_error(state, "at most %d --lib", MAX_LIBS);
		targets->libs[targets->nr_libs++] = arg;
		break;
	case 'u':
		targets->user = arg;
		break;
	case 'v':
		log_verbose = true;
		break;
	case ARGP_KEY_ARGS:
		/* everything after "--" is the command; argp stops option parsing there */
		targets->cmd = state->argv + state->next;
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (targets->user && !targets->cmd)
			argp_error(state, "-u USER applies to a command given after --");
		if (targets->cmd && targets->nr_pids)
			argp_error(state, "either -p PID or -- CMD, not both");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp target_argp = { target_options, parse_target_arg, NULL, NULL, NULL, NULL, NULL };

bool cli__after_dashdash(const struct argp_state *state)
{
	for (int i = 1; i < state->next - 1; i++)
		if (!strcmp(state->argv[i], "--"))
			return true;
	return false;
}
