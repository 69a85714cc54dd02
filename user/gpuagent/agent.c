// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The activity agent (docs/gpu-timeline.md). The CUDA driver loads it at
 * cuInit through CUDA_INJECTION64_PATH and calls InitializeInjection. It asks
 * the process's own CUPTI for the GPU's start and end of every graph launch,
 * eager kernel, copy and memset, on CLOCK_MONOTONIC, and writes them into
 * ring.PID in SPECPROBE_GPU_DIR (gpushm.h). Its own thread flushes CUPTI every
 * 100 ms, never an application thread, and turns the agent off when the
 * recorder's heartbeat stops. Whatever fails, it says why in one state record
 * and steps back: the process runs on untouched.
 *
 * Injected into a running process (specprobe --gpu -p), specprobe_agent_attach
 * is called instead, on a thread of the process stopped for it: it makes the
 * ring in a memfd and starts the agent's thread, which does the rest. When
 * the recorder asks (detach) or its heartbeat stops, the thread disables the
 * activity kinds and lets the ring go; the library stays loaded, quiet, for a
 * later attach.
 *
 * Fork: a child of a process that initialised CUDA cannot use CUDA, and it has
 * no flush thread, so the agent is off in it (it never writes the parent's
 * ring). A child that execs loads a fresh agent at its own cuInit and makes
 * its own ring.PID.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <linux/types.h>
#include "specprobe.h"
#include "gpushm.h"
#include "cuptiload.h"
#include "graphnodes.h"

#define FLUSH_PERIOD_NS 100000000ull
/*
 * CUPTI's activity buffers, a small pool: small, because CUPTI hands a buffer
 * over only once all its records are complete, and a big one waits longer.
 */
#define BUFFER_BYTES (256u << 10)
#define MAX_BUFFERS 64
#define MAX_RING_NAMES 16	/* ring.PID, then ring.PID.1 .. after an exec kept the pid */

struct kernel_name {
	char *name;		/* NULL: a free slot */
	__u32 hash;
	__u32 number;
	bool sent;		/* its SP_REC_GPU_NAME is in the ring */
};

/* The kinds turned on at cuInit, graph-level first: without it the agent steps back. */
static const CUpti_ActivityKind kinds_at_init[] = {
	CUPTI_ACTIVITY_KIND_GRAPH_TRACE, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_OVERHEAD,
};
/*
 * Injected, graphs may exist already: graph-level records would crash the
 * process at their next launch (graphnodes.h), so graphs are told from their
 * nodes' kernel-level records.
 */
static const CUpti_ActivityKind kinds_injected[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_OVERHEAD,
};
#define NR_KINDS_AT_INIT (sizeof(kinds_at_init) / sizeof(kinds_at_init[0]))
#define NR_KINDS_INJECTED (sizeof(kinds_injected) / sizeof(kinds_injected[0]))

static struct agent {
	pid_t pid;		/* the process the agent runs in; 0: off here */
	struct gpushm_header *ring;
	void *data;
	pthread_mutex_t lock;	/* ring writes, kernel names and the counters */
	struct cupti_api api;
	char cupti_path[SP_GPU_DETAIL];
	__u32 cupti_version;
	bool on;		/* activity kinds enabled */
	const CUpti_ActivityKind *kinds;	/* those turned on: kinds_at_init or _injected */
	size_t nr_kinds;
	struct graph_nodes nodes;	/* kinds_injected: launches folded from their nodes */
	__u64 records, cupti_dropped, overhead_ns;
	struct kernel_name *names;
	__u32 name_cap, nr_names;
	pthread_mutex_t pool_lock;
	void *free_buffers[MAX_BUFFERS];
	int nr_free, nr_buffers;
	pthread_t thread;
	bool thread_started;
	bool injected;		/* came in through specprobe_agent_attach */
	bool serving;		/* injected: a recorder reads its ring (atomic) */
	bool cupti_ready;	/* loaded, bound, callbacks registered: kinds may be enabled */
	bool exit_hooks;	/* atexit and pthread_atfork done */
	char attach_cupti[SP_GPU_DETAIL];	/* --cupti PATH of the attach, "" for none */
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stop;
} ag = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.pool_lock = PTHREAD_MUTEX_INITIALIZER,
	.stop_lock = PTHREAD_MUTEX_INITIALIZER,
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CUPTI's clock: the uprobes' own, so GPU times need no offset. */
static uint64_t CUPTIAPI timestamp(void)
{
	return now_ns();
}

