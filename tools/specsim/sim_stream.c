// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated device: streams with one worker thread each, a queue of work
 * items per stream, and the waits that syncs, events and the legacy stream need.
 * One lock guards it all; workers sleep on condition variables, never spin.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include "sim.h"

struct sim_dev sim_dev = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static __thread struct specsim_ctx *cur_ctx;
static __thread struct specsim_stream *per_thread_stream;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

u64 sim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void sim_sleep_until(u64 deadline_ns)
{
	struct timespec ts = {
		.tv_sec = deadline_ns / 1000000000ull,
		.tv_nsec = deadline_ns % 1000000000ull,
	};

	/* a zero-length or overdue item costs no system call */
	if (deadline_ns <= sim_now_ns())
		return;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static long long env_ll(const char *name, long long def)
{
	const char *v = getenv(name);
	char *end;
	long long val;

	if (!v || !*v)
		return def;
	errno = 0;
	val = strtoll(v, &end, 10);
	if (errno || *end || val < 0) {
		fprintf(stderr, "specsim: ignoring %s=%s (want a number >= 0)\n", name, v);
		return def;
	}
	return val;
}

static void init_device(void)
{
	sim_dev.default_kernel_ns = env_ll("SPECSIM_KERNEL_NS", 2000);
	sim_dev.copy.latency_ns = env_ll("SPECSIM_COPY_LATENCY_NS", 2000);
	/* a staged H2D's DMA; scaled, as the other defaults are, past a probe's cost */
	sim_dev.copy.staged_latency_ns = env_ll("SPECSIM_STAGED_LATENCY_NS", 50000);
	sim_dev.copy.pinned_gbps = env_ll("SPECSIM_PINNED_GBPS", 25);
	sim_dev.copy.pageable_gbps = env_ll("SPECSIM_PAGEABLE_GBPS", 10);
	sim_dev.copy.device_gbps = env_ll("SPECSIM_DEVICE_GBPS", 1000);
	/* specsimGpuLogEnable may have come first */
	if (env_ll("SPECSIM_GPU_LOG", 0))
		sim_dev.log_on = true;
	sim_dev.nr_devices = env_ll("SPECSIM_DEVICES", 8);
	if (sim_dev.nr_devices < 1 || sim_dev.nr_devices > SIM_MAX_DEVICES)
		sim_dev.nr_devices = SIM_MAX_DEVICES;
	sim_dev.legacy = sim_stream_new(0, 0, true);
	if (!sim_dev.legacy) {
		fprintf(stderr, "specsim: cannot start the legacy stream\n");
		return;
	}
	pthread_mutex_lock(&sim_dev.lock);
	sim_dev.inited = true;
	pthread_mutex_unlock(&sim_dev.lock);
}

int sim_init(void)
{
	pthread_once(&init_once, init_device);
	return sim_dev.inited ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

struct specsim_ctx *sim_current_ctx(void)
{
	return cur_ctx;
}

void sim_set_current_ctx(struct specsim_ctx *ctx)
{
	cur_ctx = ctx;
}

/* Returns true when the item had to wait for another stream. */
static bool wait_deps_locked(const struct sim_item *it)
{
	bool waited = false;

	for (int i = 0; i < it->nr_deps; i++) {
		if (it->deps[i].stream->done_seq < it->deps[i].seq) {
			sim_wait_locked(it->deps[i].stream, it->deps[i].seq);
			waited = true;
		}
	}
	return waited;
}

static void finish_locked(struct specsim_stream *s, struct sim_item *it)
{
	s->head = it->next;
	if (!s->head)
		s->tail = NULL;
	s->pending--;
	s->done_seq = it->seq;
	if (sim_dev.log_on)
		sim_log_span_locked(s, it);
	if (it->exec)
		sim_exec_put(it->exec);
	/* wake waiters only when the nearest one is due: no wake-up per item */
	if (s->done_waiters && s->done_seq >= s->wake_at) {
		s->wake_at = UINT64_MAX;
		pthread_cond_broadcast(&s->done);
	}
}

static void *worker_main(void *arg)
{
	struct specsim_stream *s = arg;
	struct sim_item *it;
	bool waited;

	/* the default 50 us timer slack would stretch every simulated kernel */
	prctl(PR_SET_TIMERSLACK, 1UL);
	pthread_mutex_lock(&sim_dev.lock);
	for (;;) {
		while (!s->head && !s->quit) {
			s->idle = true;
			pthread_cond_wait(&s->wake, &sim_dev.lock);
		}
		s->idle = false;
		if (!s->head)
			break;
		it = s->head;
		waited = wait_deps_locked(it);
		pthread_mutex_unlock(&sim_dev.lock);
		sim_run_item(s, it, waited);
		sim_activity_emit(s, it);
		pthread_mutex_lock(&sim_dev.lock);
		finish_locked(s, it);
		free(it->deps);
		free(it);
	}
	pthread_mutex_unlock(&sim_dev.lock);
	return NULL;
}

struct specsim_stream *sim_stream_new(unsigned int flags, int priority, bool legacy)
{
	struct specsim_stream *s = calloc(1, sizeof(*s));
	pthread_attr_t attr;
	char name[16];
	int err;

	if (!s)
		return NULL;
	s->magic = SIM_MAGIC_STREAM;
	s->flags = flags;
	s->priority = priority;
	s->legacy = legacy;
	s->ctx = cur_ctx;
	pthread_cond_init(&s->wake, NULL);
	pthread_cond_init(&s->done, NULL);
	s->wake_at = UINT64_MAX;
	pthread_mutex_lock(&sim_dev.lock);
	s->index = sim_dev.nr_streams++;
	s->next = sim_dev.streams;
	sim_dev.streams = s;
	pthread_mutex_unlock(&sim_dev.lock);

	/* workers only sleep and copy: a small stack keeps many streams cheap */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	err = pthread_create(&s->thread, &attr, worker_main, s);
	pthread_attr_destroy(&attr);
	if (err) {
		/* stays listed, so it must look finished: mark it destroyed */
		s->destroyed = true;
		return NULL;
	}
	pthread_detach(s->thread);
	snprintf(name, sizeof(name), "specsim-s%d", s->index);
	pthread_setname_np(s->thread, name);
	return s;
}

struct specsim_stream *sim_stream_resolve(CUstream handle)
{
	if (!handle || handle == CU_STREAM_LEGACY)
		return sim_dev.legacy;
	if (handle == CU_STREAM_PER_THREAD) {
		if (!per_thread_stream)
			per_thread_stream = sim_stream_new(0, 0, false);
		return per_thread_stream;
	}
	if (handle->magic != SIM_MAGIC_STREAM)
		return NULL;
	return handle;
}

static int add_dep(struct sim_item *it, struct specsim_stream *on, u64 seq)
{
	struct sim_dep *grown = realloc(it->deps, (it->nr_deps + 1) * sizeof(*grown));

	if (!grown)
		return CUDA_ERROR_OUT_OF_MEMORY;
	it->deps = grown;
	grown[it->nr_deps++] = (struct sim_dep){ on, seq };
	return 0;
}

static bool busy_locked(const struct specsim_stream *s)
{
	return s->done_seq < s->enq_seq;
}

/* The legacy stream waits for all blocking streams, and they for it. */
static int legacy_deps_locked(struct specsim_stream *s, struct sim_item *it)
{
	struct specsim_stream *legacy = sim_dev.legacy;
	int err = 0;

	if (s->legacy) {
		for (struct specsim_stream *t = sim_dev.streams; t && !err; t = t->next)
			if (t != s && !(t->flags & CU_STREAM_NON_BLOCKING) && busy_locked(t))
				err = add_dep(it, t, t->enq_seq);
		return err;
	}
	if (!(s->flags & CU_STREAM_NON_BLOCKING) && legacy && busy_locked(legacy))
		err = add_dep(it, legacy, legacy->enq_seq);
	return err;
}

static int enqueue_locked(struct specsim_stream *s, struct sim_item *it)
{
	int err;

	/* full: wait until half has drained, not for each single slot */
	if (s->pending >= SIM_QUEUE_MAX)
		sim_wait_locked(s, s->enq_seq - SIM_QUEUE_MAX / 2);
	err = legacy_deps_locked(s, it);
	if (err)
		return err;
	it->seq = ++s->enq_seq;
	it->enq_ns = sim_now_ns();
	sim_activity_tag_locked(it);
	if (s->tail)
		s->tail->next = it;
	else
		s->head = it;
	s->tail = it;
	s->pending++;
	if (s->idle)
		pthread_cond_signal(&s->wake);
	return 0;
}

static int capture_append_locked(struct sim_capture *cap, const struct sim_node *nodes, size_t n)
{
	if (cap->invalid)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	return sim_graph_append(cap->graph, nodes, n);
}

/* Queue one node, or record it when the stream is capturing (*seq is then 0). */
int sim_stream_submit(struct specsim_stream *s, const struct sim_node *node, u64 *seq)
{
	struct sim_item *it = calloc(1, sizeof(*it));
	int err;

	if (!it)
		return CUDA_ERROR_OUT_OF_MEMORY;
	it->node = *node;
	sim_activity_classify(it);
	pthread_mutex_lock(&sim_dev.lock);
	if (s->cap) {
		err = capture_append_locked(s->cap, node, 1);
		pthread_mutex_unlock(&sim_dev.lock);
		free(it);
		if (seq)
			*seq = 0;
		return err;
	}
	err = enqueue_locked(s, it);
	if (seq)
		*seq = it->seq;
	pthread_mutex_unlock(&sim_dev.lock);
	if (err)
		free(it);
	return err;
}

/* A graph replay is one work item; launched into a capture it is inlined. */
int sim_stream_submit_exec(struct specsim_stream *s, struct specsim_exec *exec)
{
	struct sim_item *it = calloc(1, sizeof(*it));
	int err;

	if (!it)
		return CUDA_ERROR_OUT_OF_MEMORY;
	it->node.kind = NODE_WAIT;
	pthread_mutex_lock(&sim_dev.lock);
	if (s->cap) {
		err = capture_append_locked(s->cap, exec->nodes, exec->nr_nodes);
		pthread_mutex_unlock(&sim_dev.lock);
		free(it);
		return err;
	}
	it->exec = exec;
	it->exec_nodes = exec->nodes;
	it->nr_exec_nodes = exec->nr_nodes;
	exec->refs++;
	err = enqueue_locked(s, it);
	if (err)
		exec->refs--;
	pthread_mutex_unlock(&sim_dev.lock);
	if (err)
		free(it);
	return err;
}

/*
 * The position an event recorded now stands for. On the legacy stream that
 * includes the blocking streams' work, so it takes a (zero-length) item.
 */
u64 sim_stream_mark_locked(struct specsim_stream *s)
{
	struct sim_item *it;

	if (!s->legacy)
		return s->enq_seq;
	it = calloc(1, sizeof(*it));
	if (!it)
		return s->enq_seq;
	it->node.kind = NODE_WAIT;
	if (enqueue_locked(s, it)) {
		free(it->deps);
		free(it);
	}
	return s->enq_seq;
}

/* Later work on s waits until stream on has finished item seq. */
int sim_stream_wait_dep_locked(struct specsim_stream *s, struct specsim_stream *on, u64 seq)
{
	struct sim_item *it;
	int err;

	if (on == s || on->done_seq >= seq)
		return 0;
	it = calloc(1, sizeof(*it));
	if (!it)
		return CUDA_ERROR_OUT_OF_MEMORY;
	it->node.kind = NODE_WAIT;
	err = add_dep(it, on, seq);
	if (!err)
		err = enqueue_locked(s, it);
	if (err) {
		free(it->deps);
		free(it);
	}
	return err;
}

/* Each waiter lowers wake_at to its target; a broadcast makes all re-register. */
void sim_wait_locked(struct specsim_stream *s, u64 seq)
{
	while (s->done_seq < seq) {
		if (seq < s->wake_at)
			s->wake_at = seq;
		s->done_waiters++;
		pthread_cond_wait(&s->done, &sim_dev.lock);
		s->done_waiters--;
	}
}

void sim_wait_seq(struct specsim_stream *s, u64 seq)
{
	pthread_mutex_lock(&sim_dev.lock);
	sim_wait_locked(s, seq);
	pthread_mutex_unlock(&sim_dev.lock);
}

/* Waits for the work queued before the call, not for work added meanwhile. */
static void wait_all_locked(struct specsim_ctx *ctx, bool blocking_only)
{
	struct sim_dep *targets = calloc(sim_dev.nr_streams + 1, sizeof(*targets));
	int n = 0;

	for (struct specsim_stream *t = sim_dev.streams; t; t = t->next) {
		if (blocking_only && (t->flags & CU_STREAM_NON_BLOCKING))
			continue;
		if (ctx && t->ctx && t->ctx != ctx)
			continue;
		if (!targets) {
			/* out of memory: waiting for more than needed is still correct */
			sim_wait_locked(t, t->enq_seq);
			continue;
		}
		targets[n++] = (struct sim_dep){ t, t->enq_seq };
	}
	for (int i = 0; i < n; i++)
		sim_wait_locked(targets[i].stream, targets[i].seq);
	free(targets);
}

/* Syncing the legacy stream also waits for every blocking stream. */
void sim_wait_stream(struct specsim_stream *s)
{
	pthread_mutex_lock(&sim_dev.lock);
	if (s->legacy)
		wait_all_locked(NULL, true);
	sim_wait_locked(s, s->enq_seq);
	pthread_mutex_unlock(&sim_dev.lock);
}

/* What a sync of s would wait for: its own work, on the legacy stream the blocking streams' too. */
bool sim_stream_busy_locked(const struct specsim_stream *s)
{
	bool busy = busy_locked(s);

	if (s->legacy)
		for (struct specsim_stream *t = sim_dev.streams; t && !busy; t = t->next)
			busy = !(t->flags & CU_STREAM_NON_BLOCKING) && busy_locked(t);
	return busy;
}

/* Whether any stream has work queued: what cuCtxSynchronize would wait for. */
SIM_EXPORT int specsimDeviceBusy(void)
{
	bool busy = false;

	pthread_mutex_lock(&sim_dev.lock);
	for (struct specsim_stream *t = sim_dev.streams; t && !busy; t = t->next)
		busy = busy_locked(t);
	pthread_mutex_unlock(&sim_dev.lock);
	return busy;
}

SIM_EXPORT int specsimStreamBusy(CUstream hStream)
{
	struct specsim_stream *s;
	bool busy;

	if (!sim_dev.inited)
		return -1;
	s = sim_stream_resolve(hStream);
	if (!s)
		return -1;
	pthread_mutex_lock(&sim_dev.lock);
	busy = sim_stream_busy_locked(s);
	pthread_mutex_unlock(&sim_dev.lock);
	return busy;
}

void sim_wait_ctx(struct specsim_ctx *ctx)
{
	pthread_mutex_lock(&sim_dev.lock);
	wait_all_locked(ctx, false);
	pthread_mutex_unlock(&sim_dev.lock);
}
