// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One rank from start to exit: init, capture, optional exercise, the start
 * gate, the loop, an optional rate test, teardown, then the ground truth is
 * written (only now, so writing it never disturbs the timing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rank.h"

static int gate(void)
{
	int ret;
	unsigned long long t0 = gt_now();

	truth__set_phase(PH_WAIT, -1);
	ret = env.worker ? start_gate__rank() : start_gate__single();
	truth__stage("wait", t0, gt_now());
	return ret;
}

static int staged(const char *stage, enum gt_phase phase, int (*fn)(struct rank_state *),
		  struct rank_state *st)
{
	unsigned long long t0 = gt_now();
	int ret;

	truth__set_phase(phase, -1);
	ret = fn(st);
	truth__stage(stage, t0, gt_now());
	return ret;
}

static int init_all(struct rank_state *st)
{
	if (setup__init(st))
		return -1;
	if ((env.ranks > 1 || env.exercise) && setup__nccl(st))
		return -1;
	/* no schedule: --batch every cycle */
	st->nr_schedule = env.nr_batch_schedule ? env.nr_batch_schedule : 1;
	for (int i = 0; i < st->nr_schedule; i++) {
		int bs = env.nr_batch_schedule ? env.batch_schedule[i] : env.batch;

		for (int b = 0; b < env.nr_batch_sizes; b++)
			if (env.batch_sizes[b] == bs)
				st->schedule[i] = b;
	}
	st->batch_index = st->schedule[0];
	return 0;
}

static void teardown(struct rank_state *st)
{
	setup__teardown(st);
}

static int teardown_staged(struct rank_state *st)
{
	teardown(st);
	return 0;
}

static void on_span(const struct specsim_gpu_span *s, void *ctx)
{
	truth__line("\"gpu\":\"%s\",\"stream\":%llu,\"start\":%llu,\"end\":%llu,\"exec\":%llu,"
		    "\"kernel\":\"%s\",\"tid\":%d,\"queued\":%llu,\"stream_id\":%u,"
		    "\"correlation\":%u,\"graph_id\":%u,\"copy_kind\":%d,\"bytes\":%llu",
		    s->kind, (unsigned long long)(uintptr_t)s->stream, s->start_ns, s->end_ns,
		    (unsigned long long)(uintptr_t)s->exec, s->name ? s->name : "", s->tid,
		    s->queued_ns, s->stream_id, s->correlation_id, s->graph_id, s->copy_kind,
		    s->bytes);
}

static void int_list(char *out, size_t size, const int *v, int n)
{
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < n && len < size; i++)
		len += snprintf(out + len, size - len, "%s%d", i ? "," : "", v[i]);
}

/* "KIND@POSITION/EVERY" strings, every 0 for once before the loop */
static void plant_list(char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < env.nr_plants && len < size; i++) {
		const struct plant *p = &env.plants[i];

		len += snprintf(out + len, size - len, "%s\"%s@%s/%d\"", i ? "," : "",
				plant_kind_name(p->kind), plant_pos_name(p->pos), p->every);
	}
}

