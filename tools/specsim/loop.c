// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The decode loop. Per cycle: draft launches (graphs or eager kernels), the
 * verify launches (one graph, or its pieces), accept (eager kernels, the D2H
 * copy of the accept result, the sync that brings it to the host), then
 * draft-extend. Phase spans tile the cycle: each phase ends where the next
 * begins, and each brackets the calls made in it. The bounds__ calls note the
 * edges that define the cycle_bounds lines. Nothing here waits for a tracer,
 * so one may attach at any point of the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "rank.h"

static bool every(int n, int cycle)
{
	return n > 0 && (cycle + 1) % n == 0;
}

/*
 * Host work that prepares a launch (input tensors, metadata). Slept, not spun:
 * it overlaps GPU work unless a sync just drained the GPU, and then it is GPU
 * idle time, which is what makes a planted sync cost something.
 */
void loop__host_prepare(void)
{
	struct timespec ts = { env.host_ns / 1000000000, env.host_ns % 1000000000 };

	if (env.host_ns)
		nanosleep(&ts, NULL);
}

static int batch_size(const struct rank_state *st)
{
	return env.batch_sizes[st->batch_index];
}

/* One draft step: a graph launch, or --draft-kernels eager launches. */
static int draft_step(struct rank_state *st, int cycle, int step)
{
	const struct kernel_ns *ns = &st->ns;

	if (env.draft_mode != DRAFT_EAGER) {
		CUgraphExec x = st->draft[st->batch_index][step].exec;

		CU(cuGraphLaunch, (x, st->main), A("exec", x), A("stream", st->main));
		bounds__draft_launch(st, cycle);
		return 0;
	}
	for (int i = 0; i < env.draft_kernels; i++) {
		bool head = i == env.draft_kernels - 1;

		if (graphs__launch(st, head ? st->k.draft_head : st->k.draft_layer, st->main,
				   batch_size(st), head ? ns->draft_head : ns->draft_layer))
			return -1;
		bounds__draft_launch(st, cycle);
	}
	return 0;
}

/* --plant-sync: the host waits for the draft before launching verify */
int loop__plant_sync(struct rank_state *st, int cycle)
{
	if (!every(env.plant_sync, cycle))
		return 0;
	truth__set_tag("planted-sync");
	CU(cuStreamSynchronize, (st->work), A("stream", st->work));
	bounds__blocking(st, cycle);
	truth__set_tag(NULL);
	return 0;
}

static int draft_phase(struct rank_state *st, int cycle)
{
	int steps = env.draft_mode == DRAFT_EAGER ? env.draft_k : st->nr_draft_graphs;

	loop__host_prepare();
	for (int j = 0; j < steps; j++)
		if (draft_step(st, cycle, j))
			return -1;
	if (every(env.extra_draft_every, cycle)) {
		/* a longer speculation this cycle: the last step once more */
		truth__set_tag("extra-draft");
		if (draft_step(st, cycle, steps - 1))
			return -1;
		truth__set_tag(NULL);
	}
	if (loop__plant_sync(st, cycle))
		return -1;
	return plants__at(st, POS_DRAFT_VERIFY, cycle);
}

static int free_in_loop(struct rank_state *st, int cycle)
{
	CUdeviceptr tmp = 0;

	truth__set_tag("free-in-loop");
	CU(cuMemAlloc_v2, (&tmp, 1 << 20), A("dptr_out", &tmp), A("bytes", 1 << 20),
	   A("dptr", tmp));
	CU(cuMemFree_v2, (tmp), A("dptr", tmp));
	bounds__blocking(st, cycle);
	truth__set_tag(NULL);
	return 0;
}

static int accept_sync(struct rank_state *st, int cycle)
{
	CUevent ev = st->accept_ev[cycle % 2], prev = st->accept_ev[(cycle + 1) % 2];

	switch (env.accept_mode) {
	case ACCEPT_SYNC:
		CU(cuStreamSynchronize, (st->main), A("stream", st->main));
		bounds__blocking(st, cycle);
		bounds__accepted(st, cycle);
		break;
	case ACCEPT_EVENT:
		CU(cuEventRecord, (ev, st->main), A("event", ev), A("stream", st->main));
		CU(cuEventSynchronize, (ev), A("event", ev));
		bounds__blocking(st, cycle);
		bounds__accepted(st, cycle);
		break;
	case ACCEPT_DEFERRED:
		/* spec v2: this cycle's result is read one cycle later */
		CU(cuEventRecord, (ev, st->main), A("event", ev), A("stream", st->main));
		if (cycle > 0) {
			truth__set_tag("deferred");
			CU(cuEventSynchronize, (prev), A("event", prev), A("for_cycle", cycle - 1));
			bounds__blocking(st, cycle);
			bounds__accepted(st, cycle - 1);
			truth__set_tag(NULL);
		}
		break;
	}
	return 0;
}

/* This cycle's half of the accept buffer. */
static char *accept_buf(struct rank_state *st, int cycle)
{
	char *base = env.pageable ? st->pageable_buf : st->accept_host;

	return base + (cycle % 2) * st->accept_bytes;
}

