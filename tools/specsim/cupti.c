// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A look-alike libcupti over the simulated GPU: the activity API an agent needs
 * (enable kinds, buffers through the client's callbacks, records in CUDA 13
 * layouts) fed by libcuda's specsimActivityObserve. Full buffers are handed back
 * on this library's own thread, never on the application's or a stream worker's.
 *
 * SPECSIM_CUPTI=busy: another client holds CUPTI (cuptiSubscribe fails with 39);
 * nograph: a CUPTI that knows no graph-level records (enabling GRAPH_TRACE fails
 * with 21, as for any kind an older CUPTI does not know); drop: only the first
 * DROP_QUOTA records are written, later ones are dropped and counted; late: as a
 * real CUPTI with work always in flight, a buffer is handed over only once it is
 * LATE_NS old (or full, or flushed with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), so records
 * come after flushes made after their work ended; taken: after TAKEN_AFTER records
 * another client (torch.profiler started later) registers its own buffer callbacks:
 * every later buffer, the one being filled included, goes to it, none to the agent.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "cupti_abi.h"
#include "entry.h"
#include "specsim.h"

#define API SIM_EXPORT int
/* without a timestamp callback, times are in a domain of their own */
#define OWN_CLOCK_OFFSET_NS (1ull << 60)
#define FLUSH_PERIOD_NS 50000000ull
#define DROP_QUOTA 4
#define LATE_NS 400000000ull
#define FLUSH_FORCED 1u
#define TAKEN_AFTER 400
#define OTHER_BUFFER_BYTES 65536
#define OTHER_BUFFERS 64

enum mode { MODE_NORMAL, MODE_BUSY, MODE_NOGRAPH, MODE_DROP, MODE_LATE, MODE_TAKEN };

struct buffer {
	uint8_t *data;
	size_t size, used, max_records, records;
	uint64_t first_ns;		/* when its first record was written */
	bool activity;			/* holds more than overhead records */
	struct buffer *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* a full buffer, a flush or the period */
	pthread_cond_t delivered;	/* the thread handed buffers over */
	enum mode mode;
	bool subscribed, thread_up;
	unsigned int enabled;		/* bit per enum cupti_kind */
	cupti_request_fn request;
	cupti_complete_fn complete;
	cupti_timestamp_fn timestamp;
	struct buffer *cur, *spare;
	struct buffer *full, **full_tail;
	unsigned long long retired, handed;	/* buffers queued and delivered so far */
	size_t dropped, written;
	pthread_t thread;
} cu = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.delivered = PTHREAD_COND_INITIALIZER,
	.full_tail = &cu.full,
};

static void observe(const struct specsim_activity *act);

__attribute__((constructor)) static void read_mode(void)
{
	const char *m = getenv("SPECSIM_CUPTI");

	if (!m)
		return;
	if (!strcmp(m, "busy"))
		cu.mode = MODE_BUSY;
	else if (!strcmp(m, "nograph"))
		cu.mode = MODE_NOGRAPH;
	else if (!strcmp(m, "drop"))
		cu.mode = MODE_DROP;
	else if (!strcmp(m, "late"))
		cu.mode = MODE_LATE;
	else if (!strcmp(m, "taken"))
		cu.mode = MODE_TAKEN;
}

/* The later client of MODE_TAKEN: it frees the buffers it gave, and drops others unread. */
static struct {
	pthread_mutex_t lock;		/* requests come on any thread, completions on ours */
	void *owned[OTHER_BUFFERS];
	unsigned long long unknown;	/* buffers of the client before it, as Kineto logs */
} other = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void other_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *b = NULL;

	*buffer = NULL;
	*size = *max_records = 0;
	pthread_mutex_lock(&other.lock);
	for (int i = 0; i < OTHER_BUFFERS; i++) {
		if (other.owned[i])
			continue;
		if (!posix_memalign(&b, CUPTI_REC_ALIGN, OTHER_BUFFER_BYTES)) {
			other.owned[i] = b;
			*buffer = b;
			*size = OTHER_BUFFER_BYTES;
		}
		break;
	}
	pthread_mutex_unlock(&other.lock);
}

