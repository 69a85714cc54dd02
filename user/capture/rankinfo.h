/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A traced process's rank from what the process shows in /proc, for a trace
 * that did not see its NCCL communicator made: RANK / LOCAL_RANK in its
 * environment, then its title (sglang::scheduler_TP1, VLLM::Worker_TP1), then
 * the one GPU it has open. Written as SP_REC_RANK records.
 */
#ifndef __RANKINFO_H
#define __RANKINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "specprobe.h"
#include "session.h"

struct rank_seen {
	int rank;
	int nranks;		/* -1: not shown */
	__u32 from;		/* enum sp_rank_from; 0: nothing shown */
	char what[SP_RANK_WHAT];	/* what told it, cut to fit */
};

/*
 * A serving framework's title of a rank process: PREFIX::ROLE then _-separated
 * tags, ROLE one of scheduler, semi_pd_scheduler, gpu_worker (SGLang) or
 * Worker (vLLM; also VllmWorker). The rank is the TP tag's number, 0 without
 * one (tensor parallelism of 1). len bounds the text; it ends at a NUL.
 */
bool rankinfo__parse_title(const char *title, size_t len, int *rank);
/* RANK (with WORLD_SIZE), else LOCAL_RANK (with LOCAL_WORLD_SIZE), in NUL-separated K=V. */
bool rankinfo__parse_environ(const char *env, size_t len, struct rank_seen *seen);
/* A file descriptor's link of a GPU device node: /dev/nvidiaN gives N. */
bool rankinfo__parse_device(const char *link, int *gpu);
/* What /proc/PID shows, the most trusted source first; environ only when asked. */
bool rankinfo__read(__u32 tgid, bool with_environ, struct rank_seen *seen);

struct rank_watch;

/*
 * Each traced process is read when first seen and again at each later scan
 * (a forked child takes its own title after a while) until its environment
 * or title told its rank, for a bounded number of scans. A record goes out
 * only when a process shows a more trusted rank than before. 0 or -errno.
 */
int rank_watch__scan(struct rank_watch **rw, const __u32 *tgids, int nr_tgids,
		     session_record_fn on_record, void *ctx);
void rank_watch__free(struct rank_watch *rw);

#endif /* __RANKINFO_H */