static int accept_phase(struct rank_state *st, int cycle)
{
	int bs = batch_size(st);
	size_t bytes = (size_t)bs * (env.draft_k + 1) * 4;
	char *dst = accept_buf(st, cycle);

	if (every(env.free_every, cycle) && free_in_loop(st, cycle))
		return -1;
	/* after an eager verify these would run on in its burst: its forward holds them */
	for (int e = 0; e < env.eager && env.verify_mode == VERIFY_GRAPH; e++)
		if (graphs__launch(st, st->k.eager, st->main, bs, st->ns.eager))
			return -1;
	truth__set_tag(env.pageable ? "pageable-copy" : NULL);
	CU(cuMemcpyDtoHAsync_v2, (dst, st->accept_dev, bytes, st->main), A("dst_host", dst),
	   A("src", st->accept_dev), A("bytes", bytes), A("stream", st->main));
	/* to pageable memory the "async" copy returns only when it is done */
	if (env.pageable)
		bounds__blocking(st, cycle);
	truth__set_tag(NULL);
	if (plants__at(st, POS_ACCEPT, cycle) || accept_sync(st, cycle))
		return -1;
	/* the host's accept decision reads the result that the sync brought in */
	if (env.accept_mode != ACCEPT_DEFERRED)
		(void)*(volatile int *)dst;
	else if (cycle > 0)
		(void)*(volatile int *)accept_buf(st, cycle - 1);
	return 0;
}

/* The verify forward: one graph, or its pieces back to back. */
static int verify_phase(struct rank_state *st, int cycle)
{
	loop__host_prepare();
	if (env.verify_mode == VERIFY_EAGER) {
		if (eager__target_verify(st, cycle))
			return -1;
		return plants__at(st, POS_AFTER_VERIFY, cycle);
	}
	for (int j = 0; j < env.verify_pieces; j++) {
		CUgraphExec x = st->verify[st->batch_index][j].exec;

		CU(cuGraphLaunch, (x, st->main), A("exec", x), A("stream", st->main));
		bounds__verify_launch(st, cycle);
	}
	return plants__at(st, POS_AFTER_VERIFY, cycle);
}

static int extend_phase(struct rank_state *st, int cycle)
{
	CUgraphExec x = st->extend[st->batch_index].exec;

	loop__host_prepare();
	CU(cuGraphLaunch, (x, st->main), A("exec", x), A("stream", st->main));
	bounds__extend_launch(st, cycle);
	/* between this cycle's last launch and the next cycle's first */
	return plants__at(st, POS_EXTEND, cycle) || plants__at(st, POS_OUTSIDE, cycle) ? -1 : 0;
}

/* --torch launches no draft-extend graph: the phase is empty */
static int no_extend(struct rank_state *st, int cycle)
{
	return 0;
}

/* in cycle order, from PH_DRAFT on */
static int (*const phases[])(struct rank_state *st, int cycle) = {
	draft_phase, verify_phase, accept_phase, extend_phase,
};
static int (*const torch_phases[])(struct rank_state *st, int cycle) = {
	torch__draft, torch__verify, torch__accept, no_extend,
};
static int (*const eager_phases[])(struct rank_state *st, int cycle) = {
	eager__draft, eager__verify, eager__accept, eager__extend,
};

static int run_phase(struct rank_state *st, int p, int cycle)
{
	if (env.eager_loop)
		return eager_phases[p](st, cycle);
	return (env.torch ? torch_phases : phases)[p](st, cycle);
}

/* *mark: where this cycle starts; set to where it ended, so cycles tile too. */
static int one_cycle(struct rank_state *st, int cycle, unsigned long long *mark)
{
	unsigned long long t[5];

	t[0] = *mark;
	st->batch_index = st->schedule[cycle % st->nr_schedule];
	bounds__begin(st, cycle);
	for (int p = 0; p < 4; p++) {
		truth__set_phase(PH_DRAFT + p, cycle);
		if (run_phase(st, p, cycle))
			return -1;
		t[p + 1] = gt_now();
	}
	for (int p = 0; p < 4; p++)
		truth__phase_span(cycle, PH_DRAFT + p, t[p], t[p + 1]);
	/* the host knows the cycle's acceptance once its accept sync returned */
	metrics_serve__cycle(cycle);
	*mark = t[4];
	return 0;
}

/* --hang: a collective every rank joins, one late by hang_ns on the host. */
static int hang_collective(struct rank_state *st, int cycle)
{
	void *buf = (void *)(uintptr_t)st->hidden;

	if (!env.hang_ns || cycle != env.hang_cycle || !st->comm)
		return 0;
	truth__set_tag("hang");
	if (st->rank == env.hang_rank)
		specsimNcclHangNext(st->comm, env.hang_ns);
	CU(ncclAllReduce, (buf, buf, 1024, ncclBfloat16, ncclSum, st->comm, st->main),
	   A("send", buf), A("recv", buf), A("count", 1024), A("datatype", ncclBfloat16),
	   A("op", ncclSum), A("comm", st->comm), A("stream", st->main));
	truth__set_tag(NULL);
	return 0;
}

