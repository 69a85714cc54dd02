/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * --gpu on the recorder's side: a private folder under /dev/shm holding the
 * activity agent, the environment that brings it into -- CMD, and the rings
 * the agents make there (user/gpuagent/gpushm.h), read into the recording.
 */
#ifndef __GPURINGS_H
#define __GPURINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "session.h"

struct gpu_rings;

/*
 * Make the folder and write the agent into it, owned by user's uid when set.
 * cupti: --cupti PATH or NULL; running: the targets run already (-p), the
 * agent goes in by gpu_rings__inject. NULL after one line on stderr saying why
 * (-- CMD with CUDA_INJECTION64_PATH already set: another tool's agent).
 */
struct gpu_rings *gpu_rings__create(const char *cupti, const char *user, bool running);
/*
 * -p: bring the agent into each of these processes not yet served that has
 * CUDA (inject.h), and map its ring; a line for each, and one for each
 * refusal. Processes without CUDA yet are asked again at the next call.
 */
/* around(ctx, tgid, done) is called just before the agent is loaded into tgid, and after */
void gpu_rings__inject(struct gpu_rings *g, const __u32 *tgids, int nr,
		       void (*around)(void *ctx, __u32 tgid, bool done), void *ctx);
/* The agent's library into fd, which is closed; 0 or -errno. */
int gpu_rings__write_agent(int fd);
/* What the command's environment gains: NAME=VALUE strings, NULL-terminated. */
char *const *gpu_rings__env(const struct gpu_rings *g);
/*
 * Map rings made since the last call, bump each one's heartbeat and hand
 * every whole record to emit, its tgid set to the ring's process. Records
 * handed, or the first non-zero emit return.
 */
int gpu_rings__poll(struct gpu_rings *g, session_record_fn emit, void *ctx);
/*
 * The traced processes are gone: read on until every agent's last record is in
 * (at most wait_ms), then say what was lost.
 */
int gpu_rings__finish(struct gpu_rings *g, int wait_ms, session_record_fn emit, void *ctx);
/* Unmap the rings and remove the folder; NULL is fine. */
void gpu_rings__free(struct gpu_rings *g);
/* Remove what can be removed with no memory work (a second Ctrl-C's way out). */
void gpu_rings__remove_now(void);

#endif /* __GPURINGS_H */
