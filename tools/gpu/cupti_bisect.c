// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The steps the activity agent takes inside a target, one by one, each one
 * optional, so tools/gpu/cupti_bisect.py can find which of them breaks a
 * process whose CUDA graphs were made before CUPTI came in. Built as a shared
 * library against CUPTI's headers; the process's own libcupti is loaded the
 * way the agent loads it (user/gpuagent/cuptiload.c).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cuptiload.h"

#define BISECT_BUFFER_BYTES (256u << 10)
#define EXPORT __attribute__((visibility("default")))

/* what bisect_start does, as bits of its flags */
enum {
	STEP_ALONE_CHECK = 1,	/* cuptiSubscribe + cuptiUnsubscribe, as the agent's check_alone */
	STEP_TIMESTAMP = 2,	/* cuptiActivityRegisterTimestampCallback */
	STEP_REVERSE = 4,	/* kinds enabled last to first */
};

static struct cupti_api api;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static long kind_counts[64];
static long total_dropped;
static CUpti_ActivityKind enabled[8];
static int nr_enabled;

static uint64_t CUPTIAPI monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void CUPTIAPI no_callback(void *userdata, CUpti_CallbackDomain domain,
				 CUpti_CallbackId cbid, const void *cbdata)
{
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(8, BISECT_BUFFER_BYTES);
	*size = *buffer ? BISECT_BUFFER_BYTES : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
				      size_t size, size_t valid)
{
	CUpti_Activity *rec = NULL;
	size_t dropped = 0;

	pthread_mutex_lock(&count_lock);
	while (valid && api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS)
		if ((unsigned)rec->kind < 64)
			kind_counts[rec->kind]++;
	if (api.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS)
		total_dropped += dropped;
	pthread_mutex_unlock(&count_lock);
	free(buffer);
}

static int report(const char *step, CUptiResult res)
{
	const char *text = "?";

	if (res == CUPTI_SUCCESS)
		return 0;
	if (api.result_string)
		api.result_string(res, &text);
	fprintf(stderr, "cupti_bisect: %s: %s (%d)\n", step, text, (int)res);
	return -1;
}

/*
 * Loads CUPTI (cupti: a path, or NULL for the agent's search), then the steps
 * named by flags, then enables kinds[0..nr). 0, or -1 with the reason on stderr.
 */
EXPORT int bisect_start(const char *cupti, const int *kinds, int nr, int flags)
{
	char path[512], missing[64];
	CUpti_SubscriberHandle sub;

	if (cupti__load(cupti && cupti[0] ? cupti : NULL, &api, path, sizeof(path))) {
		fprintf(stderr, "cupti_bisect: no CUPTI: %s\n", path);
		return -1;
	}
	if (cupti__bind(&api, missing, sizeof(missing))) {
		fprintf(stderr, "cupti_bisect: no %s in %s\n", missing, path);
		return -1;
	}
	fprintf(stderr, "cupti_bisect: %s\n", path);
	if (flags & STEP_ALONE_CHECK) {
		if (report("cuptiSubscribe", api.subscribe(&sub, no_callback, NULL)))
			return -1;
		api.unsubscribe(sub);
	}
	if ((flags & STEP_TIMESTAMP) &&
	    report("cuptiActivityRegisterTimestampCallback", api.register_timestamp(monotonic_ns)))
		return -1;
	if (report("cuptiActivityRegisterCallbacks",
		   api.register_callbacks(buffer_requested, buffer_completed)))
		return -1;
	for (int i = 0; i < nr && nr_enabled < 8; i++) {
		int at = flags & STEP_REVERSE ? nr - 1 - i : i;
		char step[48];

		snprintf(step, sizeof(step), "cuptiActivityEnable(%d)", kinds[at]);
		if (report(step, api.enable(kinds[at])))
			return -1;
		enabled[nr_enabled++] = kinds[at];
	}
	return 0;
}

/* Flushes what CUPTI holds; the records of a kind so far, or -1 for the dropped count. */
EXPORT long bisect_count(int kind)
{
	long n;

	if (api.flush_all)
		api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_lock(&count_lock);
	n = kind < 0 ? total_dropped : kind < 64 ? kind_counts[kind] : 0;
	pthread_mutex_unlock(&count_lock);
	return n;
}

/* The kinds turned off again, as the agent's detach does. */
EXPORT void bisect_stop(void)
{
	while (nr_enabled)
		api.disable(enabled[--nr_enabled]);
	if (api.flush_all)
		api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}
