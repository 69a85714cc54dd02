// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Starting the server: with --ranks R > 1 a launcher that makes no driver calls
 * fork+execs R rank processes (as serving frameworks start their TP workers),
 * waits until all are set up, writes the ready file, and lets them go together
 * by closing the pipe they block on. With one rank the process gates itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "server.h"
#include "truth.h"

volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t go_signalled;

static void on_stop(int sig)
{
	stop_requested = 1;
}

static void on_go(int sig)
{
	go_signalled = 1;
}

/* Installed first thing, so a SIGUSR1 sent once the ready file exists is never lost. */
void stop_signals__install(void)
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_go;
	sigaction(SIGUSR1, &sa, NULL);
}

static void sleep_ms(long long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR && !stop_requested)
		;
}

/* Written under a temporary name and renamed, so it appears complete. */
static int write_ready(const pid_t *pids, int n)
{
	char tmp[4096];
	FILE *f;

	if (!env.ready_file)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", env.ready_file);
	f = truth__create(tmp);
	if (!f)
		return -1;
	for (int i = 0; i < n; i++)
		fprintf(f, "%d\n", (int)pids[i]);
	if (fclose(f) || rename(tmp, env.ready_file)) {
		perror(env.ready_file);
		return -1;
	}
	return 0;
}

static void wait_go(void)
{
	while ((env.go_file || env.wait_signal) && !go_signalled && !stop_requested) {
		if (env.go_file && access(env.go_file, F_OK) == 0)
			break;
		/* one nap, so SIGUSR1 ends it early; the file is seen within 10 ms */
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	if (env.start_delay_ms && !stop_requested)
		sleep_ms(env.start_delay_ms);
}

int start_gate__single(void)
{
	pid_t self = getpid();

	if (write_ready(&self, 1))
		return -1;
	wait_go();
	return stop_requested ? -1 : 0;
}

/* A rank says it is ready and blocks until the launcher closes the go pipe. */
int start_gate__rank(void)
{
	char byte = 'r';
	ssize_t n;

	if (write(env.ready_fd, &byte, 1) != 1)
		return -1;
	close(env.ready_fd);
	do
		n = read(env.go_fd, &byte, 1);
	while (n < 0 && errno == EINTR && !stop_requested);
	close(env.go_fd);
	return stop_requested ? -1 : 0;
}

static pid_t spawn_rank(char **argv, int argc, int rank, int ready_fd, int go_fd,
			const char *uid_file)
{
	char rank_s[16], ready_s[16], go_s[16];
	char **nargv = calloc(argc + 10, sizeof(*nargv));
	pid_t pid;

	if (!nargv)
		return -1;
	snprintf(rank_s, sizeof(rank_s), "%d", rank);
	snprintf(ready_s, sizeof(ready_s), "%d", ready_fd);
	snprintf(go_s, sizeof(go_s), "%d", go_fd);
	memcpy(nargv, argv, argc * sizeof(*argv));
	nargv[argc] = "--rank-worker";
	nargv[argc + 1] = rank_s;
	nargv[argc + 2] = "--ready-fd";
	nargv[argc + 3] = ready_s;
	nargv[argc + 4] = "--go-fd";
	nargv[argc + 5] = go_s;
	nargv[argc + 6] = "--uid-file";
	nargv[argc + 7] = (char *)uid_file;
	pid = fork();
	if (pid == 0) {
		char size_s[16];

		/* as torchrun sets them: the exec'd rank's /proc/PID/environ holds them */
		snprintf(size_s, sizeof(size_s), "%d", env.ranks);
		if (env.rank_hint == RANK_HINT_ENVIRON &&
		    (setenv("RANK", rank_s, 1) || setenv("LOCAL_RANK", rank_s, 1) ||
		     setenv("WORLD_SIZE", size_s, 1))) {
			perror("specsim-server: setenv of a rank");
			_exit(127);
		}
		execv("/proc/self/exe", nargv);
		perror("specsim-server: exec of a rank");
		_exit(127);
	}
	free(nargv);
	return pid;
}

static void kill_all(const pid_t *pids, int n, int sig)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], sig);
}

/* Returns 0 once every rank reported ready, -1 if one died or we were stopped. */
static int wait_ready(int ready_fd, pid_t *pids, int n)
{
	struct pollfd pfd = { .fd = ready_fd, .events = POLLIN };
	int ready = 0, status;
	char buf[64];

	while (ready < n) {
		if (stop_requested)
			return -1;
		for (int i = 0; i < n; i++) {
			if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				fprintf(stderr, "specsim-server: rank %d exited early\n", i);
				pids[i] = 0;
				return -1;
			}
		}
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		ssize_t got = read(ready_fd, buf, sizeof(buf));

		if (got <= 0)
			return -1;
		ready += got;
	}
	return 0;
}

static int wait_ranks(pid_t *pids, int n)
{
	bool forwarded = false;
	int worst = 0, left = n, status;

	while (left) {
		pid_t pid = waitpid(-1, &status, 0);

		if (pid < 0 && errno == EINTR) {
			if (stop_requested && !forwarded) {
				kill_all(pids, n, SIGTERM);
				forwarded = true;
			}
			continue;
		}
		if (pid < 0)
			break;
		for (int i = 0; i < n; i++) {
			if (pids[i] != pid)
				continue;
			pids[i] = 0;
			left--;
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				fprintf(stderr, "specsim-server: rank %d failed (status %#x)\n", i,
					status);
				worst = 1;
			}
		}
	}
	return worst;
}

static void remove_uid_dir(const char *dir)
{
	static const char *const names[] = { "uid", "uid.2", "uid.3", "uid.tmp", "uid.2.tmp",
					     "uid.3.tmp" };
	char path[4096];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

int launcher__run(int argc, char **argv)
{
	char dir[] = "/tmp/specsim-uid.XXXXXX", uid_file[64];
	pid_t pids[65] = { getpid() };
	int ready[2], go[2], ret = 1;

	if (!mkdtemp(dir) || pipe(ready) || pipe(go)) {
		perror("specsim-server: launcher setup");
		return 1;
	}
	snprintf(uid_file, sizeof(uid_file), "%s/uid", dir);
	fcntl(ready[0], F_SETFD, FD_CLOEXEC);
	fcntl(go[1], F_SETFD, FD_CLOEXEC);
	for (int r = 0; r < env.ranks; r++) {
		pids[r + 1] = spawn_rank(argv, argc, r, ready[1], go[0], uid_file);
		if (pids[r + 1] < 0)
			stop_requested = 1;
	}
	close(ready[1]);
	close(go[0]);
	if (!stop_requested && wait_ready(ready[0], pids + 1, env.ranks) == 0 &&
	    write_ready(pids, env.ranks + 1) == 0) {
		wait_go();
		ret = 0;
	}
	if (stop_requested || ret) {
		kill_all(pids + 1, env.ranks, SIGTERM);
		ret = 1;
	}
	/* closing the pipe releases every rank at once */
	close(go[1]);
	close(ready[0]);
	if (wait_ranks(pids + 1, env.ranks))
		ret = 1;
	remove_uid_dir(dir);
	return ret;
}
