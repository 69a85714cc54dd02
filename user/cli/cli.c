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
#include "ring.h"
#include "servermetrics.h"

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
#define OPT_GPU 0x201
#define OPT_CUPTI 0x202
#define OPT_SERVER_METRICS 0x203
#define OPT_SERVER_METRICS_INTERVAL 0x204
#define OPT_SAMPLE 0x205

static const struct argp_option recording_options[] = {
	{ "output", 'o', "FILE", 0, "Recording to write", 0 },
	{ "duration", 'd', "DURATION", 0, "Stop after this long (30 or 30s, 500ms, 2m)", 0 },
	{ "force", 'f', NULL, 0, "Overwrite an existing recording", 0 },
	{ "ring-mb", 'r', "MB", 0, "Ring buffer size in MiB, a power of two (default 64)", 0 },
	{ "mode", 'm', "OCTAL", 0, "Permissions of the recording (default 0600: only you read it)",
	  0 },
	{ "max-size", 'M', "SIZE", 0,
	  "Keep only the newest SIZE (K, M, G) of the recording: a ring of files FILE.0, FILE.1 "
	  "... that reads as FILE; what was rotated out is stated in it", 0 },
	{ "dump-on", 'D', "hung=DURATION", 0,
	  "Record into a ring (--max-size, default 64M) and, when a call stays unreturned "
	  "DURATION, link the ring's segments up to a second later as FILE.hung-N", 0 },
	{ "stacks", OPT_STACKS, "WHICH", 0,
	  "Call sites (native and Python stacks) of: syncs (blocking and implicitly "
	  "synchronising calls, the default; and some launches: each graph's once a "
	  "second, one in eight first kernels of a burst, 20 ms apart), all, none", 0 },
	{ "gpu", OPT_GPU, NULL, 0,
	  "The GPU's own start and end of every graph, kernel and copy, from CUPTI in the "
	  "target: brought in at its start (-- CMD) or into it running (-p) "
	  "(docs/gpu-timeline.md)", 0 },
	{ "cupti", OPT_CUPTI, "PATH", 0, "--gpu: the libcupti.so the target loads (default: "
	  "its own, found beside its CUDA libraries)", 0 },
	{ "server-metrics", OPT_SERVER_METRICS, "URL", 0,
	  "The server's own Prometheus endpoint (vLLM, SGLang --enable-metrics), e.g. "
	  "http://127.0.0.1:8000/metrics: tokens/s and accept length beside the cycles "
	  "(docs/server-metrics.md)", 0 },
	{ "server-metrics-interval", OPT_SERVER_METRICS_INTERVAL, "SEC", 0,
	  "Scrape --server-metrics this often (default 1 s; e.g. 0.5, 2s, 500ms)", 0 },
	{ "sample", OPT_SAMPLE, "ON/EVERY", 0,
	  "Launch probes in for ON of every EVERY (e.g. 250ms/2.5s), syncs, copies, graphs "
	  "and events all the time: launch figures come from the windows", 0 },
	{},
};

void cli__default_output(struct recording_args *rec, const struct target_args *targets,
			 const char *prefix)
{
	static char path[64];

	if (rec->output)
		return;
	snprintf(path, sizeof(path), "%s-%d.sprb", prefix,
		 targets->nr_pids ? targets->pids[0] : (int)getpid());
	rec->output = path;
	rec->output_named = true;
	log_info("recording to %s (no -o given)", path);
}

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

/* --sample ON/EVERY: two durations (bare: seconds), 1 ms <= ON < EVERY <= a day. */
static void parse_sample(struct argp_state *state, const char *arg, struct recording_args *rec)
{
	const char *slash = strchr(arg, '/');
	char on[64];

	if (!slash || slash == arg || (size_t)(slash - arg) >= sizeof(on))
		argp_error(state, "--sample takes ON/EVERY, two durations, e.g. 250ms/2.5s");
	snprintf(on, sizeof(on), "%.*s", (int)(slash - arg), arg);
	if (parse__duration_ns(on, PARSE_NS_PER_S, &rec->sample_on_ns) ||
	    parse__duration_ns(slash + 1, PARSE_NS_PER_S, &rec->sample_every_ns))
		argp_error(state, "--sample: '%s' is not ON/EVERY, two durations, e.g. 250ms/2.5s",
			   arg);
	if (rec->sample_on_ns < PARSE_NS_PER_MS || rec->sample_every_ns > 86400 * PARSE_NS_PER_S)
		argp_error(state, "--sample: ON is at least 1ms and EVERY at most a day");
	if (rec->sample_on_ns >= rec->sample_every_ns)
		argp_error(state, "--sample: ON must be shorter than EVERY (%s)", arg);
}

