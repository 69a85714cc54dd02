// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe demo: trace the bundled simulated server, show what was captured. */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "catalog.h"
#include "cli.h"
#include "dump_fmt.h"
#include "host.h"
#include "log.h"
#include "parse.h"
#include "pipeline.h"
#include "safepath.h"

#define SERVER_NAME "specsim-server"

static struct demo_env {
	const char *dir;
	unsigned long cycles;
	unsigned long ranks;
	const char *server;
	bool verbose;
} env = { .cycles = 200, .ranks = 1 };

static const char doc[] =
	"Trace the bundled simulated GPU server (tools/specsim), which plants a "
	"cuStreamSynchronize between draft and verify every 10th cycle: say what was planted "
	"and what specprobe found, then show 'specprobe report' of the recording (--verbose: "
	"one decode cycle's calls and the calls per entry point first). Needs root, no GPU.\n\n"
	"The server is looked for at $SPECPROBE_SPECSIM, next to the specprobe binary "
	"(.output/specsim/ in a build tree), then in ../lib/specprobe/ beside it.\n";

/* long only: -o, -c and -r name a file, --counts and --ring-mb in the other commands */
enum { OPT_KEEP = 256, OPT_CYCLES, OPT_RANKS };

static const struct argp_option options[] = {
	{ "keep", OPT_KEEP, "DIR", 0,
	  "Keep the recording and ground truth in DIR (without it they are made in a new /tmp "
	  "folder, removed at the end); made 0700, or "
	  "one there must be root's or yours and writable by no one else", 0 },
	{ "output", OPT_KEEP, "DIR", OPTION_ALIAS | OPTION_HIDDEN, NULL, 0 },
	{ "cycles", OPT_CYCLES, "N", 0, "Decode cycles to run (default 200)", 0 },
	{ "ranks", OPT_RANKS, "N", 0, "Tensor-parallel ranks, one process each (default 1)", 0 },
	{ "server", 's', "PATH", 0, "specsim-server to run", 0 },
	{ "verbose", 'v', NULL, 0, "Also print one decode cycle's calls and the calls per entry point",
	  0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case OPT_KEEP:
		env.dir = arg;
		break;
	case OPT_CYCLES:
		if (parse__ulong(arg, &env.cycles) || !env.cycles || env.cycles > 1000000)
			argp_error(state, "invalid cycle count '%s'", arg);
		break;
	case OPT_RANKS:
		if (parse__ulong(arg, &env.ranks) || !env.ranks || env.ranks > 64)
			argp_error(state, "invalid rank count '%s'", arg);
		break;
	case 's':
		env.server = arg;
		break;
	case 'v':
		env.verbose = true;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The simulator next to this binary: build tree first, then an installed layout. */
static int find_server(char *path, size_t size)
{
	static const char *const beside[] = { "/.output/specsim/" SERVER_NAME,
					      "/../lib/specprobe/" SERVER_NAME };
	char self[PATH_MAX - 64];
	ssize_t len;

	if (env.server || (env.server = getenv("SPECPROBE_SPECSIM"))) {
		char *abs = realpath(env.server, NULL);

		/* absolute: the demo runs in its folder */
		if (!abs)
			return -errno;
		snprintf(path, size, "%s", abs);
		free(abs);
		return access(path, X_OK) ? -errno : 0;
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return -errno;
	self[len] = '\0';
	*strrchr(self, '/') = '\0';
	for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]); i++) {
		snprintf(path, size, "%s%s", self, beside[i]);
		if (!access(path, X_OK))
			return 0;
	}
	return -ENOENT;
}

static pid_t spawn(char *const argv[], const char *log_path)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

		if (fd < 0) {
			log_error("creating %s: %s", log_path, strerror(errno));
			_exit(127);
		}
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* What users run next: the report of the recording, on our stdout. */
static int show_report(const char *self, const char *dir, const char *recording)
{
	char *argv[] = { (char *)self, "report", (char *)recording, NULL };
	int status;
	pid_t pid;

	printf("\nspecprobe report %s/%s\n", dir, recording);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execv(self, argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		log_error("specprobe report %s failed", recording);
		return -1;
	}
	return 0;
}

