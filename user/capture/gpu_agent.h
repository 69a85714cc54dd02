/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The --gpu activity agent (user/gpuagent/), built first and carried inside specprobe. */
#ifndef __GPU_AGENT_H
#define __GPU_AGENT_H

#include <stddef.h>

extern const unsigned char specprobe_gpu_agent[];	/* libspecprobe-gpu.so, whole */
extern const size_t specprobe_gpu_agent_size;

#endif /* __GPU_AGENT_H */