static void other_complete(void *ctx, uint32_t stream, uint8_t *buffer, size_t size,
			   size_t valid)
{
	(void)ctx, (void)stream, (void)size, (void)valid;
	pthread_mutex_lock(&other.lock);
	for (int i = 0; i < OTHER_BUFFERS; i++) {
		if (other.owned[i] == buffer) {
			other.owned[i] = NULL;
			free(buffer);
			buffer = NULL;
			break;
		}
	}
	other.unknown += buffer != NULL;
	pthread_mutex_unlock(&other.lock);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A simulated GPU time as a record gives it. */
static uint64_t gpu_time(uint64_t mono, cupti_timestamp_fn ts)
{
	return ts ? mono : mono + OWN_CLOCK_OFFSET_NS;
}

/* The library's own timestamps: the client's clock when it gave one, as CUPTI does. */
static uint64_t own_time(cupti_timestamp_fn ts)
{
	return ts ? ts() : mono_ns() + OWN_CLOCK_OFFSET_NS;
}

static bool on(enum cupti_kind kind)
{
	return cu.enabled & (1u << (kind & 31));
}

static void retire_locked(struct buffer *b)
{
	*cu.full_tail = b;
	cu.full_tail = &b->next;
	b->next = NULL;
	cu.retired++;
	pthread_cond_signal(&cu.wake);
}

static bool fits(const struct buffer *b, size_t len)
{
	return b->used + len <= b->size && (!b->max_records || b->records < b->max_records);
}

/* A buffer from the client, on the calling thread and without the lock; NULL: none. */
static struct buffer *ask_buffer(cupti_request_fn request, size_t len)
{
	struct buffer *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	request(&b->data, &b->size, &b->max_records);
	if (b->data && b->size >= len && !((uintptr_t)b->data % CUPTI_REC_ALIGN))
		return b;
	/* unusable: handed back empty so the client can free it */
	if (b->data) {
		pthread_mutex_lock(&cu.lock);
		retire_locked(b);
		pthread_mutex_unlock(&cu.lock);
	} else {
		free(b);
	}
	return NULL;
}

static void write_record(const void *rec, size_t len, bool activity)
{
	struct buffer *fresh;
	cupti_request_fn request;

	pthread_mutex_lock(&cu.lock);
	if (cu.mode == MODE_TAKEN && cu.written >= TAKEN_AFTER && cu.request != other_request) {
		cu.request = other_request;
		cu.complete = other_complete;
	}
	for (;;) {
		if (cu.mode == MODE_DROP && cu.written >= DROP_QUOTA)
			break;
		if (cu.cur && fits(cu.cur, len)) {
			memcpy(cu.cur->data + cu.cur->used, rec, len);
			cu.cur->used += len;
			if (!cu.cur->records++)
				cu.cur->first_ns = mono_ns();
			cu.cur->activity |= activity;
			cu.written++;
			pthread_mutex_unlock(&cu.lock);
			return;
		}
		if (cu.cur) {
			retire_locked(cu.cur);
			cu.cur = NULL;
		}
		if (cu.spare) {
			cu.cur = cu.spare;
			cu.spare = NULL;
			continue;
		}
		request = cu.request;
		if (!request)
			break;
		pthread_mutex_unlock(&cu.lock);
		fresh = ask_buffer(request, len);
		pthread_mutex_lock(&cu.lock);
		if (!fresh)
			break;
		/* another thread may have installed one meanwhile */
		if (cu.cur)
			cu.spare = fresh;
		else
			cu.cur = fresh;
	}
	cu.dropped++;
	pthread_mutex_unlock(&cu.lock);
}

static void overhead_record(uint64_t start, uint64_t end)
{
	struct cupti_overhead3 r = {
		.kind = CUPTI_KIND_OVERHEAD,
		.overhead_kind = CUPTI_OVERHEAD_BUFFER_FLUSH,
		.object_kind = CUPTI_OBJECT_THREAD,
		.object_id.pt = { (uint32_t)getpid(), (uint32_t)syscall(SYS_gettid) },
		.start = start,
		.end = end,
	};

	write_record(&r, sizeof(r), false);
}

/* Hands every queued buffer to the client; called with the lock, on the own thread. */
static void deliver_locked(void)
{
	while (cu.full) {
		struct buffer *b = cu.full;
		cupti_complete_fn complete = cu.complete;
		cupti_timestamp_fn ts = cu.timestamp;
		bool count = b->activity && on(CUPTI_KIND_OVERHEAD);
		uint64_t start, end;

		cu.full = b->next;
		if (!cu.full)
			cu.full_tail = &cu.full;
		pthread_mutex_unlock(&cu.lock);
		start = own_time(ts);
		if (complete)
			complete(NULL, 0, b->data, b->size, b->used);
		end = own_time(ts);
		free(b);
		if (count)
			overhead_record(start, end);
		pthread_mutex_lock(&cu.lock);
		cu.handed++;
		pthread_cond_broadcast(&cu.delivered);
	}
}

/* Whether a flush hands over the buffer being filled; called with the lock. */
static bool open_buffer_goes_locked(uint32_t flag)
{
	if (!cu.cur || !cu.cur->records)
		return false;
	return cu.mode != MODE_LATE || (flag & FLUSH_FORCED) ||
	       mono_ns() - cu.cur->first_ns >= LATE_NS;
}

static void *flush_thread(void *arg)
{
	uint64_t next = mono_ns() + FLUSH_PERIOD_NS;
	struct timespec ts;

	prctl(PR_SET_NAME, "specsim-cupti");
	pthread_mutex_lock(&cu.lock);
	for (;;) {
		ts.tv_sec = next / 1000000000ull;
		ts.tv_nsec = next % 1000000000ull;
		if (!cu.full)
			pthread_cond_timedwait(&cu.wake, &cu.lock, &ts);
		if (mono_ns() >= next) {
			next = mono_ns() + FLUSH_PERIOD_NS;
			if (open_buffer_goes_locked(0)) {
				retire_locked(cu.cur);
				cu.cur = NULL;
			}
		}
		deliver_locked();
	}
	return NULL;
}

static int start_thread_locked(void)
{
	pthread_condattr_t attr;

	if (cu.thread_up)
		return 0;
	/* timed waits on CLOCK_MONOTONIC, as the period is measured */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_destroy(&cu.wake);
	pthread_cond_init(&cu.wake, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&cu.thread, NULL, flush_thread, NULL))
		return -1;
	pthread_detach(cu.thread);
	cu.thread_up = true;
	return 0;
}