/* Wait until path exists, or child exits first. */
static bool wait_for(const char *path, pid_t child, int seconds)
{
	struct timespec tick = { 0, 20 * 1000 * 1000 };

	for (int i = 0; i < seconds * 50; i++) {
		if (!access(path, F_OK))
			return true;
		if (waitpid(child, NULL, WNOHANG) == child)
			return false;
		nanosleep(&tick, NULL);
	}
	return false;
}

static int read_first_pid(const char *path)
{
	FILE *f = fopen(path, "re");
	int pid = -1;

	if (f) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = -1;
		fclose(f);
	}
	return pid;
}

/* The demo's view of the recording: counts per entry point and one cycle. */
struct summary {
	__u64 per_entry[256];
	__u32 main_tid;
	int copies_seen;	/* accept copies (one per cycle) of the main thread so far */
	bool printing;
	bool printed;
	__u64 cycle_start;
};

#define SHOWN_CYCLE 10	/* skip the first cycles: warm-up */

/* Print the main thread's calls from one accept sync to the next. */
static int summarise_call(void *ctx, const struct tf_header *hdr, const struct sp_call *c)
{
	struct summary *s = ctx;
	__u32 entry = c->entry.probe < hdr->nr_probes ? hdr->probes[c->entry.probe].catalog : 0;
	const char *name = dump_fmt__name(hdr, c->entry.probe);
	bool sync = !strcmp(name, "cuStreamSynchronize");

	if (entry < sizeof(s->per_entry) / sizeof(s->per_entry[0]))
		s->per_entry[entry]++;
	if (c->entry.tid != s->main_tid || s->printed)
		return 0;
	if (s->printing) {
		printf("  +%9.1f us ", (c->entry.ts - s->cycle_start) / 1000.0);
		dump_fmt__text(stdout, hdr, c);
		s->printed = sync && s->copies_seen > SHOWN_CYCLE;
	} else if (sync && s->copies_seen == SHOWN_CYCLE) {
		s->printing = true;
		s->cycle_start = c->ts_return;
	}
	s->copies_seen += !strcmp(name, "cuMemcpyDtoHAsync");
	return 0;
}

static int summarise(const char *recording)
{
	static const struct pipeline_opts calls_only = { .analyse = false };
	struct summary s = { 0 };
	struct pipeline_consumer consumer = { .call = summarise_call, .ctx = &s };
	const struct decode_stats *st;
	const struct tf_header *hdr;
	struct pipeline *p;
	char err[512];

	p = pipeline__open(recording, &calls_only, err, sizeof(err));
	if (!p) {
		log_error("%s", err);
		return -1;
	}
	hdr = pipeline__header(p);
	s.main_tid = hdr->nr_targets ? hdr->targets[hdr->nr_targets > 1 ? 1 : 0] : 0;
	pipeline__add(p, &consumer);
	printf("\none decode cycle of pid %u, from the accept sync of cycle %d to the next:\n",
	       s.main_tid, SHOWN_CYCLE);
	pipeline__read_all(p);
	pipeline__finish(p);
	printf("\ncalls per entry point (all processes):\n");
	for (int e = 0; e < catalog_len && e < 256; e++)
		if (s.per_entry[e])
			printf("  %10llu  %s\n", (unsigned long long)s.per_entry[e], catalog[e].name);
	st = pipeline__stats(p);
	printf("\n%llu calls, %llu dropped records, %llu unreturned\n",
	       (unsigned long long)st->calls,
	       (unsigned long long)(st->counters[SP_CNT_DROP_CALL] + st->counters[SP_CNT_DROP_RET]),
	       (unsigned long long)st->unreturned);
	pipeline__free(p);
	return 0;
}

/* Calls the server tagged as planted in its ground truth (one file per rank). */
static size_t count_planted(const char *truth, unsigned long ranks)
{
	char path[PATH_MAX + 64], line[4096];
	size_t planted = 0;

	for (unsigned long rank = 0; rank < ranks; rank++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s.rank%lu", truth, rank);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			planted += strstr(line, "\"tag\":\"planted-sync\"") != NULL;
		fclose(f);
	}
	return planted;
}

