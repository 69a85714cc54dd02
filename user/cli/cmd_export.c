// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe export: a recording as a Perfetto trace (.pftrace) for ui.perfetto.dev. */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cli.h"
#include "log.h"
#include "outfile.h"
#include "perfetto_view.h"
#include "pipeline.h"
#include "ring.h"
#include "spill.h"

static struct export_env {
	const char *input;
	const char *output;
	bool force;
} env;

static const char doc[] =
	"Write a recording as a Perfetto trace: every call a slice on its thread, the decode "
	"cycles and their phases on a track per loop, graph launches named by role, flagged "
	"syncs with flows to the launch they waited on, and calls/s, cycles/s and drops/s "
	"counters (docs/perfetto.md). Open the file in ui.perfetto.dev.\n\n"
	"EXAMPLES:\n"
	"  specprobe export run.sprb -o run.pftrace\n"
	"  specprobe export run.sprb -o run.pftrace --force\n";

static const struct argp_option options[] = {
	{ "output", 'o', "FILE", 0, "Trace to write (required)", 0 },
	{ "force", 'f', NULL, 0, "Replace FILE if it exists (by a rename: never through a symlink, never in place)", 0 },
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
		if (env.input)
			argp_error(state, "one recording at a time");
		env.input = arg;
		break;
	case ARGP_KEY_END:
		if (!env.input)
			argp_error(state, "which recording? specprobe export FILE -o OUT.pftrace");
		if (!env.output)
			argp_error(state, "where to? -o OUT.pftrace is required");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int export__open_output(struct outfile *out, const char *path, bool force, const char *input)
{
	char err[PATH_MAX + 128];

	*out = (struct outfile)OUTFILE_INIT;
	/* by device and inode, the ring's segments too: a hard link is the recording as well */
	if (input && (!strcmp(input, path) || tf_ring__names(input, path))) {
		log_error("%s is the recording itself: name another trace file", path);
		return -1;
	}
	/* the trace holds what the recording does (arguments, call sites): made as it is */
	if (outfile__open(out, path, force, TF_DEFAULT_MODE, err, sizeof(err))) {
		log_error("%s", err);
		return -1;
	}
	return 0;
}

/* A pass over the recording, of the whole run read in windows (wholerun.h). */
static struct pipeline *open_pass(const char *input, struct wholerun *whole)
{
	const struct pipeline_opts opts = { .analyse = true, .tick_ns = PERFETTO_TICK_NS,
					    .whole = whole };
	struct pipeline *p;
	char err[512];

	p = pipeline__open(input, &opts, err, sizeof(err));
	if (!p)
		log_error("%s", err);
	return p;
}

struct pipeline *export__open_input(const char *input)
{
	struct wholerun *whole = wholerun__new();
	struct pipeline *p;

	if (!whole) {
		log_error("out of memory");
		return NULL;
	}
	p = open_pass(input, whole);
	if (!p)
		wholerun__free(whole);
	return p;
}

/* Read, analyse and (the last pass) write; 0, 1 with the reason logged, or 2: read again. */
static int export_run(struct pipeline *p, struct perfetto_out *o, const char *input,
		      const char *output)
{
	int ret = pipeline__read_all(p), read_ret = ret;

	if (ret == -EAGAIN)
		return 2;
	if (ret == -EBADMSG) {
		log_error("%s: no trace written", pipeline__error(p));
		return 1;
	}
	if (ret < 0 && !spill__failed()) {
		/* the trace's writer fails the read as well: name the file that failed */
		bool writing = o && perfetto__close(o) < 0;

		log_error("%s %s: %s", writing ? "writing" : "reading", writing ? output : input,
			  strerror(-ret));
		return 1;
	}
	if (!ret)
		ret = pipeline__finish(p);
	if (ret == -EAGAIN)
		return 2;
	/* what the reader made of the file, once: in the pass that writes */
	if (o && !read_ret)
		pipeline__warn_input(p, input);
	if (!ret && o)
		ret = perfetto__close(o);
	if (ret && spill__failed()) {
		log_error("reading %s: temporary files in %s: %s (set TMPDIR to a folder with "
			  "room)", input, spill__dir(), strerror(-ret));
		return 1;
	}
	if (ret) {
		log_error("writing %s: %s", output, strerror(-ret));
		return 1;
	}
	return o ? 0 : 2;
}

/*
 * The passes: the plan's first, then the one that writes the trace. A last
 * pass that finds it needs another pass first starts the file again.
 */
static int export_passes(struct pipeline **pp, const char *input, int fd, const char *output,
			 struct perfetto_out **o)
{
	struct wholerun *whole = pipeline__wholerun(*pp);
	struct pipeline_consumer c;
	int status;

	for (;;) {
		if (wholerun__last_pass(whole)) {
			*o = perfetto__new(fd, *pp);
			if (!*o) {
				log_error("out of memory");
				return 1;
			}
			perfetto__consumer(*o, &c);
			pipeline__add(*pp, &c);
		}
		status = export_run(*pp, *o, input, output);
		if (status != 2)
			return status;
		if (*o) {
			perfetto__free(*o);
			*o = NULL;
			if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET)) {
				log_error("writing %s: %s", output, strerror(errno));
				return 1;
			}
		}
		pipeline__free(*pp);
		*pp = open_pass(input, whole);
		if (!*pp)
			return 1;
	}
}

int export__write(struct pipeline *p, const char *input, struct outfile *out)
{
	struct wholerun *whole = pipeline__wholerun(p);
	const char *output = out->path;
	struct perfetto_out *o = NULL;
	char err[PATH_MAX + 128];
	int status = export_passes(&p, input, out->fd, output, &o);

	/* renamed into place only when whole: a cut or corrupt recording leaves the old trace */
	if (!status && outfile__commit(out, err, sizeof(err))) {
		log_error("%s", err);
		status = 1;
	}
	/* a recording with no end was said so as it was read */
	if (!status)
		log_info("%s: %llu bytes, %llu calls", output,
			 (unsigned long long)perfetto__bytes(o),
			 (unsigned long long)pipeline__stats(p)->calls);
	outfile__discard(out);
	perfetto__free(o);
	pipeline__free(p);
	wholerun__free(whole);
	return status;
}

int cmd_export(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "FILE", doc, NULL, NULL, NULL };
	struct outfile out;
	struct pipeline *p;

	if (cli__argp_parse(&argp, argc, argv))
		return 2;
	p = export__open_input(env.input);
	if (!p)
		return 1;
	if (export__open_output(&out, env.output, env.force, env.input)) {
		wholerun__free(pipeline__wholerun(p));
		pipeline__free(p);
		return 1;
	}
	return export__write(p, env.input, &out);
}
