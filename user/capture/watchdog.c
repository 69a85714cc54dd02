// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "log.h"
#include "specprobe.h"
#include "watchdog.h"

#define TICK_MS 50		/* how often stops are looked at */
#define LAST_SWEEP_GAP_MS 20	/* a program still running as the links go stops after the first */

bool stops__pending(const struct stop_maps *maps, __u32 tgid, __u64 stop_ns)
{
	__u64 stopped, done;

	if (bpf_map_lookup_elem(maps->stops_fd, &tgid, &stopped) || stopped != stop_ns)
		return false;
	return bpf_map_lookup_elem(maps->done_fd, &tgid, &done) || done != stop_ns;
}

void stops__continue(const struct stop_maps *maps, __u32 tgid, __u64 stop_ns)
{
	/*
	 * Continued before the note: a tracer killed between the two leaves a stop
	 * the watchdog still sees; a later stop goes to the other map, never lost.
	 */
	kill(tgid, SIGCONT);
	bpf_map_update_elem(maps->done_fd, &tgid, &stop_ns, BPF_ANY);
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct watch {
	struct stop_maps maps;
	__u64 *per_cpu;		/* room for one counter on every CPU */
	pid_t tracer;		/* our parent until it has exited */
	bool tracer_died;	/* without asking us to end */
	__u64 told_ns;		/* stops up to this one were told of */
};

/* SP_CNT_WATCHDOG is written by nobody else: the recording's counters carry it. */
static void count_continued(const struct watch *w)
{
	__u32 key = SP_CNT_WATCHDOG;

	if (!w->per_cpu || bpf_map_lookup_elem(w->maps.counters_fd, &key, w->per_cpu))
		return;
	w->per_cpu[0]++;
	bpf_map_update_elem(w->maps.counters_fd, &key, w->per_cpu, BPF_ANY);
}

/* Each stop once, as the tracer died, not at a clean end. */
static void tell_gone(const struct watch *w, __u32 tgid, __u64 stop_ns)
{
	if (w->tracer_died && stop_ns > w->told_ns)
		log_warn("the tracer is gone: pid %u, which it had stopped, continued", tgid);
}

/*
 * Continue every stop older than before_ns that nobody continued. The tracer
 * gone (final), the stops are not noted: a program that stopped a process
 * just before its signal went out is caught by the next sweep.
 */
static void sweep(struct watch *w, __u64 before_ns, bool final)
{
	__u64 newest = w->told_ns;
	__u32 key = 0, next;
	bool first = true;

	for (int n = 0; n < 2 * SP_STOP_PROCS; n++, first = false, key = next) {
		__u64 stop_ns, done_ns;

		if (bpf_map_get_next_key(w->maps.stops_fd, first ? NULL : &key, &next))
			break;
		if (bpf_map_lookup_elem(w->maps.stops_fd, &next, &stop_ns) || stop_ns >= before_ns)
			continue;
		if (!bpf_map_lookup_elem(w->maps.done_fd, &next, &done_ns) && done_ns == stop_ns)
			continue;
		if (final) {
			kill(next, SIGCONT);
			tell_gone(w, next, stop_ns);
			newest = stop_ns > newest ? stop_ns : newest;
			continue;
		}
		stops__continue(&w->maps, next, stop_ns);
		count_continued(w);
		log_warn("pid %u: stopped %llu ms ago for the tracer to hook what it mapped, which "
			 "it has not done: continued; its calls until its probes are attached may "
			 "be missing", next, (unsigned long long)((mono_ns() - stop_ns) / 1000000));
	}
	w->told_ns = newest;
}

/* Everything but the maps, the socket it waits on and stderr: no link or program. */
static void keep_only(const struct watch *w, int end_fd)
{
	int keep[] = { w->maps.stops_fd, w->maps.done_fd, w->maps.counters_fd, end_fd,
		       STDERR_FILENO };
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;
	int null_fd;

	while (dir && (de = readdir(dir))) {
		int fd = atoi(de->d_name);
		bool kept = de->d_name[0] < '0' || de->d_name[0] > '9' || fd == dirfd(dir);

		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
			kept |= fd == keep[i];
		if (!kept)
			close(fd);
	}
	if (dir)
		closedir(dir);
	/* 0 and 1 were closed: the first open takes 0 */
	null_fd = open("/dev/null", O_RDWR);
	if (null_fd >= 0 && null_fd != STDOUT_FILENO)
		dup2(null_fd, STDOUT_FILENO);
	if (null_fd > STDOUT_FILENO) {
		dup2(null_fd, STDIN_FILENO);
		close(null_fd);
	}
}

/* Until the tracer ends (true: it asked) or starts to die (its socket closed unasked). */
static bool watch_live(struct watch *w, int end_fd)
{
	for (;;) {
		struct pollfd pfd = { .fd = end_fd, .events = POLLIN };
		char byte;
		int n = poll(&pfd, 1, TICK_MS);

		if (n > 0)
			return read(end_fd, &byte, 1) == 1;
		if (n < 0 && errno != EINTR)
			return false;
		sweep(w, mono_ns() - WATCHDOG_BOUND_MS * 1000000ull, false);
	}
}

static void __attribute__((noreturn)) watch(struct watch *w, int end_fd)
{
	/* its own group: the terminal's Ctrl-C and Ctrl-Z are for the tracer, not for it */
	setpgid(0, 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, SIG_DFL);
	keep_only(w, end_fd);
	w->tracer_died = !watch_live(w, end_fd);
	/*
	 * A dying tracer closes its descriptors one by one, the links' last: until
	 * it has exited (we are reparented then) a program may stop a process still.
	 */
	while (w->tracer_died && getppid() == w->tracer) {
		sweep(w, ~0ull, true);
		usleep(TICK_MS * 1000);
	}
	sweep(w, ~0ull, true);
	usleep(LAST_SWEEP_GAP_MS * 1000);
	sweep(w, ~0ull, true);
	_exit(0);
}

int watchdog__start(struct watchdog *wd, const struct stop_maps *maps)
{
	struct watch w = { .maps = *maps, .tracer = getpid() };
	int ncpu = libbpf_num_possible_cpus(), fds[2], err;

	wd->pid = 0;
	wd->end_fd = -1;
	/* a socket: the end's byte is sent without SIGPIPE should the watchdog be gone */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds))
		return -errno;
	w.per_cpu = ncpu > 0 ? calloc(ncpu, sizeof(*w.per_cpu)) : NULL;
	wd->pid = fork();
	if (wd->pid == 0) {
		close(fds[1]);
		watch(&w, fds[0]);
	}
	err = errno;
	free(w.per_cpu);
	close(fds[0]);
	if (wd->pid < 0) {
		wd->pid = 0;
		close(fds[1]);
		return -err;
	}
	wd->end_fd = fds[1];
	return 0;
}

void watchdog__end(struct watchdog *wd)
{
	if (wd->pid <= 0)
		return;
	send(wd->end_fd, "e", 1, MSG_NOSIGNAL);
	close(wd->end_fd);
	waitpid(wd->pid, NULL, 0);
	wd->pid = 0;
	wd->end_fd = -1;
}