static void ring_init(void *map);

static int ring_open(const char *dir)
{
	char path[4096];
	void *map;
	int fd = -1;

	for (int n = 0; fd < 0 && n < MAX_RING_NAMES; n++) {
		if (n)
			snprintf(path, sizeof(path), "%s/" GPUSHM_RING_PREFIX "%d.%d", dir, ag.pid, n);
		else
			snprintf(path, sizeof(path), "%s/" GPUSHM_RING_PREFIX "%d", dir, ag.pid);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	if (ftruncate(fd, GPUSHM_FILE_BYTES)) {
		close(fd);
		unlink(path);
		return -errno;
	}
	map = mmap(NULL, GPUSHM_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		unlink(path);
		return -ENOMEM;
	}
	ring_init(map);
	return 0;
}

/* Injected: the ring in a memfd; specprobe maps it through /proc/PID/map_files. */
static int ring_open_memfd(void)
{
	int fd = memfd_create(GPUSHM_RING_MEMFD, MFD_CLOEXEC);
	void *map;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, GPUSHM_FILE_BYTES)) {
		close(fd);
		return -errno;
	}
	map = mmap(NULL, GPUSHM_FILE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -ENOMEM;
	ring_init(map);
	return 0;
}

static void ring_init(void *map)
{
	ag.ring = map;
	ag.data = (char *)map + GPUSHM_HEADER_BYTES;
	ag.ring->version = GPUSHM_VERSION;
	ag.ring->header_bytes = GPUSHM_HEADER_BYTES;
	ag.ring->pid = ag.pid;
	ag.ring->data_bytes = GPUSHM_DATA_BYTES;
	__atomic_store_n(&ag.ring->magic, GPUSHM_MAGIC, __ATOMIC_RELEASE);
}

/* Under ag.lock. */
static int put(const void *rec, __u32 size)
{
	return gpushm__put(ag.ring, ag.data, GPUSHM_DATA_BYTES, rec, size);
}

static void write_state(__u32 status, const char *detail, __u64 flushed_ns)
{
	struct sp_gpu_state_rec s = { .type = SP_REC_GPU_STATE, .size = sizeof(s) };

	pthread_mutex_lock(&ag.lock);
	if (!ag.ring) {		/* let go: nobody reads */
		pthread_mutex_unlock(&ag.lock);
		return;
	}
	s.tgid = ag.pid;
	s.ts = now_ns();
	s.flushed_ns = flushed_ns;
	s.records = ag.records;
	s.cupti_dropped = ag.cupti_dropped;
	s.ring_dropped = __atomic_load_n(&ag.ring->ring_dropped, __ATOMIC_RELAXED);
	s.overhead_ns = ag.overhead_ns;
	s.status = status;
	s.cupti_version = ag.cupti_version;
	snprintf(s.detail, sizeof(s.detail), "%s", detail);
	put(&s, sizeof(s));
	if (status != SP_GPU_ON)
		__atomic_store_n(&ag.ring->closed, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ag.lock);
}

static const char *result_string(CUptiResult res)
{
	static __thread char unknown[32];
	const char *s = NULL;

	if (ag.api.result_string && ag.api.result_string(res, &s) == CUPTI_SUCCESS && s)
		return s;
	snprintf(unknown, sizeof(unknown), "CUPTI error %d", (int)res);
	return unknown;
}

static void failed(__u32 status, const char *call, CUptiResult res)
{
	char detail[SP_GPU_DETAIL];

	snprintf(detail, sizeof(detail), "%s: %s", call, result_string(res));
	write_state(status, detail, 0);
}

