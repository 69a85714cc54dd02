// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The lead of each iteration (the first graph after its accept): an extend
 * graph or the first draft step, from the first rule that tells; and the
 * roles of the graphs between an accept and the next verify, by their votes.
 */
#include "callstack.h"
#include "cycles_int.h"

/*
 * The lead of iteration i: the first graph launched after its accept, when
 * more launches follow before the next verify. It extends the draft over the
 * accepted tokens, or it is the first draft step: decide_lead says which.
 */
size_t leads__lead_of(const struct thread_ctx *tc, size_t i)
{
	const struct model_thread *t = tc->t;
	const struct iter *it = &tc->iters[i];
	const struct loop_event *verify = &t->events[it->ve];
	size_t launches = 0;

	if (i + 1 >= tc->nr_iters || it->after >= it->region_end ||
	    t->events[it->after].kind != LOOP_GRAPH ||
	    role_of(tc, &t->events[it->after]) == ROLE_VERIFY)
		return NONE;
	for (size_t j = it->after; j < it->region_end && launches < 2; j++)
		launches += on_stream_of(&t->events[j], verify);
	return launches >= 2 ? it->after : NONE;
}

/* The next graph launch after from, before end, that is not verify; NONE if none. */
size_t leads__next_graph(const struct thread_ctx *tc, size_t from, size_t end)
{
	for (size_t j = from + 1; j < end; j++)
		if (tc->t->events[j].kind == LOOP_GRAPH &&
		    role_of(tc, &tc->t->events[j]) != ROLE_VERIFY)
			return j;
	return NONE;
}

static bool launched_again(const struct thread_ctx *tc, size_t from, size_t end)
{
	for (size_t j = leads__next_graph(tc, from, end); j != NONE;
	     j = leads__next_graph(tc, j, end))
		if (tc->t->events[j].handle == tc->t->events[from].handle)
			return true;
	return false;
}

/* Most launches of the exec are leads (followers: right after a lead). */
bool leads__is_lead(const struct exec_stats *st)
{
	return st->lead * 2 > st->launches;
}

bool leads__is_follower(const struct exec_stats *st)
{
	return st->follow * 2 > st->launches;
}

static void count_leads(struct thread_ctx *tc)
{
	for (size_t i = 0; i < tc->nr_iters; i++) {
		size_t lead = leads__lead_of(tc, i), next;

		if (lead == NONE)
			continue;
		tc->stats[tc->t->events[lead].handle].lead++;
		next = leads__next_graph(tc, lead, tc->iters[i].region_end);
		if (next != NONE)
			tc->stats[tc->t->events[next].handle].follow++;
	}
}

/*
 * What a cycle's own graphs say of its lead. A draft graph replayed in the
 * cycle while the lead is not: the draft steps are that graph, the lead is
 * something else, an extend (+1). The lead replayed itself: a step (-1).
 * Captured, the lead has the kernels of the graph after it (a step, -1) or
 * others (+1). Else nothing (0).
 */
int leads__structure(const struct thread_ctx *tc, size_t i, size_t lead)
{
	const struct model_thread *t = tc->t;
	size_t end = tc->iters[i].region_end, next = leads__next_graph(tc, lead, end);
	const struct model_exec *x = exec_of(tc, &t->events[lead]), *n;

	if (launched_again(tc, lead, end))
		return -1;
	for (size_t j = next; j != NONE; j = leads__next_graph(tc, j, end))
		if (launched_again(tc, j, end))
			return 1;
	if (next == NONE)
		return 0;
	n = exec_of(tc, &t->events[next]);
	if (!x->capture || !n->capture)
		return 0;
	return model__same_kernels(x->capture, n->capture) ? -1 : 1;
}

/*
 * The code path a stack was taken on: its Python frames and lines where it
 * has any (the interpreter's own frames vary with nothing the program says),
 * else its native return addresses; 0: none.
 */
static __u64 path_of(const struct cs_stack *st)
{
	__u64 h = 0;

	for (__u32 k = 0; k < st->nr_py; k++)
		h = (h << 9 | h >> 55) ^ st->py[k].code ^
		    ((__u64)(st->py[k].line >= 0 ? (__u32)st->py[k].line : st->py[k].instr) << 17);
	/* a frame in no mapping: the walk went past the frames (code without frame pointers) */
	for (__u32 k = 0; !st->nr_py && k < st->nr_native && st->native[k].object; k++)
		h = (h << 9 | h >> 55) ^ st->native[k].addr;
	return h;
}

