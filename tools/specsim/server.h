/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The simulated EAGLE-style speculative decoding server. */
#ifndef __SPECSIM_SERVER_H
#define __SPECSIM_SERVER_H

#include <signal.h>
#include <stdbool.h>
#include "specsim.h"

#define MAX_BATCH_SIZES 16
#define MAX_DRAFT_K 32
#define MAX_VERIFY_PIECES 16
#define MAX_SCHEDULE 64
#define MAX_PLANTS 32

enum draft_mode { DRAFT_PER_STEP, DRAFT_ONE_GRAPH, DRAFT_EAGER };
enum verify_mode { VERIFY_GRAPH, VERIFY_EAGER };
enum capture_order { CAPTURE_VERIFY_FIRST, CAPTURE_RUN };
enum accept_mode { ACCEPT_SYNC, ACCEPT_EVENT, ACCEPT_DEFERRED };
enum wait_at { WAIT_AT_LOOP, WAIT_AT_INIT };
/* what a rank process shows of its rank, as serving frameworks do */
enum rank_hint { RANK_HINT_NONE, RANK_HINT_TITLE, RANK_HINT_ENVIRON };
enum rate_call { RATE_LAUNCH, RATE_RECORD, RATE_QUERY, RATE_GRAPH };
/* --serve-metrics: whose /metrics format; --serve-metrics-fault: how it misbehaves */
enum serve_format { SERVE_NONE, SERVE_VLLM, SERVE_SGLANG };
enum serve_fault { FAULT_NONE, FAULT_HTML, FAULT_HUGE, FAULT_SLOW, FAULT_RESET, FAULT_FEW_DRAFTS };

/* --plant KIND[@POSITION][/EVERY]: a call the sync classification must find */
enum plant_kind {
	PLANT_CTX,
	PLANT_STREAM,
	PLANT_EVENT,
	PLANT_SYNC_COPY,
	PLANT_PAGEABLE_COPY,
	PLANT_UNKNOWN_HOST,
	PLANT_FREE,
	PLANT_ALLOC,
	PLANT_LEGACY,
	PLANT_POLL,
	PLANT_CAPTURE_SYNC,
	PLANT_SIDE_STREAM,
	PLANT_SIDE_STREAM_PRE,
	PLANT_FREE_HOST,
	PLANT_NR,
};
enum plant_pos { POS_DRAFT_VERIFY, POS_AFTER_VERIFY, POS_ACCEPT, POS_EXTEND, POS_OUTSIDE, POS_NR };

struct plant {
	enum plant_kind kind;
	enum plant_pos pos;
	int every;		/* every N-th cycle; 0: once, before the loop (outside only) */
};

struct env {
	int cycles;
	bool forever;		/* --forever: cycles until SIGINT or SIGTERM */
	int draft_k;
	enum draft_mode draft_mode;
	enum verify_mode verify_mode;
	enum capture_order capture_order;
	long long draft_ns, verify_ns, accept_ns, extend_ns, allreduce_ns;
	long long host_ns;	/* host work before each graph launch */
	int ranks;
	int batch_sizes[MAX_BATCH_SIZES];
	int nr_batch_sizes;
	int batch;		/* the batch size the loop replays */
	int batch_schedule[MAX_SCHEDULE];	/* or, per cycle, these in turn */
	int nr_batch_schedule;
	int verify_pieces;	/* the verify forward as this many graphs */
	int extra_draft_every;	/* one more draft step every N cycles, 0 = never */
	int layers;
	int draft_kernels;
	int eager;
	int plant_sync;		/* every N cycles, 0 = never */
	int hang_rank, hang_cycle;	/* --hang: before this cycle, this rank blocks ... */
	long long hang_ns;		/* ... this long in an eager all-reduce; 0: never */
	bool pageable;
	int free_every;		/* every N cycles, 0 = never */
	struct plant plants[MAX_PLANTS];
	int nr_plants;
	bool clean_syncs;
	bool torch;		/* PyTorch's patterns: the legacy stream, cudagraph trees */
	bool eager_loop;	/* no graph: eager draft tokens, eager verify, KV trim */
	bool eager_same;	/* ... drafting with the target's kernels */
	bool eager_trim_joined;	/* ... its trim not ended by a memset */
	enum accept_mode accept_mode;
	const char *truth_path;
	bool gpu_log;
	bool exercise;
	const char *ready_file, *go_file;
	bool wait_signal;
	long long start_delay_ms;
	enum wait_at wait_at;
	enum rank_hint rank_hint;
	long long rate_n;
	enum rate_call rate_call;
	bool rate_truth;
	bool quiet;
	/* set for a rank process started by the launcher */
	int rank;
	bool worker;
	int ready_fd, go_fd;
	const char *uid_file;
	enum serve_format serve_format;
	int serve_port;
	enum serve_fault serve_fault;
};

extern struct env env;
extern volatile sig_atomic_t stop_requested;

/* server.c: SGLang's title for this rank, over argv and comm (setproctitle's way) */
void rank_title__set(int argc, char **argv, int rank);

/* options.c */
int options__parse(int argc, char **argv);
const char *draft_mode_name(enum draft_mode m);
const char *verify_mode_name(enum verify_mode m);
const char *accept_mode_name(enum accept_mode m);
const char *rate_call_name(enum rate_call c);
const char *plant_kind_name(enum plant_kind k);
const char *plant_pos_name(enum plant_pos p);

/* launcher.c */
int launcher__run(int argc, char **argv);
int start_gate__single(void);
int start_gate__rank(void);
void stop_signals__install(void);

/* metrics_serve.c: rank 0 answers GET /metrics with counters that follow the truth */
int metrics_serve__start(void);
/* A cycle's acceptance is known (after its accept sync): draw it, count it, note it. */
void metrics_serve__cycle(int cycle);
void metrics_serve__stop(void);
const char *serve_fault_name(enum serve_fault f);

/* rank.c */
int rank__run(void);

#endif /* __SPECSIM_SERVER_H */