static __u32 name_hash(const char *s, size_t len)
{
	__u32 h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static int grow_names(void)
{
	__u32 cap = ag.name_cap ? ag.name_cap * 2 : 256;
	struct kernel_name *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (__u32 i = 0; i < ag.name_cap; i++) {
		__u32 at = ag.names[i].hash & (cap - 1);

		if (!ag.names[i].name)
			continue;
		while (slots[at].name)
			at = (at + 1) & (cap - 1);
		slots[at] = ag.names[i];
	}
	free(ag.names);
	ag.names = slots;
	ag.name_cap = cap;
	return 0;
}

static void send_name(struct kernel_name *n, size_t len)
{
	struct {
		struct sp_gpu_name_rec rec;
		char name[SP_GPU_NAME_MAX];
	} u = { 0 };
	__u32 size = sizeof(u.rec) + ((len + 1 + 7) & ~7u);

	u.rec.type = SP_REC_GPU_NAME;
	u.rec.size = size;
	u.rec.tgid = ag.pid;
	u.rec.number = n->number;
	memcpy(u.name, n->name, len);
	n->sent = !put(&u, size);
}

/*
 * A kernel's number, its name sent the first time it is met (again while the
 * ring had no room for it). Names are kept to SP_GPU_NAME_MAX - 1 bytes: two
 * that agree that far share a number. Under ag.lock; 0 when out of memory.
 */
static __u32 intern_name(const char *name)
{
	size_t len = strnlen(name, SP_GPU_NAME_MAX - 1);
	__u32 hash = name_hash(name, len), at;
	struct kernel_name *n;

	if ((ag.nr_names + 1) * 4 > ag.name_cap * 3 && grow_names())
		return 0;
	for (at = hash & (ag.name_cap - 1); ag.names[at].name; at = (at + 1) & (ag.name_cap - 1)) {
		n = &ag.names[at];
		if (n->hash == hash && !strncmp(n->name, name, len) && !n->name[len]) {
			if (!n->sent)
				send_name(n, len);
			return n->number;
		}
	}
	n = &ag.names[at];
	n->name = strndup(name, len);
	if (!n->name)
		return 0;
	n->hash = hash;
	n->number = ++ag.nr_names;
	send_name(n, len);
	return n->number;
}

/* An execution into the ring. Under ag.lock. */
static void put_exec(void *ctx, const struct sp_gpu_rec *r)
{
	(void)ctx;
	if (!put(r, sizeof(*r)))
		ag.records++;
}

/*
 * One CUPTI record into the ring. The fields read sit at the same offsets in
 * every version of these records since graph-level tracing came (CUDA 11.7):
 * later versions append, so an older libcupti's records read the same.
 * Under ag.lock.
 */
static void take_record(const CUpti_Activity *a)
{
	struct sp_gpu_rec r = { .type = SP_REC_GPU, .size = sizeof(r), .tgid = ag.pid };

	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
		const CUpti_ActivityGraphTrace2 *g = (const void *)a;

		r.kind = SP_GPU_GRAPH;
		r.start = g->start, r.end = g->end, r.device = g->deviceId;
		r.context = g->contextId, r.stream = g->streamId, r.graph = g->graphId;
		r.correlation = g->correlationId;
		break;
	}
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const void *)a;

		r.kind = SP_GPU_KERNEL;
		r.start = k->start, r.end = k->end, r.device = k->deviceId;
		r.context = k->contextId, r.stream = k->streamId;
		r.correlation = k->correlationId;
		r.graph = k->graphId;
		/* a graph's node names no kernel of its own: its launch is the execution */
		r.name = k->name && !r.graph ? intern_name(k->name) : 0;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const void *)a;

		r.kind = SP_GPU_MEMCPY;
		r.start = m->start, r.end = m->end, r.device = m->deviceId;
		r.context = m->contextId, r.stream = m->streamId;
		r.correlation = m->correlationId;
		r.graph = m->graphId;
		r.bytes = m->bytes, r.copy_kind = m->copyKind;
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)a;

		r.kind = SP_GPU_MEMSET;
		r.start = m->start, r.end = m->end, r.device = m->deviceId;
		r.context = m->contextId, r.stream = m->streamId;
		r.correlation = m->correlationId;
		r.graph = m->graphId;
		r.bytes = m->bytes;
		break;
	}
	case CUPTI_ACTIVITY_KIND_OVERHEAD: {
		const CUpti_ActivityOverhead3 *o = (const void *)a;

		if (o->end > o->start)
			ag.overhead_ns += o->end - o->start;
		return;
	}
	default:
		return;
	}
	if (ag.kinds == kinds_injected && graph_nodes__add(&ag.nodes, &r, put_exec, NULL))
		return;
	/* graph-level tracing on, a node's record is none of ours to make */
	r.graph = 0;
	put_exec(NULL, &r);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *buf = NULL;

	pthread_mutex_lock(&ag.pool_lock);
	if (ag.nr_free)
		buf = ag.free_buffers[--ag.nr_free];
	else if (ag.nr_buffers < MAX_BUFFERS && (buf = aligned_alloc(8, BUFFER_BYTES)))
		ag.nr_buffers++;
	pthread_mutex_unlock(&ag.pool_lock);
	/* none: CUPTI drops what it cannot store, and counts it */
	*buffer = buf;
	*size = buf ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
				      size_t size, size_t valid)
{
	CUpti_Activity *rec = NULL;
	size_t dropped = 0;

	/* a forked child's copy of a parent's buffer is not this process's to hand over */
	if (ag.pid && ag.pid == getpid()) {
		pthread_mutex_lock(&ag.lock);
		while (ag.ring && valid && ag.api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS)
			take_record(rec);
		if (ag.api.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS)
			ag.cupti_dropped += dropped;
		pthread_mutex_unlock(&ag.lock);
	}
	if (!buffer)
		return;
	pthread_mutex_lock(&ag.pool_lock);
	if (ag.nr_free < MAX_BUFFERS) {
		ag.free_buffers[ag.nr_free++] = buffer;
		buffer = NULL;
	}
	pthread_mutex_unlock(&ag.pool_lock);
	free(buffer);
}

