// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Cycles from one thread's loop events. The verify launches anchor every
 * iteration; around them, in entry order:
 *
 *   ... [draft launches] [verify launches] [accept: eager work, the D2H copy,
 *   the sync that brings the result] [extend launches] [next draft ...]
 *
 * Roles first (verify from captured kernels or sync waits, draft and extend
 * from where they are launched), then the boundaries of each iteration.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cycles_int.h"
#include "spill.h"

int loop__push_cycle(struct loop *lp, size_t *cap, const struct cycle *c)
{
	if (lp->nr_cycles == *cap) {
		size_t n = *cap ? *cap * 2 : 256;
		struct cycle *grown = realloc(lp->cycles, n * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		lp->cycles = grown;
		*cap = n;
	}
	lp->cycles[lp->nr_cycles] = *c;
	lp->cycles[lp->nr_cycles].index = lp->nr_cycles;
	lp->nr_cycles++;
	return 0;
}

static int build_loop(struct thread_ctx *tc, struct loop *lp)
{
	const struct model_thread *t = tc->t;
	size_t cap = 0;
	struct cycle c;

	for (size_t j = 0; j < t->nr_events; j++)
		tc->accept_of[j] = NONE;
	boundaries__find(tc);
	lp->iterations = tc->nr_iters;
	lp->iters = calloc(tc->nr_iters ? tc->nr_iters : 1, sizeof(*lp->iters));
	if (!lp->iters)
		return -ENOMEM;
	lp->nr_iters = tc->nr_iters;
	for (size_t i = 0; i < tc->nr_iters; i++)
		boundaries__export_iter(tc, i, &lp->iters[i]);
	for (size_t i = 0; i < tc->nr_iters; i++) {
		if (!boundaries__count_iter(tc, i, lp, &c))
			continue;
		lp->iters[i].cycle = lp->nr_cycles;
		if (loop__push_cycle(lp, &cap, &c))
			return -ENOMEM;
	}
	return 0;
}

static void thread_ctx_free(struct thread_ctx *tc)
{
	hmap__free(&tc->own_sites.counts);
	free(tc->stats);
	free(tc->iters);
	free(tc->event_stacks);
	free(tc->accept_of);
}

static bool launches_graphs(const struct model_thread *t)
{
	for (size_t j = 0; j < t->nr_events; j++)
		if (t->events[j].kind == LOOP_GRAPH)
			return true;
	return false;
}

int loop__rank_of(const struct model_view *v, __u32 tgid)
{
	for (size_t i = 0; i < v->nr_procs; i++)
		if (v->procs[i]->tgid == tgid)
			return v->procs[i]->rank;
	return -1;
}

/* Roles need every thread's verify first, then the positions, then the family rule. */
static int analyse_threads(struct model *m, struct thread_ctx *tcs, size_t nr, struct cycles *out)
{
	struct model_view *v = model__view(m);
	struct model_exec **anchors = calloc(nr ? nr : 1, sizeof(*anchors));
	enum role_source *froms = calloc(nr ? nr : 1, sizeof(*froms));
	struct role_evidence *evs = calloc(nr ? nr : 1, sizeof(*evs));
	int ret = -ENOMEM;

	if (!anchors || !froms || !evs)
		goto out;
	for (size_t k = 0; k < nr; k++) {
		roles__collect_stats(&tcs[k]);
		if (frames__collect(&tcs[k]))
			goto out;
		anchors[k] = roles__choose(&tcs[k], &evs[k], &froms[k]);
		tcs[k].frames_loop = froms[k] == ROLE_FROM_FRAMES;
		if (anchors[k] && anchors[k]->role == ROLE_UNKNOWN)
			roles__mark_verify(&tcs[k], anchors[k], froms[k]);
	}
	for (size_t k = 0; k < nr; k++) {
		if (!anchors[k] || boundaries__groups(&tcs[k]))
			continue;
		boundaries__accept_ends(&tcs[k]);
		leads__vote(&tcs[k]);
		leads__apply_votes(&tcs[k]);
	}
	roles__by_family(v);
	out->loops = calloc(nr ? nr : 1, sizeof(*out->loops));
	if (!out->loops)
		goto out;
	for (size_t k = 0; k < nr; k++) {
		struct loop *lp = &out->loops[out->nr_loops];

		if (!anchors[k] || !tcs[k].nr_iters)
			continue;
		tcs[k].accept_of = malloc(tcs[k].t->nr_events * sizeof(*tcs[k].accept_of));
		if (!tcs[k].accept_of)
			goto out;
		lp->tgid = tcs[k].t->tgid;
		lp->tid = tcs[k].t->tid;
		lp->rank = loop__rank_of(v, lp->tgid);
		lp->verify_exec = anchors[k]->id;
		lp->verify_from = froms[k];
		lp->evidence = evs[k];
		lp->lead_from = tcs[k].lead_from;
		lp->lead_extends = tcs[k].lead_extends;
		out->nr_loops++;
		if (build_loop(&tcs[k], lp))
			goto out;
	}
	ret = 0;
out:
	free(anchors);
	free(froms);
	free(evs);
	return ret;
}

/* Loops by rank (unknown last), then process and thread. */
int loop__cmp(const void *a, const void *b)
{
	const struct loop *x = a, *y = b;
	unsigned int rx = x->rank, ry = y->rank;	/* -1 sorts last */

	if (rx != ry)
		return (rx > ry) - (rx < ry);
	if (x->tgid != y->tgid)
		return (x->tgid > y->tgid) - (x->tgid < y->tgid);
	return (x->tid > y->tid) - (x->tid < y->tid);
}

int cycles__analyse(struct model *m, struct cycles *out)
{
	struct model_view *v = model__view(m);
	struct thread_ctx *tcs = calloc(v->nr_threads ? v->nr_threads : 1, sizeof(*tcs));
	size_t nr = 0;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!tcs)
		return -ENOMEM;
	for (size_t i = 0; i < v->nr_threads; i++) {
		if (!launches_graphs(v->threads[i]))
			continue;
		tcs[nr] = (struct thread_ctx){ .m = m, .v = v, .t = v->threads[i] };
		tcs[nr].stats = calloc(v->nr_execs ? v->nr_execs : 1, sizeof(*tcs[nr].stats));
		if (!tcs[nr++].stats)
			goto out;
	}
	ret = analyse_threads(m, tcs, nr, out);
	if (!ret)
		qsort(out->loops, out->nr_loops, sizeof(*out->loops), loop__cmp);
out:
	for (size_t k = 0; k < nr; k++)
		thread_ctx_free(&tcs[k]);
	free(tcs);
	if (ret)
		cycles__free(out);
	return ret;
}

