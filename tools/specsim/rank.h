/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* One rank of the simulated server: its handles, graphs and buffers. */
#ifndef __SPECSIM_RANK_H
#define __SPECSIM_RANK_H

#include <stdio.h>
#include "server.h"
#include "truth.h"

/* CALL, and on failure say which call failed and return -1 */
#define CU(fn, callargs, ...)                                                     \
	do {                                                                      \
		int e_ = CALL(fn, callargs, ##__VA_ARGS__);                       \
		if (e_) {                                                         \
			fprintf(stderr, "specsim-server: rank %d: %s failed: %d\n", \
				env.rank, #fn, e_);                               \
			return -1;                                                \
		}                                                                 \
	} while (0)

struct kernels {
	CUfunction draft_layer, draft_head;	/* draft_head comes from a CUlibrary */
	CUfunction attn, mlp, side;		/* target verify; side runs on a side stream */
	CUfunction extend_layer, extend_head;
	CUfunction eager, nop;
};

/* the GPU time each kernel was given */
struct kernel_ns {
	long long draft_layer, draft_head, attn, mlp, side, extend_layer, extend_head, eager;
};

struct graph_pair {
	CUgraph graph;
	CUgraphExec exec;
};

/* What a capture recorded, for the exec line of the ground truth. */
struct capture_count {
	int kernels, side_kernels, collectives;
	long long gpu_ns;
};

/* --torch: PyTorch's own kernels, buffers and the side streams of the side-stream plants. */
struct torch_state {
	CUfunction pos_add, cat, ne, nonzero, acc_index, acc_sum, side_work;
	CUdeviceptr dev;	/* graph inputs, the scalar, the results */
	char *pinned;		/* nonzero's count, .item()'s value, the async copy's target */
	void *pos_host;		/* the CPU scalar: malloc'd, pageable */
	CUstream side, side_pre;
	CUevent side_ev, side_pre_ev;	/* order side work after the legacy stream's */
	CUstream pending;	/* side work no legacy call has been ordered behind yet */
	const char *pending_tag;
	bool tainted;		/* this cycle's side batch is behind us */
};

/* A cycle's bounds while its defining calls are made. */
struct cycle_track {
	struct gt_bounds b;
	bool open;		/* begun, not yet written */
	bool ended, accepted;	/* its end / its accept result's sync is known */
	bool verify_done, extend_started, synced_after_verify;
	struct gt_ref last_extend;
};

struct rank_state {
	int rank;
	CUdevice dev;
	CUcontext ctx;
	CUstream main, side;
	CUstream work;		/* the loop's stream: main, or the legacy stream with --torch */
	CUstream ex;		/* blocking, for the exercise's memory calls */
	CUmodule module;
	CUlibrary library;
	CUkernel head_kernel;
	struct kernels k;
	struct kernel_ns ns;
	CUevent fork_ev, join_ev, accept_ev[2];
	CUdeviceptr kv, accept_dev, hidden;
	size_t accept_bytes, hidden_count;
	void *accept_host, *ids_host, *pageable_buf;
	CUevent plant_ev, clean_ev;
	void *unknown_host;	/* pinned before the start gate */
	void *spare_host;	/* the free-host plant's buffer, pinned before the gate at first */
	void *plant_pageable;
	ncclComm_t comm;
	struct graph_pair verify[MAX_BATCH_SIZES][MAX_VERIFY_PIECES];
	struct graph_pair draft[MAX_BATCH_SIZES][MAX_DRAFT_K];
	struct graph_pair extend[MAX_BATCH_SIZES];
	int nr_draft_graphs;	/* per batch size: k, 1 for one-graph, 0 for eager */
	int batch_index;	/* this cycle's, into env.batch_sizes */
	int schedule[MAX_SCHEDULE];	/* batch index per cycle, in turn */
	int nr_schedule;
	struct cycle_track track[2];	/* this cycle's bounds and the previous one's */
	struct gt_ref setup_entry;	/* where cycle setup_cycle's draft setup began */
	int setup_cycle;		/* -1: no setup noted */
	struct capture_count count;
	struct torch_state torch;
	int cycles_run;
	unsigned long long loop_start, loop_end;
};

/* setup.c */
int setup__init(struct rank_state *st);
int setup__nccl(struct rank_state *st);
void setup__teardown(struct rank_state *st);
int publish_uid(const char *path, const ncclUniqueId *id);
int fetch_uid(const char *path, ncclUniqueId *id);

/* graphs.c */
int graphs__launch(struct rank_state *st, CUfunction f, CUstream s, int bs, long long ns);
int graphs__capture_all(struct rank_state *st);

/* bounds.c: note the calls that bound a cycle, right after making them */
void bounds__begin(struct rank_state *st, int cycle);
void bounds__draft_launch(struct rank_state *st, int cycle);
void bounds__draft_setup(struct rank_state *st, int cycle);
void bounds__verify_launch(struct rank_state *st, int cycle);
void bounds__blocking(struct rank_state *st, int cycle);
void bounds__accepted(struct rank_state *st, int for_cycle);
void bounds__extend_launch(struct rank_state *st, int cycle);
void bounds__loop_end(struct rank_state *st, int last_cycle);
void bounds__cycle_tail(struct rank_state *st, int cycle);

/* plants.c */
int plants__setup(struct rank_state *st);
int plants__capture(struct rank_state *st);
int plants__at(struct rank_state *st, enum plant_pos pos, int cycle);
void plants__teardown(struct rank_state *st);

/* torch.c */
int torch__setup(struct rank_state *st);
int torch__prologue(struct rank_state *st, int cycle);
int torch__draft(struct rank_state *st, int cycle);
int torch__verify(struct rank_state *st, int cycle);
int torch__accept(struct rank_state *st, int cycle);
void torch__teardown(struct rank_state *st);

/* eager.c: --eager-loop */
int eager__setup(struct rank_state *st);
int eager__draft(struct rank_state *st, int cycle);
int eager__verify(struct rank_state *st, int cycle);
int eager__accept(struct rank_state *st, int cycle);
int eager__extend(struct rank_state *st, int cycle);
int eager__target_verify(struct rank_state *st, int cycle);

/* loop.c */
int loop__run(struct rank_state *st);
void loop__host_prepare(void);
int loop__plant_sync(struct rank_state *st, int cycle);
int loop__rate_test(struct rank_state *st);

/* exercise.c */
int exercise__run(struct rank_state *st);

/* exercise_nccl.c */
int exercise__nccl(struct rank_state *st);

#endif /* __SPECSIM_RANK_H */