/* Flush what CUPTI holds, then say so: what ended before flushed_ns is in the ring. */
static void flush(__u32 flag, __u32 status, const char *detail)
{
	__u64 flushed = now_ns(), open_since;

	ag.api.flush_all(flag);
	pthread_mutex_lock(&ag.lock);
	/* a launch still folded from its nodes is not in: say so */
	if (status != SP_GPU_ON)
		graph_nodes__drain(&ag.nodes, put_exec, NULL);
	else if ((open_since = graph_nodes__tick(&ag.nodes, put_exec, NULL)) <= flushed)
		flushed = open_since - 1;
	pthread_mutex_unlock(&ag.lock);
	write_state(status, detail, flushed);
}

static void disable_kinds(size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		ag.api.disable(ag.kinds[i]);
}

/* Waits period_ns or until told to stop; true to stop. */
static bool wait_tick(void)
{
	struct timespec until;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += FLUSH_PERIOD_NS;
	until.tv_sec += until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	pthread_mutex_lock(&ag.stop_lock);
	while (!ag.stop && pthread_cond_timedwait(&ag.stop_cond, &ag.stop_lock, &until) != ETIMEDOUT)
		;
	stop = ag.stop;
	pthread_mutex_unlock(&ag.stop_lock);
	return stop;
}

/* Injected: no more records, the last ones and a last state in, then the ring let go. */
static void let_go(const char *why)
{
	if (ag.on) {
		disable_kinds(ag.nr_kinds);
		ag.on = false;
		flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, SP_GPU_OFF, why);
	}
	pthread_mutex_lock(&ag.lock);
	if (ag.ring) {
		__atomic_store_n(&ag.ring->closed, 1, __ATOMIC_RELEASE);
		munmap(ag.ring, GPUSHM_FILE_BYTES);
	}
	ag.ring = NULL;
	ag.data = NULL;
	pthread_mutex_unlock(&ag.lock);
	__atomic_store_n(&ag.serving, false, __ATOMIC_RELEASE);
}

/*
 * Ticks, not clock time, measure the heartbeat's silence: a process stopped
 * (SIGSTOP, a debugger) does not find its tracer gone when it goes on.
 */
static void *flusher(void *arg)
{
	__u64 last_beat = __atomic_load_n(&ag.ring->heartbeat, __ATOMIC_ACQUIRE);
	int quiet = 0;

	(void)arg;
	while (!wait_tick()) {
		__u64 beat = __atomic_load_n(&ag.ring->heartbeat, __ATOMIC_ACQUIRE);

		if (ag.injected && __atomic_load_n(&ag.ring->detach, __ATOMIC_ACQUIRE)) {
			let_go("specprobe detached");
			break;
		}
		if (beat != last_beat) {
			last_beat = beat;
			quiet = 0;
		} else if (++quiet >= GPUSHM_HEARTBEAT_TICKS) {
			if (ag.injected) {
				let_go("no heartbeat from specprobe for 2 s");
				break;
			}
			disable_kinds(ag.nr_kinds);
			ag.on = false;
			write_state(SP_GPU_OFF, "no heartbeat from specprobe for 2 s", 0);
			break;
		}
		flush(0, SP_GPU_ON, ag.cupti_path);
	}
	return NULL;
}