static unsigned int sim_kinds_locked(void)
{
	unsigned int kinds = 0;

	if (on(CUPTI_KIND_CONCURRENT_KERNEL) || on(CUPTI_KIND_KERNEL))
		kinds |= SPECSIM_ACT_KERNEL;
	if (on(CUPTI_KIND_GRAPH_TRACE))
		kinds |= SPECSIM_ACT_GRAPH;
	if (on(CUPTI_KIND_MEMCPY))
		kinds |= SPECSIM_ACT_COPY;
	if (on(CUPTI_KIND_MEMSET))
		kinds |= SPECSIM_ACT_MEMSET;
	return kinds;
}

static int set_kind(int kind, bool enable)
{
	unsigned int kinds;

	switch (kind) {
	case CUPTI_KIND_GRAPH_TRACE:
		if (cu.mode == MODE_NOGRAPH)
			return CUPTI_E_INVALID_KIND;
		break;
	case CUPTI_KIND_MEMCPY:
	case CUPTI_KIND_MEMSET:
	case CUPTI_KIND_KERNEL:
	case CUPTI_KIND_CONCURRENT_KERNEL:
	case CUPTI_KIND_OVERHEAD:
		break;
	case CUPTI_KIND_INVALID:
		return CUPTI_E_INVALID_KIND;
	default:
		/* a real kind this look-alike makes no records of */
		return kind > 0 && kind < 64 ? CUPTI_E_NOT_SUPPORTED : CUPTI_E_INVALID_KIND;
	}
	pthread_mutex_lock(&cu.lock);
	if (enable)
		cu.enabled |= 1u << kind;
	else
		cu.enabled &= ~(1u << kind);
	kinds = sim_kinds_locked();
	pthread_mutex_unlock(&cu.lock);
	specsimActivityObserve(kinds ? observe : NULL, kinds);
	return CUPTI_OK;
}