/* The flagged calls of the planted kind and place, and the call site most of them came from. */
static void put_found(const struct syncs *sy, const struct callstacks *stacks, size_t planted)
{
	size_t found = 0, others;
	__u64 blocked_ns = 0;
	const char *site = NULL;

	for (size_t i = 0; i < sy->flagged_sites.nr; i++) {
		const struct sync_site *s = &sy->flagged_sites.sites[i];

		if (s->pos == SPOS_DRAFT_VERIFY && !strcmp(model__call_name(s->name),
							   "cuStreamSynchronize")) {
			found += s->count;
			blocked_ns += s->blocked_ns;
		}
	}
	for (size_t i = 0; i < sy->nr_by_callsite && !site; i++) {
		const struct cs_site *cs = callstacks__site(stacks, sy->by_callsite[i].site);

		if (sy->by_callsite[i].flagged && cs)
			site = cs->label;
	}
	others = sy->flagged - found;
	printf("Found:   %zu of them flagged between draft and verify, %.3f ms blocked a cycle\n",
	       found, sy->cycles ? blocked_ns / 1e6 / sy->cycles : 0.0);
	if (site)
		printf("         called at %s\n", site);
	if (found != planted)
		printf("         %zu planted were not flagged\n", planted > found ? planted - found : 0);
	if (others)
		printf("         %zu other syncs flagged: see the report\n", others);
	else
		printf("         no other sync flagged\n");
}

/* The demo's answer first: what the server planted, what specprobe found. */
static int show_findings(const char *recording, const char *truth)
{
	static const struct pipeline_opts analyse = { .analyse = true };
	size_t planted = count_planted(truth, env.ranks);
	const struct results *res;
	struct pipeline *p;
	char err[512];

	p = pipeline__open(recording, &analyse, err, sizeof(err));
	if (!p) {
		log_error("%s", err);
		return -1;
	}
	if (pipeline__read_all(p) < 0 || pipeline__finish(p) || !(res = pipeline__results(p))) {
		log_error("%s: %s", recording, pipeline__error(p));
		pipeline__free(p);
		return -1;
	}
	printf("\nPlanted: a cuStreamSynchronize between draft and verify, every 10th cycle\n"
	       "         %zu in %lu cycles of %lu rank(s), as the server's own record says\n", planted,
	       env.cycles, env.ranks);
	put_found(&res->syncs, pipeline__callstacks(p), planted);
	pipeline__free(p);
	return 0;
}

/* The folder worked in is no longer at dir (renamed, a link planted there): say so. */
static void warn_moved(const char *dir)
{
	struct stat here, named;

	if (!stat(".", &here) && !lstat(dir, &named) && here.st_dev == named.st_dev &&
	    here.st_ino == named.st_ino)
		return;
	log_warn("%s was moved or replaced while the demo ran: its files stay in the folder "
		 "it made, wherever that is now, and nothing was written where %s leads", dir, dir);
}

/*
 * Run in the demo's folder, the current folder by now: every name is relative
 * to it, in this process and its children, so renaming the folder or planting
 * a link at its name redirects nothing. dir is only shown.
 */