/* The path every launch of x whose stack was taken came from; 0: none, or several. */
static __u64 exec_path(const struct thread_ctx *tc, const struct model_exec *x)
{
	__u64 path = 0;

	if (!tc->v->stacks || x->launch_stacks_lost)
		return 0;
	for (int k = 0; k < EXEC_STACKS && x->launch_stacks[k].stack; k++) {
		const struct cs_stack *st = callstacks__stack(tc->v->stacks,
							      x->launch_stacks[k].stack);
		__u64 p = st ? path_of(st) : 0;

		if (!p || (path && p != path))
			return 0;
		path = p;
	}
	return path;
}

/*
 * Where the program launches them (stacks of graph launches): the lead from
 * the code the graphs after it are launched from, a draft step (-1); from
 * code of its own while those after it share theirs, an extend (+1). A path
 * not known, or graphs after it from several: nothing (0).
 */
int leads__site(const struct thread_ctx *tc, size_t i, size_t lead)
{
	const struct model_thread *t = tc->t;
	size_t end = tc->iters[i].region_end;
	__u64 lead_path = exec_path(tc, exec_of(tc, &t->events[lead])), after = 0;

	if (!lead_path)
		return 0;
	for (size_t j = leads__next_graph(tc, lead, end); j != NONE;
	     j = leads__next_graph(tc, j, end)) {
		__u64 p = exec_path(tc, exec_of(tc, &t->events[j]));

		if (p == lead_path)
			return -1;
		if (!p || (after && p != after))
			return 0;
		after = p;
	}
	return after ? 1 : 0;
}

/* The sign of a per-cycle rule's votes over every cycle with a lead. */
static int votes_of(const struct thread_ctx *tc,
		    int (*rule)(const struct thread_ctx *tc, size_t i, size_t lead))
{
	long votes = 0;

	for (size_t i = 0; i < tc->nr_iters; i++) {
		size_t lead = leads__lead_of(tc, i);

		if (lead != NONE)
			votes += rule(tc, i, lead);
	}
	return sign(votes);
}

static int lead_by_site(const struct thread_ctx *tc)
{
	return votes_of(tc, leads__site);
}

static int lead_by_structure(const struct thread_ctx *tc)
{
	return votes_of(tc, leads__structure);
}

/*
 * The loop's last cycle. After its verify one lead graph, then calls and no
 * more launches: the cycle ends with it, an extend (+1). No graph, and the
 * host waits again after the sync that brought the result: the cycle ends at
 * its accept, the lead is a draft step (-1). Cut inside the cycle: nothing.
 */
int leads__at_loop_end(const struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;
	const struct loop_event *verify = &t->events[tc->iters[tc->nr_iters - 1].ve];
	size_t j = tc->iters[tc->nr_iters - 1].ve, graph = NONE, copy = NONE, result = NONE;
	bool went_on = false, waited_again = false;

	while (++j < t->nr_events) {
		const struct loop_event *e = &t->events[j];

		if (graph != NONE && on_stream_of(e, verify))
			return 0;	/* a second graph, or a draft going on */
		if (e->kind == LOOP_GRAPH)
			graph = j;
		else if (graph != NONE)
			went_on = true;
		else if (copy == NONE)
			copy = is_d2h(e) && e->stream == verify->stream ? j : NONE;
		else if (result == NONE)
			result = boundaries__covers(t, j, verify->stream, copy) ? j : NONE;
		else
			waited_again |= is_blocking(e);
	}
	if (graph != NONE)
		return went_on && leads__is_lead(&tc->stats[t->events[graph].handle]);
	return waited_again ? -1 : 0;
}

/*
 * How the draft before verify i opens, roles aside: back past syncs and other
 * work to the last graph launch, then over graphs and eager launches on the
 * verify stream to a sync or another launch, which shows where it began.
 * *open: the earliest graph launch of that run.
 */
enum opening leads__draft_opening(const struct thread_ctx *tc, size_t i, size_t *open)
{
	const struct model_thread *t = tc->t;
	const struct loop_event *verify = &t->events[tc->iters[i].vs];
	size_t floor = i ? tc->iters[i - 1].ve + 1 : 0, j = tc->iters[i].vs;
	bool synced = false, eager = false;

	for (; j > floor && t->events[j - 1].kind != LOOP_GRAPH; j--) {
		synced |= is_blocking(&t->events[j - 1]);
		eager |= is_launch(&t->events[j - 1]) && on_stream_of(&t->events[j - 1], verify);
	}
	if (j == floor)
		return eager ? OPEN_EAGER : synced || floor ? OPEN_NOTHING : OPEN_UNSEEN;
	for (*open = --j; j > floor; j--) {
		const struct loop_event *e = &t->events[j - 1];

		if (is_blocking(e) || (is_launch(e) && !on_stream_of(e, verify)))
			return OPEN_GRAPH;
		if (e->kind == LOOP_GRAPH)
			*open = j - 1;
	}
	return floor ? OPEN_GRAPH : OPEN_UNSEEN;
}

