/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * --gpu -p: the activity agent into a running process (docs/gpu-timeline.md,
 * "Into a running process"). One thread of the process, caught at rest in a
 * system call, is stopped for a few calls made on it with ptrace; every other
 * thread runs on. Each call returns through rt_sigreturn to the thread's own
 * saved state, so the thread is put back exactly (registers, vector state,
 * signal mask, the interrupted system call restarted) even where specprobe is
 * killed in the middle.
 */
#ifndef __INJECT_H
#define __INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct inject_result {
	__u64 ring_addr;	/* where the agent's ring is mapped in the process */
	__u64 stop_ns;		/* how long the chosen thread was stopped */
	__u32 tid;		/* that thread */
	bool reused;		/* the agent was loaded already, by an earlier attach */
};

/*
 * Bring the agent in (or wake the one already there) and have it make its
 * ring; cupti: --cupti PATH or NULL. 0, or -errno with a one-line reason in
 * err: -EAGAIN where it may work later (no CUDA in the process yet, no thread
 * at rest), -EBUSY where its agent serves another specprobe.
 */
int inject__agent(pid_t pid, const char *cupti, struct inject_result *out, char *err,
		  size_t err_sz);

#endif /* __INJECT_H */
