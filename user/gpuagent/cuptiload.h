/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The activity agent: finding and loading the target's own libcupti. */
#ifndef __CUPTILOAD_H
#define __CUPTILOAD_H

#include <stddef.h>
#include <cupti.h>

/* The CUPTI functions the agent calls, looked up by name in the library it loaded. */
struct cupti_api {
	void *handle;
	CUptiResult (*get_version)(uint32_t *version);
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
				 void *userdata);
	CUptiResult (*unsubscribe)(CUpti_SubscriberHandle subscriber);
	CUptiResult (*enable)(CUpti_ActivityKind kind);
	CUptiResult (*disable)(CUpti_ActivityKind kind);
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc request,
					  CUpti_BuffersCallbackCompleteFunc complete);
	CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc timestamp);
	CUptiResult (*next_record)(uint8_t *buffer, size_t valid, CUpti_Activity **record);
	CUptiResult (*dropped)(CUcontext context, uint32_t stream, size_t *dropped);
	CUptiResult (*flush_all)(uint32_t flag);
	CUptiResult (*result_string)(CUptiResult result, const char **str);
};

/*
 * Load libcupti: explicit (SPECPROBE_CUPTI) if set, else one already loaded,
 * else beside the process's CUDA libraries, else the loader's search, else
 * the toolkit's. path gets the file loaded, or on failure what was tried and
 * why (short). 0 or -ENOENT.
 */
int cupti__load(const char *explicit, struct cupti_api *api, char *path, size_t path_sz);
/* Look up every function; 0, or -ENOENT with the missing name in missing. */
int cupti__bind(struct cupti_api *api, char *missing, size_t missing_sz);

#endif /* __CUPTILOAD_H */