static void stop_thread(void)
{
	if (!ag.thread_started)
		return;
	pthread_mutex_lock(&ag.stop_lock);
	ag.stop = true;
	pthread_cond_signal(&ag.stop_cond);
	pthread_mutex_unlock(&ag.stop_lock);
	pthread_join(ag.thread, NULL);
	ag.thread_started = false;
}

/* The process exits: what CUPTI still holds goes into the ring, then a last state. */
static void at_exit(void)
{
	if (!ag.pid || ag.pid != getpid())
		return;
	stop_thread();
	if (ag.on) {
		ag.on = false;
		flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, SP_GPU_OFF, "the process exits");
	}
}

/* Off in a forked child: no thread, and the ring is the parent's (see the top). */
static void after_fork_child(void)
{
	ag.pid = 0;
	ag.on = false;
	ag.thread_started = false;
	__atomic_store_n(&ag.serving, false, __ATOMIC_RELAXED);
	pthread_mutex_init(&ag.lock, NULL);
	pthread_mutex_init(&ag.pool_lock, NULL);
	pthread_mutex_init(&ag.stop_lock, NULL);
	if (ag.ring)
		munmap(ag.ring, GPUSHM_FILE_BYTES);
	ag.ring = NULL;
	ag.data = NULL;
}

/* The agent's thread (fn) takes none of the application's signals. */
static int start_thread(void *(*fn)(void *))
{
	pthread_condattr_t attr;
	sigset_t all, old;
	int ret;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ag.stop_cond, &attr);
	pthread_condattr_destroy(&attr);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&ag.thread, NULL, fn, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	ag.thread_started = !ret;
	return -ret;
}

static void CUPTIAPI no_callback(void *userdata, CUpti_CallbackDomain domain,
				 CUpti_CallbackId cbid, const void *cbdata)
{
}

/* Is another CUPTI client (torch.profiler, Nsight) in the process? 0 when not. */
static int check_alone(void)
{
	CUpti_SubscriberHandle sub;
	CUptiResult res = ag.api.subscribe(&sub, no_callback, NULL);

	if (res == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		failed(SP_GPU_IN_USE, "cuptiSubscribe", res);
		return -EBUSY;
	}
	if (res != CUPTI_SUCCESS) {
		failed(SP_GPU_FAILED, "cuptiSubscribe", res);
		return -EIO;
	}
	ag.api.unsubscribe(sub);
	return 0;
}

/* Injected: graphs are told from their nodes; at cuInit, by graph-level records. */
static int enable_kinds(void)
{
	char call[48];

	ag.kinds = ag.injected ? kinds_injected : kinds_at_init;
	ag.nr_kinds = ag.injected ? NR_KINDS_INJECTED : NR_KINDS_AT_INIT;
	memset(&ag.nodes, 0, sizeof(ag.nodes));
	for (size_t i = 0; i < ag.nr_kinds; i++) {
		CUptiResult res = ag.api.enable(ag.kinds[i]);

		if (res == CUPTI_SUCCESS)
			continue;
		disable_kinds(i);
		if (ag.kinds[i] == CUPTI_ACTIVITY_KIND_GRAPH_TRACE) {
			failed(SP_GPU_NO_GRAPH_TRACE, "cuptiActivityEnable(GRAPH_TRACE)", res);
			return -ENOTSUP;
		}
		snprintf(call, sizeof(call), "cuptiActivityEnable(kind %d)", (int)ag.kinds[i]);
		failed(SP_GPU_FAILED, call, res);
		return -EIO;
	}
	return 0;
}

/* CUPTI loaded, bound and told where buffers go; 0, or -1 with the state written. */
static int cupti_setup(const char *explicit)
{
	char detail[SP_GPU_DETAIL], missing[64];
	CUptiResult res;

	if (cupti__load(explicit, &ag.api, detail, sizeof(detail))) {
		write_state(SP_GPU_NO_CUPTI, detail, 0);
		return -1;
	}
	snprintf(ag.cupti_path, sizeof(ag.cupti_path), "%s", detail);
	if (cupti__bind(&ag.api, missing, sizeof(missing))) {
		/* the name matters more than the path: it goes first */
		if (snprintf(detail, sizeof(detail), "no %s in %s", missing, ag.cupti_path) < 0)
			detail[0] = '\0';
		write_state(SP_GPU_FAILED, detail, 0);
		return -1;
	}
	ag.api.get_version(&ag.cupti_version);
	if (check_alone())
		return -1;
	/* before any kind is enabled, as CUPTI asks */
	res = ag.api.register_timestamp(timestamp);
	if (res != CUPTI_SUCCESS) {
		failed(SP_GPU_FAILED, "cuptiActivityRegisterTimestampCallback", res);
		return -1;
	}
	res = ag.api.register_callbacks(buffer_requested, buffer_completed);
	if (res != CUPTI_SUCCESS) {
		failed(SP_GPU_FAILED, "cuptiActivityRegisterCallbacks", res);
		return -1;
	}
	ag.cupti_ready = true;
	return 0;
}

