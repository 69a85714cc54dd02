// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The floor of tracing a process: the kernel's uprobe trap alone, at every entry
 * point specprobe would attach to in the process's libraries, with empty programs
 * (hitcost.bpf.c's step_empty, and step_ret_empty where specprobe has a return
 * probe), attached as specprobe attaches (uprobe_multi links, one per library and
 * direction, no pid in the link). Run as an arm beside record, it tells how much of
 * record's cost is the trap and how much is specprobe's own.
 *   trapfloor -p PID [-t PERIOD_MS]   (root) says "tracing" on stderr once attached,
 *                        detaches on SIGINT or SIGTERM. With -t it detaches and attaches
 *                        again every PERIOD_MS and prints "on|x|off MONOTONIC_NS" at each
 *                        change (x: attaching or detaching), as tools/bench/onoff does for
 *                        specprobe's own programs: the trap's cost within one round.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "multilink.h"
#include "probes.h"
#include "targets.h"
#include "hitcost.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static int link_multi(struct bpf_program *prog, const char *path, const __u64 *offsets,
		      __u32 cnt, bool retprobe)
{
	return multilink__create(bpf_program__fd(prog), path, offsets, NULL, cnt,
				 retprobe ? MULTILINK_RETURN : MULTILINK_ENTRY);
}

/* The entry and return links of one library; counts added to *entries and *returns. */
static int attach_lib(struct hitcost_bpf *skel, const struct targets *t,
		      const struct probe_set *ps, int lib, int *fds, int *nr_fds,
		      int *entries, int *returns)
{
	__u64 *offsets = calloc(2 * ps->nr_probes + 1, sizeof(*offsets));
	__u64 *ret_offsets = offsets + ps->nr_probes;
	__u32 n = 0, n_ret = 0;
	int fd = -ENOMEM;

	if (!offsets)
		return -ENOMEM;
	for (int i = 0; i < ps->nr_probes; i++) {
		if (ps->probes[i].lib != lib)
			continue;
		offsets[n++] = ps->probes[i].offset;
		if (ps->probes[i].entry->completion)
			ret_offsets[n_ret++] = ps->probes[i].offset;
	}
	fd = n ? link_multi(skel->progs.step_empty, t->libs[lib].open_path, offsets, n, false) : 0;
	if (fd > 0)
		fds[(*nr_fds)++] = fd;
	if (fd >= 0 && n_ret) {
		fd = link_multi(skel->progs.step_ret_empty, t->libs[lib].open_path, ret_offsets,
				n_ret, true);
		if (fd > 0)
			fds[(*nr_fds)++] = fd;
	}
	free(offsets);
	if (fd < 0)
		return fd;
	*entries += n;
	*returns += n_ret;
	return 0;
}

static struct hitcost_bpf *load_empty_programs(void)
{
	struct hitcost_bpf *skel = hitcost_bpf__open();
	struct bpf_program *prog;

	if (!skel)
		return NULL;
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, prog == skel->progs.step_empty ||
					  prog == skel->progs.step_ret_empty);
	bpf_program__set_expected_attach_type(skel->progs.step_empty, UPROBE_MULTI_ATTACH);
	bpf_program__set_expected_attach_type(skel->progs.step_ret_empty, UPROBE_MULTI_ATTACH);
	if (hitcost_bpf__load(skel)) {
		hitcost_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

/* Every library's links; fds has room for two per library. */
static int attach_all(struct hitcost_bpf *skel, const struct targets *t,
		      const struct probe_set *ps, int *fds, int *nr_fds, int *entries,
		      int *returns)
{
	*entries = *returns = 0;
	for (int lib = 0; lib < t->nr_libs; lib++) {
		int r = attach_lib(skel, t, ps, lib, fds, nr_fds, entries, returns);

		if (r) {
			fprintf(stderr, "trapfloor: attaching in %s: %s\n", t->libs[lib].path,
				strerror(-r));
			return r;
		}
	}
	return 0;
}

static void detach_all(int *fds, int *nr_fds)
{
	while (*nr_fds > 0)
		close(fds[--*nr_fds]);
}

static void mark(const char *state)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	printf("%s %llu\n", state, ts.tv_sec * 1000000000ull + ts.tv_nsec);
	fflush(stdout);
}

/* Off and on again every period_ms until a signal; the links stay attached at the end. */
static int flip(struct hitcost_bpf *skel, const struct targets *t, const struct probe_set *ps,
		int *fds, int *nr_fds, unsigned int period_ms)
{
	struct timespec gap = { period_ms / 1000, (period_ms % 1000) * 1000000L };
	int entries, returns;

	mark("on");
	while (!stop) {
		nanosleep(&gap, NULL);
		mark("x");
		detach_all(fds, nr_fds);
		mark("off");
		nanosleep(&gap, NULL);
		mark("x");
		if (attach_all(skel, t, ps, fds, nr_fds, &entries, &returns))
			return -1;
		mark("on");
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct targets t = { 0 };
	struct probe_set ps = { 0 };
	struct hitcost_bpf *skel = NULL;
	int *fds = NULL, nr_fds = 0, entries = 0, returns = 0, pid = 0, period_ms = 0, ret = 1;
	char err[256];
	int c;

	while ((c = getopt(argc, argv, "p:t:")) != -1) {
		if (c == 'p')
			pid = atoi(optarg);
		else if (c == 't')
			period_ms = atoi(optarg);
		else
			pid = -1;
	}
	if (pid <= 0 || period_ms < 0 || optind != argc) {
		fprintf(stderr, "usage: trapfloor -p PID [-t PERIOD_MS]\n");
		return 2;
	}
	if (targets__discover(&pid, 1, false, &t, err, sizeof(err)) ||
	    probes__resolve(&t, &ps, err, sizeof(err))) {
		fprintf(stderr, "trapfloor: %s\n", err);
		goto out;
	}
	skel = load_empty_programs();
	if (!skel) {
		fprintf(stderr, "trapfloor: loading the programs: %s (root? kernel 6.6+?)\n",
			strerror(errno));
		goto out;
	}
	fds = calloc(2 * t.nr_libs, sizeof(*fds));	/* an entry and a return link each */
	if (!fds) {
		fprintf(stderr, "trapfloor: out of memory\n");
		goto out;
	}
	if (attach_all(skel, &t, &ps, fds, &nr_fds, &entries, &returns))
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "trapfloor: tracing pid %d: %d entry points, %d with a return probe\n",
		pid, entries, returns);
	if (period_ms && flip(skel, &t, &ps, fds, &nr_fds, period_ms))
		goto out;
	while (!stop)
		sleep(1);	/* a signal between the test and a pause() would be lost */
	ret = 0;
out:
	detach_all(fds, &nr_fds);
	free(fds);
	hitcost_bpf__destroy(skel);
	probes__free(&ps);
	targets__free(&t);
	return ret;
}