int loop__run(struct rank_state *st)
{
	unsigned long long mark;

	if (plants__at(st, POS_OUTSIDE, -1))
		return -1;
	if (env.torch && !env.eager_loop && env.cycles && torch__prologue(st, -1))
		return -1;
	mark = gt_now();
	st->loop_start = mark;
	for (int i = 0; i < env.cycles && !stop_requested; i++) {
		if (hang_collective(st, i) || one_cycle(st, i, &mark))
			return -1;
		st->cycles_run = i + 1;
	}
	st->loop_end = gt_now();
	truth__set_phase(PH_TEARDOWN, -1);
	if (st->cycles_run)
		bounds__loop_end(st, st->cycles_run - 1);
	if (env.accept_mode == ACCEPT_DEFERRED && st->cycles_run) {
		CUevent last = st->accept_ev[(st->cycles_run - 1) % 2];

		truth__set_tag("deferred");
		CU(cuEventSynchronize, (last), A("event", last),
		   A("for_cycle", st->cycles_run - 1));
		bounds__accepted(st, st->cycles_run - 1);
		truth__set_tag(NULL);
	}
	return 0;
}

static int do_rate_call(struct rank_state *st, CUgraphExec tiny)
{
	switch (env.rate_call) {
	case RATE_LAUNCH:
		return cuLaunchKernel(st->k.nop, 1, 1, 1, 1, 1, 1, 0, st->main, NULL, NULL);
	case RATE_RECORD:
		return cuEventRecord(st->fork_ev, st->main);
	case RATE_QUERY: {
		int r = cuStreamQuery(st->main);

		return r == CUDA_ERROR_NOT_READY ? 0 : r;
	}
	case RATE_GRAPH:
		return cuGraphLaunch(tiny, st->main);
	}
	return 0;
}

static int do_rate_call_noted(struct rank_state *st, CUgraphExec tiny)
{
	switch (env.rate_call) {
	case RATE_LAUNCH:
		return CALL(cuLaunchKernel, (st->k.nop, 1, 1, 1, 1, 1, 1, 0, st->main, NULL, NULL),
			    A("func", st->k.nop), A("gx", 1), A("gy", 1), A("gz", 1), A("bx", 1),
			    A("by", 1), A("bz", 1), A("shmem", 0), A("stream", st->main));
	case RATE_RECORD:
		return CALL(cuEventRecord, (st->fork_ev, st->main), A("event", st->fork_ev),
			    A("stream", st->main));
	case RATE_QUERY:
		CALL(cuStreamQuery, (st->main), A("stream", st->main));
		return 0;
	case RATE_GRAPH:
		return CALL(cuGraphLaunch, (tiny, st->main), A("exec", tiny),
			    A("stream", st->main));
	}
	return 0;
}

static int tiny_graph(struct rank_state *st, struct graph_pair *p)
{
	CU(cuStreamBeginCapture_v2, (st->main, CU_STREAM_CAPTURE_MODE_GLOBAL),
	   A("stream", st->main), A("mode", CU_STREAM_CAPTURE_MODE_GLOBAL));
	if (graphs__launch(st, st->k.nop, st->main, 1, 0))
		return -1;
	CU(cuStreamEndCapture, (st->main, &p->graph), A("stream", st->main),
	   A("graph_out", &p->graph), A("graph", p->graph));
	CU(cuGraphInstantiateWithFlags, (&p->exec, p->graph, 0), A("exec_out", &p->exec),
	   A("graph", p->graph), A("flags", 0), A("exec", p->exec));
	return 0;
}

/* N cheap async calls back to back: what a probe costs per hit, at full rate. */
int loop__rate_test(struct rank_state *st)
{
	struct graph_pair tiny = { 0 };
	unsigned long long start, end;
	long long n = env.rate_n;
	double per_call;

	truth__set_phase(PH_RATE, -1);
	if (env.rate_call == RATE_GRAPH && tiny_graph(st, &tiny))
		return -1;
	start = gt_now();
	for (long long i = 0; i < n && !stop_requested; i++) {
		int err = env.rate_truth ? do_rate_call_noted(st, tiny.exec)
					 : do_rate_call(st, tiny.exec);

		if (err) {
			fprintf(stderr, "specsim-server: rate test call %lld failed: %d\n", i, err);
			return -1;
		}
	}
	end = gt_now();
	CU(cuStreamSynchronize, (st->main), A("stream", st->main));
	per_call = n ? (double)(end - start) / n : 0.0;
	truth__line("\"rate_test\":\"%s\",\"n\":%lld,\"start\":%llu,\"end\":%llu,"
		    "\"ns_per_call\":%.1f",
		    rate_call_name(env.rate_call), n, start, end, per_call);
	if (!env.quiet)
		printf("rank %d: rate test: %lld x %s in %.3f s, %.1f ns per call\n", st->rank, n,
		       rate_call_name(env.rate_call), (end - start) / 1e9, per_call);
	if (tiny.exec) {
		CU(cuGraphExecDestroy, (tiny.exec), A("exec", tiny.exec));
		CU(cuGraphDestroy, (tiny.graph), A("graph", tiny.graph));
	}
	return 0;
}