static void kernel_record(const struct specsim_activity *a, cupti_timestamp_fn ts)
{
	struct cupti_kernel10 r = {
		.kind = on(CUPTI_KIND_CONCURRENT_KERNEL) ? CUPTI_KIND_CONCURRENT_KERNEL
							 : CUPTI_KIND_KERNEL,
		.start = gpu_time(a->start_ns, ts),
		.end = gpu_time(a->end_ns, ts),
		.completed = gpu_time(a->end_ns, ts),
		.device_id = a->device_id,
		.context_id = a->context_id,
		.stream_id = a->stream_id,
		.grid_x = 1, .grid_y = 1, .grid_z = 1,
		.block_x = 1, .block_y = 1, .block_z = 1,
		.correlation_id = a->correlation_id,
		.grid_id = a->correlation_id,
		.graph_id = a->graph_id,
		.name = a->name,
		.channel_type = CUPTI_CHANNEL_COMPUTE,
	};

	write_record(&r, sizeof(r), true);
}

static void graph_record(const struct specsim_activity *a, cupti_timestamp_fn ts)
{
	struct cupti_graph_trace2 r = {
		.kind = CUPTI_KIND_GRAPH_TRACE,
		.correlation_id = a->correlation_id,
		.start = gpu_time(a->start_ns, ts),
		.end = gpu_time(a->end_ns, ts),
		.device_id = a->device_id,
		.graph_id = a->graph_id,
		.context_id = a->context_id,
		.stream_id = a->stream_id,
		.end_device_id = a->device_id,
		.end_context_id = a->context_id,
	};

	write_record(&r, sizeof(r), true);
}

static uint8_t memory_kind(int copy_kind, bool dst)
{
	bool device = copy_kind == CUPTI_MEMCPY_DTOD ||
		      copy_kind == (dst ? CUPTI_MEMCPY_HTOD : CUPTI_MEMCPY_DTOH);

	/* host memory's kind is not handed over: unknown (0) */
	return device ? CUPTI_MEMORY_DEVICE : 0;
}

static void copy_record(const struct specsim_activity *a, cupti_timestamp_fn ts)
{
	struct cupti_memcpy6 r = {
		.kind = CUPTI_KIND_MEMCPY,
		.copy_kind = a->copy_kind,
		.src_kind = memory_kind(a->copy_kind, false),
		.dst_kind = memory_kind(a->copy_kind, true),
		.bytes = a->bytes,
		.start = gpu_time(a->start_ns, ts),
		.end = gpu_time(a->end_ns, ts),
		.device_id = a->device_id,
		.context_id = a->context_id,
		.stream_id = a->stream_id,
		.correlation_id = a->correlation_id,
		.channel_type = CUPTI_CHANNEL_ASYNC_MEMCPY,
		.copy_count = 1,
	};

	write_record(&r, sizeof(r), true);
}

