// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Calls the look-alike libraries a known number of times with known
 * arguments from several threads, and writes what it did (JSON lines,
 * CLOCK_MONOTONIC read just before and just after each call).
 *   caller ITERATIONS THREADS GO_FILE TRUTH_FILE [FORKS]
 * It waits for GO_FILE to exist (the tracer is attached by then). With FORKS,
 * that many child processes then run one worker each and write TRUTH_FILE.PID.
 * With CALLER_EXEC set, it ends by exec'ing that shell command instead of exiting.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "lookalike.h"


#define LINE_MAX_LEN 320

struct truth {
	char *buf;
	size_t len, cap;
};

static int iterations;
static struct truth *truths;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void note(struct truth *t, const char *name, unsigned long long before,
		 unsigned long long after, const char *args)
{
	if (t->len + LINE_MAX_LEN + strlen(args) > t->cap) {
		t->cap = (t->cap + strlen(args) + LINE_MAX_LEN) * 2;
		t->buf = realloc(t->buf, t->cap);
		if (!t->buf)
			abort();
	}
	t->len += sprintf(t->buf + t->len,
			  "{\"name\":\"%s\",\"pid\":%d,\"tid\":%ld,\"before\":%llu,\"after\":%llu,"
			  "\"args\":{%s}}\n",
			  name, getpid(), syscall(SYS_gettid), before, after, args);
}

/* Bracket one call with clock reads and note it. */
#define CALL(t, name, expr, ...)                                                      \
	do {                                                                          \
		char args_[256];                                                      \
		unsigned long long b_ = now_ns(), a_;                                 \
		expr;                                                                 \
		a_ = now_ns();                                                        \
		snprintf(args_, sizeof(args_), __VA_ARGS__);                          \
		note(t, name, b_, a_, args_);                                         \
	} while (0)

/*
 * The sync is entered from deeper in the stack than the graph launch before
 * it, which has returned: it must not look nested inside that launch.
 */
static __attribute__((noinline)) void deep_sync(struct truth *t, int levels, void *stream, long idx)
{
	volatile char pad[256];

	pad[0] = levels;
	if (levels > 0) {
		deep_sync(t, levels - 1, stream, idx);
		return;
	}
	CALL(t, "cuStreamSynchronize", cuStreamSynchronize(stream), "\"stream\":%ld", 0x50 + idx);
	(void)pad[0];
}

static void *worker(void *arg)
{
	long idx = (long)arg;
	struct truth *t = &truths[idx];
	void *stream = (void *)(0x50 + idx), *graph;
	char host[64];

	for (int i = 0; i < iterations; i++) {
		CUlaunchConfig cfg = { i + 1, 2, 3, 256, 1, 1, 1024 + i, (void *)(0x60 + idx) };

		CALL(t, "cuLaunchKernel",
		     cuLaunchKernel((void *)(0x1000 + idx), i % 7 + 1, 2, 3, 128, 4, 5, i, stream,
				    NULL, NULL),
		     "\"func\":%ld,\"gx\":%d,\"gy\":2,\"gz\":3,\"bx\":128,\"by\":4,\"bz\":5,"
		     "\"shmem\":%d,\"stream\":%ld", 0x1000 + idx, i % 7 + 1, i, 0x50 + idx);
		CALL(t, "cuLaunchKernelEx", cuLaunchKernelEx(&cfg, (void *)(0x2000 + idx), NULL, NULL),
		     "\"func\":%ld,\"gx\":%d,\"shmem\":%d,\"stream\":%ld", 0x2000 + idx, i + 1,
		     1024 + i, 0x60 + idx);
		CALL(t, "cuGraphLaunch", cuGraphLaunch((void *)(0x3000L + i), stream),
		     "\"exec\":%d,\"stream\":%ld", 0x3000 + i, 0x50 + idx);
		deep_sync(t, 3, stream, idx);
		CALL(t, "cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2(host, 0x4000, 8 + i % 56, stream),
		     "\"dst_host\":%lu,\"src\":%d,\"bytes\":%d,\"stream\":%ld", (unsigned long)host,
		     0x4000, 8 + i % 56, 0x50 + idx);
		CALL(t, "ncclAllReduce",
		     ncclAllReduce(host, host, 1024 + i, 7, 0, (void *)0x7000, stream),
		     "\"count\":%d,\"datatype\":7,\"op\":0,\"comm\":%d,\"stream\":%ld", 1024 + i,
		     0x7000, 0x50 + idx);
		deep_sync(t, 2, stream, idx);	/* the collective has returned */
		CALL(t, "cuStreamEndCapture", cuStreamEndCapture(stream, &graph),
		     "\"stream\":%ld,\"graph\":%ld", 0x50 + idx, 0x8000 + 0x50 + idx);
	}
	return NULL;
}

static void *never_returns(void *arg)
{
	cuCtxSynchronize();
	return NULL;
}

static void write_truth(const char *path, struct truth *t, int n)
{
	FILE *out = fopen(path, "w");

	if (!out)
		exit(1);
	for (int i = 0; i < n; i++)
		fwrite(t[i].buf, 1, t[i].len, out);
	fclose(out);
}

/* Children forked after the tracer attached: each runs one worker, in its own process. */
static void fork_workers(int forks, int first_idx, const char *truth_path)
{
	for (int k = 0; k < forks; k++) {
		char path[4096];

		if (fork() != 0)
			continue;
		worker((void *)(long)(first_idx + k));
		snprintf(path, sizeof(path), "%s.%d", truth_path, getpid());
		write_truth(path, &truths[first_idx + k], 1);
		_exit(0);
	}
}

static void wait_for(const char *path)
{
	for (int i = 0; i < 3000 && access(path, F_OK); i++)
		usleep(10000);
}

int main(int argc, char **argv)
{
	pthread_t *threads, hung;
	int nthreads, forks;
	void *pfn;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: caller ITERATIONS THREADS GO_FILE TRUTH_FILE [FORKS]\n");
		return 2;
	}
	iterations = atoi(argv[1]);
	nthreads = atoi(argv[2]);
	forks = argc == 6 ? atoi(argv[5]) : 0;
	threads = calloc(nthreads, sizeof(*threads));
	truths = calloc(nthreads + 1 + forks, sizeof(*truths));
	printf("ready %d\n", getpid());
	fflush(stdout);
	wait_for(argv[3]);
	CALL(&truths[nthreads], "cuGetProcAddress",
	     cuGetProcAddress_v2("cuLaunchKernel", &pfn, 12000, 0, NULL),
	     "\"symbol_str\":\"cuLaunchKernel\",\"pfn\":%lu", (unsigned long)pfn);
	/* a config pointer the tracer cannot read: counted as a failed read, shown as null */
	CALL(&truths[nthreads], "cuLaunchKernelEx",
	     cuLaunchKernelEx((const CUlaunchConfig *)0x10, (void *)0x2fff, NULL, NULL),
	     "\"func\":%d", 0x2fff);
	fork_workers(forks, nthreads + 1, argv[4]);
	for (long i = 0; i < nthreads; i++)
		pthread_create(&threads[i], NULL, worker, (void *)i);
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	while (wait(NULL) > 0)
		;
	pthread_create(&hung, NULL, never_returns, NULL);
	usleep(50000);	/* let it enter the call that never returns */
	write_truth(argv[4], truths, nthreads + 1);
	/* leave with cuCtxSynchronize still blocked in the other thread */
	if (getenv("CALLER_EXEC")) {
		execl("/bin/sh", "sh", "-c", getenv("CALLER_EXEC"), (char *)NULL);
		perror("exec");
	}
	exit(0);
}