/* Kinds on and the ON state written; 0, or -1 with the state written. */
static int turn_on(void)
{
	if (enable_kinds())
		return -1;
	ag.on = true;
	write_state(SP_GPU_ON, ag.cupti_path, 0);
	if (!ag.exit_hooks) {
		atexit(at_exit);
		pthread_atfork(NULL, NULL, after_fork_child);
		ag.exit_hooks = true;
	}
	return 0;
}

static void start(void)
{
	if (cupti_setup(getenv(GPUSHM_ENV_CUPTI)) || turn_on())
		return;
	if (start_thread(flusher)) {
		disable_kinds(ag.nr_kinds);
		ag.on = false;
		write_state(SP_GPU_FAILED, "no thread to flush from", 0);
	}
}

/* Called by the CUDA driver at cuInit; 1 tells it all went well (the process goes on anyway). */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	const char *dir = getenv(GPUSHM_ENV_DIR);

	if (!dir || !dir[0] || ag.pid == getpid())
		return 1;
	ag.pid = getpid();
	if (ring_open(dir)) {
		ag.pid = 0;
		return 1;
	}
	start();
	return 1;
}

/* Injected and refused: the ring kept until the recorder has read why (detach), or is gone. */
static void wait_release(void)
{
	__u64 last_beat = __atomic_load_n(&ag.ring->heartbeat, __ATOMIC_ACQUIRE);
	int quiet = 0;

	while (!wait_tick() && !__atomic_load_n(&ag.ring->detach, __ATOMIC_ACQUIRE)) {
		__u64 beat = __atomic_load_n(&ag.ring->heartbeat, __ATOMIC_ACQUIRE);

		quiet = beat != last_beat ? 0 : quiet + 1;
		last_beat = beat;
		if (quiet >= GPUSHM_HEARTBEAT_TICKS)
			break;
	}
	let_go("");
}

/* Injected: the agent's thread sets CUPTI up, off the stopped application thread. */
static void *attached(void *arg)
{
	/* a later client may have come since a first attach: ask again */
	if ((ag.cupti_ready ? check_alone()
			    : cupti_setup(ag.attach_cupti[0] ? ag.attach_cupti : NULL)) ||
	    turn_on()) {
		wait_release();
		return NULL;
	}
	return flusher(arg);
}

/*
 * Called by specprobe on a thread of the process it stopped for this: quick,
 * it takes no lock the process may hold but malloc's and the loader's. The
 * ring's address, or -errno: -EBUSY while another specprobe is served (or
 * the agent came in at cuInit).
 */
__attribute__((visibility("default"))) long specprobe_agent_attach(const char *cupti)
{
	int ret;

	if (__atomic_load_n(&ag.serving, __ATOMIC_ACQUIRE) || (ag.pid == getpid() && ag.on))
		return -EBUSY;
	if (ag.thread_started && ag.pid == getpid()) {
		pthread_join(ag.thread, NULL);	/* the last attach's, done */
		ag.thread_started = false;
	}
	ag.pid = getpid();
	ag.injected = true;
	ag.stop = false;
	snprintf(ag.attach_cupti, sizeof(ag.attach_cupti), "%s", cupti ? cupti : "");
	ret = ring_open_memfd();
	if (ret)
		return ret;
	__atomic_store_n(&ag.serving, true, __ATOMIC_RELEASE);
	ret = start_thread(attached);
	if (ret) {
		munmap(ag.ring, GPUSHM_FILE_BYTES);
		ag.ring = NULL;
		ag.data = NULL;
		__atomic_store_n(&ag.serving, false, __ATOMIC_RELEASE);
		return ret;
	}
	return (long)(uintptr_t)ag.ring;
}
