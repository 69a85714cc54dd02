// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Forgetting what a windowed analysis has settled: a thread's oldest loop
 * events and the syncs among them. The rest of the model (processes, streams,
 * graphs, captures) is bounded by the program, not by time, and stays.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "model_int.h"

/* Events before keep_ns leave the thread; the number that left. */
static size_t forget_events(struct model_thread *t, __u64 keep_ns)
{
	size_t n = 0;

	/* an open eager burst becomes a forward once it ends: its launches stay till then */
	if (t->nr_burst && keep_ns > t->burst_start_ts)
		keep_ns = t->burst_start_ts;
	/* and a forward that must still hand its result */
	if (t->pending_forward && keep_ns > t->events[t->pending_forward - 1].ts)
		keep_ns = t->events[t->pending_forward - 1].ts;
	while (n < t->nr_events && t->events[n].ts < keep_ns)
		n++;
	if (!n)
		return 0;
	memmove(t->events, t->events + n, (t->nr_events - n) * sizeof(*t->events));
	t->nr_events -= n;
	t->pending_forward -= t->pending_forward ? n : 0;
	t->poll.event_index = t->poll.event_index > n ? t->poll.event_index - n : 0;
	return n;
}

/* A kept sync's place among its thread's events moves with the events that left. */
static bool keep_sync(struct model *m, struct model_sync *sy, const __u64 *keep_ns,
		      const size_t *dropped)
{
	struct model_thread *t = hmap__get(&m->threads, sy->tid, sy->tgid);
	size_t k;

	if (!t)
		return true;
	k = t->index;
	if (sy->ts < keep_ns[k])
		return false;
	sy->event_index = sy->event_index > dropped[k] ? sy->event_index - dropped[k] : 0;
	return true;
}

/* Pending syncs are found by index: each moves down with the syncs that left before it. */
static void renumber_pending(struct model *m, const __u32 *moved_to)
{
	for (size_t i = 0; i < m->view.nr_procs; i++) {
		struct model_proc *p = m->view.procs[i];
		__u32 kept = 0;

		for (__u32 j = 0; j < p->nr_pending; j++)
			if (moved_to[p->pending[j]] != UINT32_MAX)
				p->pending[kept++] = moved_to[p->pending[j]];
		p->nr_pending = kept;
	}
}

static void forget_syncs(struct model *m, const __u64 *keep_ns, const size_t *dropped,
			 __u32 *moved_to)
{
	struct model_view *v = &m->view;
	size_t kept = 0;

	for (size_t i = 0; i < v->nr_syncs; i++) {
		moved_to[i] = UINT32_MAX;
		if (!keep_sync(m, &v->syncs[i], keep_ns, dropped))
			continue;
		moved_to[i] = kept;
		v->syncs[kept++] = v->syncs[i];
	}
	v->nr_syncs = kept;
	renumber_pending(m, moved_to);
}

int model__forget(struct model *m, model_keep_fn keep_from, void *ctx)
{
	struct model_view *v = &m->view;
	__u64 *keep_ns = calloc(v->nr_threads ? v->nr_threads : 1, sizeof(*keep_ns));
	size_t *dropped = calloc(v->nr_threads ? v->nr_threads : 1, sizeof(*dropped));
	__u32 *moved_to = malloc((v->nr_syncs ? v->nr_syncs : 1) * sizeof(*moved_to));
	int ret = -ENOMEM;

	if (!keep_ns || !dropped || !moved_to)
		goto out;
	for (size_t k = 0; k < v->nr_threads; k++) {
		struct model_thread *t = v->threads[k];

		keep_ns[k] = keep_from(ctx, t);
		dropped[k] = forget_events(t, keep_ns[k]);
	}
	forget_syncs(m, keep_ns, dropped, moved_to);
	ret = 0;
out:
	free(keep_ns);
	free(dropped);
	free(moved_to);
	return ret;
}

void model__reset_roles(struct model *m)
{
	for (size_t i = 0; i < m->view.nr_execs; i++) {
		m->view.execs[i]->role = ROLE_UNKNOWN;
		m->view.execs[i]->role_from = ROLE_FROM_NONE;
	}
}