static error_t parse_recording_arg(int key, char *arg, struct argp_state *state)
{
	struct recording_args *rec = state->input;

	switch (key) {
	case 'o':
		rec->output = arg;
		break;
	case 'd':
		if (parse__duration_ns(arg, PARSE_NS_PER_S, &rec->duration_ns) || !rec->duration_ns)
			argp_error(state, "--duration: '%s' is not a duration above 0, "
				   DURATION_HINT, arg);
		break;
	case 'f':
		rec->force = true;
		break;
	case 'm':
		if (parse_mode(arg, &rec->mode))
			argp_error(state, "--mode takes octal permissions up to 0777, e.g. 0640");
		rec->mode_set = true;
		break;
	case 'M':
		if (parse__size(arg, &rec->max_bytes) || rec->max_bytes < TF_RING_MIN_BYTES)
			argp_error(state, "--max-size takes a size of at least 256K, e.g. 100M");
		break;
	case 'D':
		if (strncmp(arg, "hung=", 5) || parse__seconds_ns(arg + 5, &rec->hung_ns))
			argp_error(state, "--dump-on takes hung=DURATION up to a day, e.g. hung=5 "
				   "or hung=500ms");
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
	case OPT_GPU:
		rec->gpu = true;
		break;
	case OPT_CUPTI:
		rec->cupti = arg;
		rec->gpu = true;
		break;
	case OPT_SERVER_METRICS: {
		struct srvm_url url;
		char err[512];

		if (srvm__parse_url(arg, &url, err, sizeof(err)))
			argp_error(state, "%s", err);
		rec->server_metrics = arg;
		break;
	}
	case OPT_SERVER_METRICS_INTERVAL:
		if (parse__seconds_ns(arg, &rec->server_metrics_interval_ns) ||
		    rec->server_metrics_interval_ns < 10 * PARSE_NS_PER_MS)
			argp_error(state, "--server-metrics-interval takes a duration from 10ms to "
				   "a day, " DURATION_HINT);
		break;
	case OPT_SAMPLE:
		parse_sample(state, arg, rec);
		break;
	case ARGP_KEY_END:
		if (rec->server_metrics_interval_ns && !rec->server_metrics)
			argp_error(state, "--server-metrics-interval needs --server-metrics URL");
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
		cli__pid_hint(state, state->argv[state->next], "command");
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

/* -h, --help and -V on every command, in place of argp's -? (still taken, unlisted). */
enum { OPT_USAGE = 0x301 };

static const struct argp_option help_options[] = {
	{ "help", 'h', NULL, 0, "Give this help list", -1 },
	{ NULL, '?', NULL, OPTION_HIDDEN, NULL, -1 },
	{ "usage", OPT_USAGE, NULL, 0, "Give a short usage message", -1 },
	{ "version", 'V', NULL, 0, "Print specprobe's version", -1 },
	{},
};

static error_t parse_help_arg(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	switch (key) {
	case 'h':
	case '?':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case OPT_USAGE:
		argp_state_help(state, stdout, ARGP_HELP_USAGE | ARGP_HELP_EXIT_OK);
		break;
	case 'V':
		printf("specprobe %s\n", SPECPROBE_VERSION);
		exit(0);
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp help_argp = { help_options, parse_help_arg, NULL, NULL, NULL, NULL,
				       NULL };

int cli__argp_parse(const struct argp *argp, int argc, char **argv)
{
	struct argp_child children[8] = {};
	struct argp with_help = *argp;
	size_t n = 0;

	for (; argp->children && argp->children[n].argp; n++) {
		if (n + 2 >= sizeof(children) / sizeof(children[0]))
			return -E2BIG;
		children[n] = argp->children[n];
	}
	/* last, so the commands' child_inputs[] keep their indexes */
	children[n].argp = &help_argp;
	with_help.children = children;
	return argp_parse(&with_help, argc, argv, ARGP_NO_HELP, NULL, NULL) ? -EINVAL : 0;
}

void cli__pid_hint(struct argp_state *state, const char *arg, const char *what)
{
	unsigned long pid;

	if (!parse__ulong(arg, &pid))
		argp_error(state, "%s is not a %s: to trace pid %s give -p %s", arg, what, arg,
			   arg);
}

bool cli__after_dashdash(const struct argp_state *state)
{
	for (int i = 1; i < state->next - 1; i++)
		if (!strcmp(state->argv[i], "--"))
			return true;
	return false;
}