static void memset_record(const struct specsim_activity *a, cupti_timestamp_fn ts)
{
	struct cupti_memset4 r = {
		.kind = CUPTI_KIND_MEMSET,
		.bytes = a->bytes,
		.start = gpu_time(a->start_ns, ts),
		.end = gpu_time(a->end_ns, ts),
		.device_id = a->device_id,
		.context_id = a->context_id,
		.stream_id = a->stream_id,
		.correlation_id = a->correlation_id,
		.graph_id = a->graph_id,
		.memory_kind = CUPTI_MEMORY_DEVICE,
		.channel_type = CUPTI_CHANNEL_ASYNC_MEMCPY,
	};

	write_record(&r, sizeof(r), true);
}

/* On a stream worker, as each item ends. */
static void observe(const struct specsim_activity *a)
{
	cupti_timestamp_fn ts;

	pthread_mutex_lock(&cu.lock);
	ts = cu.timestamp;
	pthread_mutex_unlock(&cu.lock);
	switch (a->kind) {
	case SPECSIM_ACT_KERNEL:
		kernel_record(a, ts);
		break;
	case SPECSIM_ACT_GRAPH:
		graph_record(a, ts);
		break;
	case SPECSIM_ACT_COPY:
		copy_record(a, ts);
		break;
	case SPECSIM_ACT_MEMSET:
		memset_record(a, ts);
		break;
	}
}

static size_t record_size(enum cupti_kind kind)
{
	switch (kind) {
	case CUPTI_KIND_KERNEL:
	case CUPTI_KIND_CONCURRENT_KERNEL:
		return sizeof(struct cupti_kernel10);
	case CUPTI_KIND_GRAPH_TRACE:
		return sizeof(struct cupti_graph_trace2);
	case CUPTI_KIND_MEMCPY:
		return sizeof(struct cupti_memcpy6);
	case CUPTI_KIND_MEMSET:
		return sizeof(struct cupti_memset4);
	case CUPTI_KIND_OVERHEAD:
		return sizeof(struct cupti_overhead3);
	default:
		return 0;
	}
}

/* ---- the exported entry points ---- */

API cuptiGetVersion(uint32_t *version)
{
	SIM_FRAME();
	if (!version)
		return CUPTI_E_INVALID_PARAMETER;
	*version = CUPTI_ABI_VERSION;
	return CUPTI_OK;
}

API cuptiSubscribe(cupti_subscriber_t *subscriber, cupti_callback_fn callback, void *userdata)
{
	static int handle;
	int ret = CUPTI_OK;

	SIM_FRAME();
	if (!subscriber)
		return CUPTI_E_INVALID_PARAMETER;
	pthread_mutex_lock(&cu.lock);
	if (cu.mode == MODE_BUSY || cu.subscribed) {
		ret = CUPTI_E_MULTIPLE_SUBSCRIBERS;
	} else {
		cu.subscribed = true;
		*subscriber = (cupti_subscriber_t)&handle;
	}
	pthread_mutex_unlock(&cu.lock);
	return ret;
}

API cuptiUnsubscribe(cupti_subscriber_t subscriber)
{
	int ret = CUPTI_OK;

	SIM_FRAME();
	pthread_mutex_lock(&cu.lock);
	if (!subscriber || !cu.subscribed)
		ret = CUPTI_E_INVALID_PARAMETER;
	cu.subscribed = false;
	pthread_mutex_unlock(&cu.lock);
	return ret;
}

API cuptiActivityEnable(int kind)
{
	SIM_FRAME();
	return set_kind(kind, true);
}

API cuptiActivityDisable(int kind)
{
	SIM_FRAME();
	return set_kind(kind, false);
}

API cuptiActivityRegisterCallbacks(cupti_request_fn request, cupti_complete_fn complete)
{
	int ret = CUPTI_OK;

	SIM_FRAME();
	if (!request || !complete)
		return CUPTI_E_INVALID_PARAMETER;
	pthread_mutex_lock(&cu.lock);
	cu.request = request;
	cu.complete = complete;
	if (start_thread_locked())
		ret = CUPTI_E_UNKNOWN;
	pthread_mutex_unlock(&cu.lock);
	return ret;
}