struct loop_span {
	__u64 first_ns, last_ns, covered_ns;
};

static int span_cycle(void *ctx, const struct cycle *c)
{
	struct loop_span *sp = ctx;

	if (!sp->first_ns)
		sp->first_ns = c->start_ns;
	sp->last_ns = c->end_ns;
	sp->covered_ns += c->end_ns - c->start_ns;
	return 0;
}

size_t cycles__run_estimate(const struct cycles *cy, const struct sample_windows *s)
{
	double sum = 0;

	for (size_t i = 0; i < cy->nr_loops; i++) {
		const struct loop *lp = &cy->loops[i];
		struct loop_span sp = { 0 };

		if (!sample__on(s) || loop__each_cycle(lp, span_cycle, &sp) || !sp.covered_ns ||
		    sp.last_ns <= sp.first_ns) {
			sum += lp->nr_cycles;
			continue;
		}
		sum += (double)lp->nr_cycles * (double)(sp.last_ns - sp.first_ns) / sp.covered_ns;
	}
	return (size_t)(sum + 0.5);
}

void cycles__free(struct cycles *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_loops; i++) {
		free(c->loops[i].cycles);
		free(c->loops[i].iters);
		if (c->loops[i].store)
			fclose(c->loops[i].store);
		if (c->loops[i].launches)
			fclose(c->loops[i].launches);
	}
	free(c->loops);
	c->loops = NULL;
	c->nr_loops = 0;
}

static const char *const phase_names[PHASE_NR] = {
	[PHASE_DRAFT] = "draft",   [PHASE_VERIFY] = "verify", [PHASE_ACCEPT] = "accept",
	[PHASE_EXTEND] = "extend", [PHASE_OTHER] = "other",
};

const char *cycles__phase_name(enum phase p)
{
	return p < PHASE_NR ? phase_names[p] : "?";
}

static const char *const lead_from_names[LEAD_FROM_NR] = {
	[LEAD_NONE] = "none",		[LEAD_STRUCTURE] = "structure", [LEAD_SITE] = "site",
	[LEAD_LOOP_END] = "loop-end",	[LEAD_LOOP_START] = "loop-start",
	[LEAD_SHAPE] = "shape",
};

const char *cycles__lead_from_name(enum lead_from from)
{
	return from < LEAD_FROM_NR ? lead_from_names[from] : "?";
}

int loop__store_cycle(struct loop *lp, const struct cycle *c)
{
	int ret = spill__write(&lp->store, c, sizeof(*c));

	if (!ret)
		lp->nr_cycles++;
	return ret;
}

int loop__add_flagged_gpu(struct loop *lp, size_t index, __u64 idle_ns)
{
	struct cycle c;
	long at = (long)(index * sizeof(c));

	if (index >= lp->nr_cycles)
		return 0;
	if (!lp->store) {
		lp->cycles[index].gpu_idle_flagged_ns += lp->cycles[index].gpu_known ? idle_ns : 0;
		lp->cycles[index].gpu_flagged_syncs += lp->cycles[index].gpu_known;
		return 0;
	}
	if (fflush(lp->store) || fseek(lp->store, at, SEEK_SET) ||
	    fread(&c, sizeof(c), 1, lp->store) != 1)
		return -EIO;
	if (c.gpu_known) {
		c.gpu_idle_flagged_ns += idle_ns;
		c.gpu_flagged_syncs++;
		if (fseek(lp->store, at, SEEK_SET) || fwrite(&c, sizeof(c), 1, lp->store) != 1)
			return -EIO;
	}
	/* appends go on at the end */
	return fseek(lp->store, 0, SEEK_END) ? -EIO : 0;
}

int loop__each_cycle(const struct loop *lp, int (*fn)(void *ctx, const struct cycle *c),
		     void *ctx)
{
	struct cycle c;
	int ret = 0;

	if (!lp->store) {
		for (size_t i = 0; i < lp->nr_cycles && !ret; i++)
			ret = fn(ctx, &lp->cycles[i]);
		return ret;
	}
	if (fflush(lp->store) || fseek(lp->store, 0, SEEK_SET))
		return -EIO;
	for (size_t i = 0; i < lp->nr_cycles && !ret; i++) {
		if (fread(&c, sizeof(c), 1, lp->store) != 1)
			return -EIO;
		ret = fn(ctx, &c);
	}
	/* appends go on at the end */
	if (fseek(lp->store, 0, SEEK_END))
		return -EIO;
	return ret;
}
