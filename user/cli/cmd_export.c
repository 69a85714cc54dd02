// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe export: a recording as a Perfetto trace (.pftrace) for ui.perfetto.dev. */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cli.h"
#include "log.h"
#include "perfetto_view.h"
#include "pipeline.h"
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

enum { OPT_FORCE = 256 };

static const struct argp_option options[] = {
	{ "output", 'o', "FILE", 0, "Trace to write (required)", 0 },
	{ "force", OPT_FORCE, NULL, 0, "Replace FILE if it exists (never through a symlink)", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'o':
		env.output = arg;
		break;
	case OPT_FORCE:
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

/* The trace would overwrite what it reads: refused, and neither file is touched. */
static bool is_input(int fd, const char *input, const char *output)
{
	struct stat a, b;

	if (!input || fstat(fd, &a) || stat(input, &b) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		return false;
	log_error("%s is the recording itself: name another trace file", output);
	return true;
}

int export__open_output(const char *path, bool force, const char *input)
{
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (force ? 0 : O_EXCL);
	int fd = open(path, flags, 0644);
	struct stat st;

	if (fd >= 0) {
		if (is_input(fd, input, path)) {
			close(fd);
			return -1;
		}
		/* truncated only once known not to be the recording (devices are not) */
		if (!force || fstat(fd, &st) || !S_ISREG(st.st_mode) || !ftruncate(fd, 0))
			return fd;
		log_error("cannot truncate %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	/* a symlink gives EEXIST under O_EXCL and ELOOP under O_NOFOLLOW */
	if ((errno == EEXIST || errno == ELOOP) && !lstat(path, &st) && S_ISLNK(st.st_mode))
		log_error("%s is a symlink: not followed", path);
	else if (errno == EEXIST)
		log_error("%s exists: --force replaces it", path);
	else
		log_error("cannot create %s: %s", path, strerror(errno));
	return -1;
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
		log_error("%s: %s", input, strerror(-ret));
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

int export__write(struct pipeline *p, const char *input, int fd, const char *output)
{
	struct wholerun *whole = pipeline__wholerun(p);
	struct perfetto_out *o = NULL;
	int status = 1;

	if (is_input(fd, input, output)) {
		close(fd);
		pipeline__free(p);
		wholerun__free(whole);
		return 1;
	}
	status = export_passes(&p, input, fd, output, &o);
	if (close(fd) && !status) {
		log_error("writing %s: %s", output, strerror(errno));
		status = 1;
	}
	/* a cut or corrupt recording leaves no half trace behind */
	if (status)
		unlink(output);
	else	/* a recording with no end was said so as it was read */
		log_info("%s: %llu bytes, %llu calls", output,
			 (unsigned long long)perfetto__bytes(o),
			 (unsigned long long)pipeline__stats(p)->calls);
	perfetto__free(o);
	pipeline__free(p);
	wholerun__free(whole);
	return status;
}

int cmd_export(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "FILE", doc, NULL, NULL, NULL };
	struct pipeline *p;
	int fd;

	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 2;
	p = export__open_input(env.input);
	if (!p)
		return 1;
	fd = export__open_output(env.output, env.force, env.input);
	if (fd < 0) {
		wholerun__free(pipeline__wholerun(p));
		pipeline__free(p);
		return 1;
	}
	return export__write(p, env.input, fd, env.output);
}