API cuptiActivityRegisterTimestampCallback(cupti_timestamp_fn timestamp)
{
	SIM_FRAME();
	if (!timestamp)
		return CUPTI_E_INVALID_PARAMETER;
	pthread_mutex_lock(&cu.lock);
	cu.timestamp = timestamp;
	pthread_mutex_unlock(&cu.lock);
	return CUPTI_OK;
}

API cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid_size, struct cupti_record **record)
{
	uint8_t *at;
	size_t len;

	SIM_FRAME();
	if (!buffer || !record)
		return CUPTI_E_INVALID_PARAMETER;
	at = buffer;
	if (*record) {
		len = record_size((*record)->kind);
		if (!len)
			return CUPTI_E_INVALID_KIND;
		at = (uint8_t *)*record + len;
	}
	if ((size_t)(at - buffer) + sizeof(struct cupti_record) > valid_size)
		return CUPTI_E_MAX_LIMIT_REACHED;
	len = record_size(((struct cupti_record *)at)->kind);
	if (!len || (size_t)(at - buffer) + len > valid_size)
		return CUPTI_E_INVALID_KIND;
	*record = (struct cupti_record *)at;
	return CUPTI_OK;
}

API cuptiActivityGetNumDroppedRecords(void *context, uint32_t stream_id, size_t *dropped)
{
	SIM_FRAME();
	if (!dropped)
		return CUPTI_E_INVALID_PARAMETER;
	pthread_mutex_lock(&cu.lock);
	*dropped = cu.dropped;
	cu.dropped = 0;
	pthread_mutex_unlock(&cu.lock);
	return CUPTI_OK;
}

/*
 * Hands over what has ended; never waits for the GPU. Waits only for this
 * library's thread to deliver the buffers, except when called on that thread.
 */
API cuptiActivityFlushAll(uint32_t flag)
{
	unsigned long long target;

	SIM_FRAME();
	pthread_mutex_lock(&cu.lock);
	if (open_buffer_goes_locked(flag)) {
		retire_locked(cu.cur);
		cu.cur = NULL;
	}
	target = cu.retired;
	if (cu.thread_up && !pthread_equal(pthread_self(), cu.thread))
		while (cu.handed < target)
			pthread_cond_wait(&cu.delivered, &cu.lock);
	pthread_mutex_unlock(&cu.lock);
	return CUPTI_OK;
}

static const struct {
	int result;
	const char *name;
} result_names[] = {
	{ CUPTI_OK, "CUPTI_SUCCESS" },
	{ CUPTI_E_INVALID_PARAMETER, "CUPTI_ERROR_INVALID_PARAMETER" },
	{ CUPTI_E_INVALID_OPERATION, "CUPTI_ERROR_INVALID_OPERATION" },
	{ CUPTI_E_MAX_LIMIT_REACHED, "CUPTI_ERROR_MAX_LIMIT_REACHED" },
	{ CUPTI_E_NOT_COMPATIBLE, "CUPTI_ERROR_NOT_COMPATIBLE" },
	{ CUPTI_E_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED" },
	{ CUPTI_E_INVALID_KIND, "CUPTI_ERROR_INVALID_KIND" },
	{ CUPTI_E_NOT_SUPPORTED, "CUPTI_ERROR_NOT_SUPPORTED" },
	{ CUPTI_E_MULTIPLE_SUBSCRIBERS, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" },
	{ CUPTI_E_UNKNOWN, "CUPTI_ERROR_UNKNOWN" },
};

API cuptiGetResultString(int result, const char **str)
{
	SIM_FRAME();
	if (!str)
		return CUPTI_E_INVALID_PARAMETER;
	for (size_t i = 0; i < sizeof(result_names) / sizeof(result_names[0]); i++) {
		if (result_names[i].result == result) {
			*str = result_names[i].name;
			return CUPTI_OK;
		}
	}
	return CUPTI_E_INVALID_PARAMETER;
}
