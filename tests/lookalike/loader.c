// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A program that maps no CUDA library until it runs: it dlopens the
 * look-alike libcuda from a path given only on the command line and calls it
 * at once, as cudart and PyTorch do.
 *   loader dlopen LIB CALLS TRUTH               one process
 *   loader launch WORKERS DELAY_MS LIB CALLS TRUTH
 *                                               a launcher that forks WORKERS
 *                                               processes; each loads LIB after
 *                                               DELAY_MS
 * With LOADER_GO=FILE in the environment, each worker first waits for FILE to
 * exist, so a test decides when the loads happen, not the machine's speed.
 * Each process that loaded LIB appends one line to TRUTH:
 *   {"nspid":N,"cuLaunchKernel":C,"cuStreamSynchronize":C,"cuEventQuery":1}
 * where nspid is the pid as the process itself sees it (in a container, not
 * the host's pid).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/wait.h>
#include "lookalike.h"

typedef CUresult (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, CUstream, void **, void **);
typedef CUresult (*stream_sync_fn)(CUstream);
typedef CUresult (*query_fn)(void *);

static int load_and_call(const char *lib, int calls, const char *truth)
{
	void *handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	launch_fn launch;
	stream_sync_fn stream_sync;
	query_fn query;
	char line[256];
	int fd, len;

	if (!handle) {
		fprintf(stderr, "loader: %s\n", dlerror());
		return 1;
	}
	launch = (launch_fn)dlsym(handle, "cuLaunchKernel");
	stream_sync = (stream_sync_fn)dlsym(handle, "cuStreamSynchronize");
	query = (query_fn)dlsym(handle, "cuEventQuery");
	if (!launch || !stream_sync || !query) {
		fprintf(stderr, "loader: %s lacks an entry point\n", lib);
		return 1;
	}
	/* no pause after dlopen: the first call follows at once */
	query(NULL);
	for (int i = 0; i < calls; i++) {
		launch((void *)0x1000, i, 1, 1, 32, 1, 1, 0, (CUstream)0x10, NULL, NULL);
		stream_sync((CUstream)0x10);
	}
	len = snprintf(line, sizeof(line),
		       "{\"nspid\":%d,\"cuLaunchKernel\":%d,\"cuStreamSynchronize\":%d,"
		       "\"cuEventQuery\":1}\n",
		       getpid(), calls, calls);
	fd = open(truth, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || flock(fd, LOCK_EX) || write(fd, line, len) != len) {
		perror(truth);
		return 1;
	}
	close(fd);
	return 0;
}

static void wait_for_go(void)
{
	const char *go = getenv("LOADER_GO");
	struct timespec poll = { 0, 10 * 1000000L };

	while (go && access(go, F_OK))
		nanosleep(&poll, NULL);
}

static int launch_workers(int workers, int delay_ms, const char *lib, int calls,
			  const char *truth)
{
	int failed = 0;

	for (int w = 0; w < workers; w++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			struct timespec delay = { delay_ms / 1000, (delay_ms % 1000) * 1000000L };

			wait_for_go();
			nanosleep(&delay, NULL);
			_exit(load_and_call(lib, calls, truth));
		}
	}
	for (int w = 0; w < workers; w++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
	}
	return failed;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "dlopen"))
		return load_and_call(argv[2], atoi(argv[3]), argv[4]);
	if (argc == 7 && !strcmp(argv[1], "launch"))
		return launch_workers(atoi(argv[2]), atoi(argv[3]), argv[4], atoi(argv[5]),
				      argv[6]);
	fprintf(stderr, "usage: loader dlopen LIB CALLS TRUTH\n"
			"       loader launch WORKERS DELAY_MS LIB CALLS TRUTH\n");
	return 2;
}