/* Longest time from one verify launch group to the next: the longest a cycle lasted. */
static __u64 longest_period(const struct thread_ctx *tc)
{
	__u64 longest = 0;

	for (size_t i = 0; i + 1 < tc->nr_iters; i++) {
		__u64 period = tc->t->events[tc->iters[i + 1].vs].ts -
			       tc->t->events[tc->iters[i].vs].ts;

		longest = period > longest ? period : longest;
	}
	return longest;
}

/*
 * The loop's first draft, past warm-up replays with nothing launched before
 * them, where the recording shows its start. Opened by a lead graph: the lead
 * is a draft step (-1). Opened by the graph that follows the lead in other
 * cycles: the lead is no part of a draft, an extend (+1). It counts only if
 * the loop began later after the attach mark than a cycle ever lasts: the
 * rest of a cycle begun before the mark could not pass for it.
 */
static int lead_at_loop_start(const struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;
	__u64 bound = thread_mark(t) + longest_period(tc);

	for (size_t i = 0; i < tc->nr_iters; i++) {
		size_t open = NONE;
		enum opening how = leads__draft_opening(tc, i, &open);
		const struct exec_stats *st;

		if (how == OPEN_NOTHING && t->events[tc->iters[i].vs].ts > bound)
			continue;
		if (how != OPEN_GRAPH || t->events[open].ts <= bound)
			return 0;
		st = &tc->stats[t->events[open].handle];
		return leads__is_lead(st) ? -1 : leads__is_follower(st) ? 1 : 0;
	}
	return 0;
}

/*
 * Nothing seen tells. Two or more graphs after the lead, each its own, read
 * as per-step draft graphs the lead is the first of (as cudagraph trees make
 * them): no extend phase is invented. One graph or eager launches after it
 * read as an extend and its draft (a draft graph holding every step).
 */
static int lead_by_shape(const struct thread_ctx *tc)
{
	long votes = 0;

	for (size_t i = 0; i < tc->nr_iters; i++) {
		size_t lead = leads__lead_of(tc, i), end = tc->iters[i].region_end, next;

		if (lead == NONE)
			continue;
		next = leads__next_graph(tc, lead, end);
		votes += next != NONE && leads__next_graph(tc, next, end) != NONE ? -1 : 1;
	}
	return votes > 0 ? 1 : -1;
}

/* Whether the leads extend, from the first rule that tells (enum lead_from order). */
static void decide_lead(struct thread_ctx *tc)
{
	int (*const rules[LEAD_FROM_NR - LEAD_STRUCTURE])(const struct thread_ctx *) = {
		lead_by_structure, lead_by_site, leads__at_loop_end, lead_at_loop_start,
		lead_by_shape,
	};
	bool any = false;

	count_leads(tc);
	for (size_t id = 0; id < tc->v->nr_execs && !any; id++)
		any = tc->stats[id].lead;
	tc->lead_from = LEAD_NONE;
	tc->lead_extends = false;
	for (int r = 0; any && r < LEAD_FROM_NR - LEAD_STRUCTURE; r++) {
		int says = rules[r](tc);

		/* what an earlier window saw (the loop's start) outranks what this one guesses */
		if (!says && r == 0 && tc->t->kept_lead_from) {
			tc->lead_from = tc->t->kept_lead_from;
			tc->lead_extends = tc->t->kept_lead_extends;
			return;
		}
		if (says) {
			tc->lead_from = LEAD_STRUCTURE + r;
			tc->lead_extends = says > 0;
			return;
		}
	}
}

/* Between one accept and the next verify: the lead extends, if decided so; the rest draft. */
void leads__vote(struct thread_ctx *tc)
{
	const struct model_thread *t = tc->t;

	decide_lead(tc);
	for (size_t i = 0; i + 1 < tc->nr_iters; i++) {
		const struct iter *it = &tc->iters[i];
		size_t lead = leads__lead_of(tc, i);

		for (size_t j = it->after; j < it->region_end; j++) {
			struct model_exec *x = exec_of(tc, &t->events[j]);

			if (!x || x->role == ROLE_VERIFY)
				continue;
			if (j == lead && tc->lead_extends)
				tc->stats[x->id].extend_votes++;
			else
				tc->stats[x->id].draft_votes++;
		}
	}
}

void leads__apply_votes(struct thread_ctx *tc)
{
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		const struct exec_stats *st = &tc->stats[id];
		struct model_exec *x = tc->v->execs[id];

		if (x->role != ROLE_UNKNOWN || (!st->extend_votes && !st->draft_votes))
			continue;
		set_role(x, st->extend_votes > st->draft_votes ? ROLE_EXTEND : ROLE_DRAFT,
			 ROLE_FROM_POSITION);
	}
}