static void summary_line(const struct rank_state *st)
{
	char sizes[MAX_BATCH_SIZES * 8], schedule[MAX_SCHEDULE * 8], plants[MAX_PLANTS * 40];

	int_list(sizes, sizeof(sizes), env.batch_sizes, env.nr_batch_sizes);
	if (env.nr_batch_schedule)
		int_list(schedule, sizeof(schedule), env.batch_schedule, env.nr_batch_schedule);
	else
		int_list(schedule, sizeof(schedule), &env.batch, 1);
	plant_list(plants, sizeof(plants));
	truth__line("\"summary\":true,\"nranks\":%d,\"cycles\":%d,\"cycles_run\":%d,"
		    "\"draft_k\":%d,\"draft_mode\":\"%s\",\"draft_graphs_per_cycle\":%d,"
		    "\"accept_mode\":\"%s\",\"batch\":%d,\"batch_sizes\":[%s],\"layers\":%d,"
		    "\"plant_sync\":%d,\"pageable_copies\":%s,\"free_in_loop\":%d,"
		    "\"exercise\":%s,\"rate_test\":%lld,\"loop_start\":%llu,\"loop_end\":%llu,"
		    "\"stopped\":%s,\"graph_launches\":%lld,\"host_ns\":%lld,"
		    "\"draft_kernels\":%d,\"eager\":%d,\"verify_pieces\":%d,"
		    "\"extra_draft_every\":%d,\"batch_schedule\":[%s],\"plants\":[%s],"
		    "\"clean_syncs\":%s,\"torch\":%s,\"eager_loop\":%s,\"eager_same\":%s,"
		    "\"verify_mode\":\"%s\"",
		    env.ranks, env.cycles, st->cycles_run, env.draft_k,
		    draft_mode_name(env.draft_mode), st->nr_draft_graphs,
		    accept_mode_name(env.accept_mode), env.batch, sizes, env.layers, env.plant_sync,
		    env.pageable ? "true" : "false", env.free_every,
		    env.exercise ? "true" : "false",
		    env.rate_n, st->loop_start, st->loop_end, stop_requested ? "true" : "false",
		    truth__count("cuGraphLaunch"), env.host_ns, env.draft_kernels, env.eager,
		    env.verify_pieces, env.extra_draft_every, schedule, plants,
		    env.clean_syncs ? "true" : "false", env.torch ? "true" : "false",
		    env.eager_loop ? "true" : "false", env.eager_same ? "true" : "false",
		    verify_mode_name(env.verify_mode));
}

/* FILE with its first %d replaced by the rank, or FILE.rankN. */
static void truth_path(char *out, size_t size, int rank)
{
	const char *mark = strstr(env.truth_path, "%d");

	if (mark)
		snprintf(out, size, "%.*s%d%s", (int)(mark - env.truth_path), env.truth_path, rank,
			 mark + 2);
	else
		snprintf(out, size, "%s.rank%d", env.truth_path, rank);
}

static void report(const struct rank_state *st)
{
	double secs = (st->loop_end - st->loop_start) / 1e9;

	if (env.quiet || !st->cycles_run)
		return;
	printf("rank %d: %d cycles in %.3f s: %.3f ms per cycle (%.1f cycles/s)\n", st->rank,
	       st->cycles_run, secs, secs * 1e3 / st->cycles_run, st->cycles_run / secs);
	fflush(stdout);
}

int rank__run(void)
{
	struct rank_state *st = calloc(1, sizeof(*st));
	char path[4096];
	int ret = -1;

	if (!st)
		return -1;
	st->rank = env.rank;
	st->setup_cycle = -1;
	truth__init(env.rank, env.ranks);
	if (metrics_serve__start())
		goto out;
	if (env.wait_at == WAIT_AT_INIT && gate())
		goto out;
	if (staged("init", PH_INIT, init_all, st) || staged("capture", PH_CAPTURE,
							     graphs__capture_all, st))
		goto out;
	if (env.exercise && staged("exercise", PH_EXERCISE, exercise__run, st))
		goto out;
	if (env.wait_at == WAIT_AT_LOOP && gate())
		goto out;
	if (staged("loop", PH_DRAFT, loop__run, st))
		goto out;
	if (env.rate_n && staged("rate", PH_RATE, loop__rate_test, st))
		goto out;
	ret = 0;
out:
	staged("teardown", PH_TEARDOWN, teardown_staged, st);
	if (env.gpu_log)
		specsimGpuLogDrain(on_span, NULL);
	summary_line(st);
	/* the truth names every cycle served: nothing is served after it is written */
	metrics_serve__stop();
	if (env.truth_path) {
		truth_path(path, sizeof(path), st->rank);
		if (truth__write(path))
			ret = -1;
	}
	report(st);
	free(st);
	return ret;
}