static int run_demo(const char *server, const char *dir)
{
	static const char ready[] = "ready", go[] = "go", truth[] = "truth";
	static const char recording[] = "demo.sprb", log_server[] = "server.log";
	static const char log_record[] = "record.log";
	char self[PATH_MAX], cycles[32], ranks[32], pid_arg[32];
	pid_t server_pid, record_pid;
	int target, status;
	ssize_t len;

	snprintf(cycles, sizeof(cycles), "%lu", env.cycles);
	snprintf(ranks, sizeof(ranks), "%lu", env.ranks);
	char *server_argv[] = { (char *)server, "--cycles", cycles, "--ranks", ranks,
				"--plant-sync", "10", "--ready-file", (char *)ready, "--go-file",
				(char *)go, "--ground-truth", (char *)truth, NULL };

	/* a run before this one in the folder: its files go, every one is made anew (O_EXCL) */
	unlink(ready);
	unlink(go);
	unlink(log_server);
	unlink(log_record);
	printf("specprobe demo: %s --cycles %s --ranks %s --plant-sync 10\n", server, cycles, ranks);
	server_pid = spawn(server_argv, log_server);
	if (server_pid < 0 || !wait_for(ready, server_pid, 30) || (target = read_first_pid(ready)) <= 0) {
		log_error("the simulated server did not start: see %s/%s", dir, log_server);
		return -1;
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[len > 0 ? len : 0] = '\0';
	snprintf(pid_arg, sizeof(pid_arg), "%d", target);
	char *record_argv[] = { self, "record", "-o", (char *)recording, "--force", "-p", pid_arg,
				NULL };

	printf("specprobe record -o %s/%s -p %d\n", dir, recording, target);
	record_pid = spawn(record_argv, log_record);
	if (record_pid < 0 || !wait_for(recording, record_pid, 30)) {
		log_error("recording did not start: see %s/%s", dir, log_record);
		kill(server_pid, SIGTERM);
		return -1;
	}
	close(open(go, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
	waitpid(server_pid, &status, 0);
	waitpid(record_pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		log_error("recording failed: see %s/%s", dir, log_record);
		return -1;
	}
	if (env.verbose && summarise(recording))
		return -1;
	if (show_findings(recording, truth) || show_report(self, dir, recording))
		return -1;
	if (env.dir) {
		printf("\nrecording: %s/%s (specprobe dump --json %s/%s, specprobe report %s/%s)\n"
		       "ground truth: %s/%s.rank*\n", dir, recording, dir, recording, dir, recording,
		       dir, truth);
		warn_moved(dir);
	} else {
		printf("\nthe recording and ground truth are removed: --keep DIR keeps them\n");
	}
	return 0;
}

/* The demo's own folder (mkdtemp's, holding only the files it made) and what is in it. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	if (rmdir(dir))
		log_warn("removing %s: %s", dir, strerror(errno));
}

/*
 * The folder is made 0700, or one that is there must be ours alone: owned by
 * root or this user, writable by no one else. Anyone else who could add names
 * there could point the demo's files at a file of root's. It is reached
 * through no link another user could plant (safepath.h), and the demo works in
 * it from then on (fchdir): a rename of it later redirects nothing.
 */
static int enter_own_dir(const char *dir)
{
	char err[PATH_MAX + 128];
	struct stat st;
	int fd = safepath__open_dir(dir, true, 0700, err, sizeof(err));

	if (fd < 0) {
		log_error("%s", err);
		return -1;
	}
	if (fstat(fd, &st) || (st.st_uid && st.st_uid != geteuid()) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		log_error("%s is not a folder of this user's alone (owner uid %u, mode %04o): "
			  "name a new one", dir, (unsigned int)st.st_uid,
			  (unsigned int)(st.st_mode & 07777));
		close(fd);
		return -1;
	}
	if (fchdir(fd)) {
		log_error("entering %s: %s", dir, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int cmd_demo(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, NULL, doc, NULL, NULL, NULL };
	char server[PATH_MAX], dir[PATH_MAX];
	int ret;

	if (cli__argp_parse(&argp, argc, argv))
		return 2;
	if (host__check_bpf())
		return 1;
	ret = find_server(server, sizeof(server));
	if (ret) {
		log_error("no %s found (%s): build it with 'make', or set SPECPROBE_SPECSIM", SERVER_NAME,
			  strerror(-ret));
		return 1;
	}
	if (env.dir) {
		snprintf(dir, sizeof(dir), "%s", env.dir);
	} else {
		snprintf(dir, sizeof(dir), "/tmp/specprobe-demo.XXXXXX");
		if (!mkdtemp(dir)) {
			log_error("creating a folder in /tmp: %s", strerror(errno));
			return 1;
		}
	}
	if (enter_own_dir(dir))
		return 1;
	if (run_demo(server, dir))
		return 1;	/* its logs are named in the error: the folder stays */
	if (!env.dir)
		remove_dir(dir);
	return 0;
}
