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
	{ "force", 'f', NULL, 0, "Replace FILE if it exists (never through a symlink)", 0 },
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

struct pipeline *export__open_input(const char *input)
{
	static const struct pipeline_opts opts = { .analyse = true, .tick_ns = PERFETTO_TICK_NS };
	struct pipeline *p;
	char err[512];

	p = pipeline__open(input, &opts, err, sizeof(err));
	if (!p)
		log_error("%s", err);
	return p;
}

/* Read, analyse and write; 0 or 1 with the reason logged. */
static int export_run(struct pipeline *p, struct perfetto_out *o, const char *input,
		      const char *output)
{
	int ret = pipeline__read_all(p);

	if (ret == -EBADMSG) {
		log_error("%s: no trace written", pipeline__error(p));
		return 1;
	}
	if (ret < 0) {
		log_error("%s: %s", input, strerror(-ret));
		return 1;
	}
	pipeline__warn_input(p, input);
	ret = pipeline__finish(p);
	if (!ret)
		ret = perfetto__close(o);
	if (ret) {
		log_error("writing %s: %s", output, strerror(-ret));
		return 1;
	}
	return 0;
}

int export__write(struct pipeline *p, const char *input, int fd, const char *output)
{
	struct perfetto_out *o = NULL;
	struct pipeline_consumer c;
	int status = 1;

	if (is_input(fd, input, output)) {
		close(fd);
		pipeline__free(p);
		return 1;
	}
	o = perfetto__new(fd, p);
	if (!o) {
		log_error("out of memory");
	} else {
		perfetto__consumer(o, &c);
		pipeline__add(p, &c);
		status = export_run(p, o, input, output);
	}
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
	return status;
}

int cmd_export(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "FILE", doc, NULL, NULL, NULL };
	struct pipeline *p;
	int fd;

	if (cli__argp_parse(&argp, argc, argv))
		return 2;
	p = export__open_input(env.input);
	if (!p)
		return 1;
	fd = export__open_output(env.output, env.force, env.input);
	if (fd < 0) {
		pipeline__free(p);
		return 1;
	}
	return export__write(p, env.input, fd, env.output);
}
