// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Role evidence from where the program is: the Python frames recorded at
 * syncs. A decoder that drafts by running a model's generation inside its
 * own (Hugging Face's assisted generation: the candidate generator calls
 * the assistant's generate() from the target's) makes the draft's syncs
 * with the same function twice on the stack; the loop's own syncs (the
 * compare, the cache trim, its bookkeeping) hold it once. Each eager burst
 * votes by the syncs around it, skipping syncs with no Python frames:
 *
 *   next sync nested                     draft (the assistant's forward)
 *   last sync nested, next one not       verify (the target's forward over
 *                                        the candidates, after the draft)
 *   neither nested                       extend (the trim and bookkeeping)
 *
 * whatever the kernels in between. Where no sync is nested, nothing is voted
 * and the kernel evidence (roles.c) decides alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "callstack.h"
#include "cycles_int.h"

/*
 * The frames every sync of the thread has shared so far, outermost first:
 * the program's start down to the generation loop. A stack that holds one of
 * them again further in runs a generation inside the loop's (nested); one
 * that does not is the loop's own. Repeats deeper in (a model's modules
 * calling one another through the same wrapper) are neither.
 */
static void narrow(struct frame_prefix *fp, const struct cs_stack *st)
{
	__u32 n = st->nr_py < FRAME_PREFIX_MAX ? st->nr_py : FRAME_PREFIX_MAX, k = 0;

	/* a stack no deeper than the prefix (its walk cut short) tells nothing of it */
	if (fp->known && st->nr_py <= fp->nr)
		return;
	if (!fp->known) {
		for (k = 0; k < n; k++)
			fp->code[k] = st->py[st->nr_py - 1 - k].code;
		fp->nr = n;
		fp->known = true;
		return;
	}
	while (k < fp->nr && k < n && fp->code[k] == st->py[st->nr_py - 1 - k].code)
		k++;
	fp->nr = k;
}

bool frames__nested(const struct frame_prefix *fp, const struct cs_stack *st)
{
	if (!fp->known || !st || st->nr_py <= fp->nr)
		return false;
	for (__u32 a = 0; a < fp->nr; a++) {
		if (!fp->code[a])
			continue;
		for (__u32 b = fp->nr; b < st->nr_py; b++)
			if (st->py[st->nr_py - 1 - b].code == fp->code[a])
				return true;
	}
	return false;
}

/*
 * The frame right past the prefix runs again further in: a generation inside
 * a generation the prefix does not see, its shared frames cut short by syncs
 * outside the loop (a model's load, the prefill of a generate() before it).
 */
static __u32 nests_past(const struct frame_prefix *fp, const struct cs_stack *st)
{
	__u64 code;

	if (!fp->known || st->nr_py <= fp->nr + 1)
		return 0;
	code = st->py[st->nr_py - 1 - fp->nr].code;
	for (__u32 b = fp->nr + 1; code && b < st->nr_py; b++)
		if (st->py[st->nr_py - 1 - b].code == code)
			return b;
	return 0;
}

static const struct cs_stack *stack_of(const struct model_view *v, __u32 stack)
{
	const struct cs_stack *st = v->stacks && stack ? callstacks__stack(v->stacks, stack) : NULL;

	return st && st->nr_py ? st : NULL;
}

/*
 * The loop's statement a stack was made under: the first frame past the
 * prefix (the loop's function) and its line; 0: none.
 */
static __u64 statement_of(const struct frame_prefix *fp, const struct cs_stack *st)
{
	const struct cs_python *f;

	if (!fp->known || st->nr_py <= fp->nr)
		return 0;
	f = &st->py[st->nr_py - 1 - fp->nr];
	return f->code ^ ((__u64)(__u32)f->line << 32) ^ f->line;
}

static bool has_statement(const __u64 *stmts, __u32 n, __u64 stmt)
{
	for (__u32 i = 0; stmt && i < n; i++)
		if (stmts[i] == stmt)
			return true;
	return false;
}

static bool is_draft_statement(const struct frame_loop *fl, __u64 stmt)
{
	return has_statement(fl->draft_stmts, fl->nr_draft_stmts, stmt);
}

/*
 * Where a sync was made: its innermost FRAME_SITE_DEPTH frames and lines (a
 * helper that reads, called from different places, is different sites).
 */
static __u64 site_of(const struct cs_stack *st)
{
	__u64 site = 0;

	for (__u32 k = 0; k < FRAME_SITE_DEPTH && k < st->nr_py; k++)
		site = (site << 7 | site >> 57) ^ st->py[k].code ^
		       ((__u64)(__u32)st->py[k].line << 32) ^ st->py[k].line;
	return site;
}

/*
 * A sync of the loop made where a nested generation's syncs were made: the
 * model code both run (the attention mask's check), inside the target's
 * forward: the verify's, not the loop's.
 */
static bool in_model(const struct frame_loop *fl, const struct cs_stack *st)
{
	return has_statement(fl->model_sites, fl->nr_model_sites, site_of(st));
}

/* The code of the first frame past the prefix; 0: none. */
static __u64 past_prefix(const struct frame_prefix *fp, const struct cs_stack *st)
{
	return fp->known && st->nr_py > fp->nr ? st->py[st->nr_py - 1 - fp->nr].code : 0;
}

/*
 * The class of a sync's stack, the prefix narrowed by it first. A nested
 * one names its loop statement (the candidate generator's call): the
 * loop's syncs made under it, outside the nested generation (reading the
 * candidates' length), are the draft's too.
 */
enum frame_class frames__learn(struct frame_loop *fl, const struct cs_stack *st, __u64 *stmt_out)
{
	struct frame_prefix was;
	__u64 stmt;
	__u32 inner;

	if (!st)
		return FRAME_NONE;
	was = fl->prefix;
	narrow(&fl->prefix, st);
	/* a nested loop's prefix cut shorter: its function is the old prefix's frame there */
	if (fl->nested && fl->prefix.nr < was.nr) {
		fl->loop_code = was.code[fl->prefix.nr];
		fl->nr_draft_stmts = 0;
	}
	/*
	 * Before any nesting: the loop is where this one nests, its prefix this
	 * stack's frames down to those the nested generation runs again
	 */
	if (!fl->nested && !frames__nested(&fl->prefix, st) &&
	    (inner = nests_past(&fl->prefix, st)) && inner <= FRAME_PREFIX_MAX) {
		__u32 outer = fl->prefix.nr, run = 0;

		while (outer + run < inner && inner + run < st->nr_py &&
		       st->py[st->nr_py - 1 - outer - run].code ==
			       st->py[st->nr_py - 1 - inner - run].code)
			run++;
		memset(fl, 0, sizeof(*fl));
		narrow(&fl->prefix, st);
		fl->prefix.nr = outer + run;
	}
	stmt = *stmt_out = statement_of(&fl->prefix, st);
	/* past the prefix, not the loop's function: its walk lost frames, it tells nothing */
	if (fl->nested && past_prefix(&fl->prefix, st) != fl->loop_code)
		return FRAME_NONE;
	if (frames__nested(&fl->prefix, st)) {
		fl->nested = true;
		fl->loop_code = past_prefix(&fl->prefix, st);
		if (stmt && !is_draft_statement(fl, stmt) && fl->nr_draft_stmts < FRAME_STMTS)
			fl->draft_stmts[fl->nr_draft_stmts++] = stmt;
		if (!in_model(fl, st) && fl->nr_model_sites < FRAME_SITES)
			fl->model_sites[fl->nr_model_sites++] = site_of(st);
		return FRAME_NESTED;
	}
	if (is_draft_statement(fl, stmt))
		return FRAME_NESTED;
	return in_model(fl, st) ? FRAME_NONE : FRAME_LOOP;
}

/* The stack of each blocking event of t (0: none); NULL: no stacks or memory. */
__u32 *frames__event_stacks(const struct model_view *v, const struct model_thread *t)
{
	__u32 *stacks;

	if (!v->stacks || !t->nr_events || !(stacks = calloc(t->nr_events, sizeof(*stacks))))
		return NULL;
	for (size_t i = 0; i < v->nr_syncs; i++) {
		const struct model_sync *sy = &v->syncs[i];
		size_t k = sy->event_index;

		if (sy->tid != t->tid || sy->tgid != t->tgid || !sy->stack || k >= t->nr_events ||
		    t->events[k].ts != sy->ts || !is_blocking(&t->events[k]))
			continue;
		stacks[k] = sy->stack;
	}
	return stacks;
}

/*
 * The bursts since the last classed sync get their votes from it and the
 * next one (stmt: its loop statement). The statement that reads the verify's
 * result is learnt: a round with no draft (its generator drafted nothing)
 * still runs its verify right before it.
 */
static void settle(struct frame_walk *fw, struct exec_stats *stats, enum frame_class next,
		   __u64 stmt)
{
	/*
	 * The verify is before the accept statement's first sync: between its
	 * syncs (a sampled accept's reads) is the accept's own work
	 */
	bool accept = next == FRAME_LOOP && stmt != fw->last_stmt &&
		      has_statement(fw->accept_stmts, fw->nr_accept_stmts, stmt);

	for (size_t i = 0; i < fw->nr_pending; i++) {
		struct exec_stats *st = &stats[fw->pending[i]];

		if (next == FRAME_NESTED)
			st->frame_draft++;
		else if (fw->last == FRAME_NESTED || accept)
			st->frame_verify++;
		else if (fw->last == FRAME_LOOP)
			st->frame_extend++;
	}
	if (fw->nr_pending && fw->last == FRAME_NESTED && next == FRAME_LOOP && stmt && !accept &&
	    fw->nr_accept_stmts < FRAME_STMTS)
		fw->accept_stmts[fw->nr_accept_stmts++] = stmt;
	fw->nr_pending = 0;
	fw->last = next;
	fw->last_stmt = stmt;
}

int frames__walk(struct frame_walk *fw, struct exec_stats *stats, const struct model_view *v,
		 const struct model_thread *t, const __u32 *stacks, size_t upto)
{
	for (size_t j = 0; j < upto; j++) {
		const struct loop_event *e = &t->events[j];
		__u64 stmt = 0;
		enum frame_class cls =
			stacks[j] ? frames__learn(&fw->loop, stack_of(v, stacks[j]), &stmt) : FRAME_NONE;

		if (cls) {
			settle(fw, stats, cls, stmt);
			continue;
		}
		if (e->kind != LOOP_GRAPH || !(e->flags & LOOP_EAGER))
			continue;
		if (fw->nr_pending == fw->cap_pending) {
			size_t cap = fw->cap_pending ? fw->cap_pending * 2 : 64;
			size_t *grown = realloc(fw->pending, cap * sizeof(*grown));

			if (!grown)
				return -ENOMEM;
			fw->pending = grown;
			fw->cap_pending = cap;
		}
		fw->pending[fw->nr_pending++] = e->handle;
	}
	return 0;
}

void frames__walk_free(struct frame_walk *fw)
{
	free(fw->pending);
	memset(fw, 0, sizeof(*fw));
}

int frames__collect(struct thread_ctx *tc)
{
	__u32 *stacks = frames__event_stacks(tc->v, tc->t);
	struct frame_walk fw = { 0 };
	int ret;

	if (!stacks)
		return 0;
	ret = frames__walk(&fw, tc->stats, tc->v, tc->t, stacks, tc->t->nr_events);
	tc->frames = fw.loop;
	frames__walk_free(&fw);
	free(stacks);
	return ret;
}

static bool exec_of_thread(const struct thread_ctx *tc, const struct model_exec *x)
{
	return x->eager && x->tgid == tc->t->tgid && x->launch_tid == tc->t->tid;
}

/* A launch stack's class against the loop, and its loop statement (0: none). */
static enum frame_class launch_class(const struct thread_ctx *tc, const struct exec_stack *es,
				     __u64 *stmt)
{
	const struct cs_stack *cs = stack_of(tc->v, es->stack);

	*stmt = cs ? statement_of(&tc->frames.prefix, cs) : 0;
	return frames__class(&tc->frames, tc->v, es->stack, false);
}

/*
 * The Python frames of the first launches of its bursts (the default stacks
 * take some): a forward's own frames say whose it is, where the syncs around
 * it only bracket it. Nested under the loop's generation, or run by the
 * statement that drafts: the draft's. Of the loop's own statements, the one
 * whose forwards run the most kernels calls the target's forward (the
 * verify); the others trim and keep the books (extend). Frames lost or
 * outside the loop's function vote nothing.
 */
void frames__launch_votes(struct thread_ctx *tc)
{
	__u64 verify_stmt = 0, stmt;
	__u32 most = 0;

	if (!tc->frames.nested || !tc->v->stacks)
		return;
	/* the loop statement whose forwards run the most kernels: the target's forward */
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		const struct model_exec *x = tc->v->execs[id];

		for (int k = 0; exec_of_thread(tc, x) && k < EXEC_STACKS &&
				x->launch_stacks[k].stack; k++)
			if (launch_class(tc, &x->launch_stacks[k], &stmt) == FRAME_LOOP &&
			    x->eager_kernels > most) {
				most = x->eager_kernels;
				verify_stmt = stmt;
			}
	}
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		const struct model_exec *x = tc->v->execs[id];
		struct exec_stats *st = &tc->stats[id];

		if (!exec_of_thread(tc, x))
			continue;
		st->launch_draft = st->launch_verify = st->launch_extend = 0;
		for (int k = 0; k < EXEC_STACKS && x->launch_stacks[k].stack; k++) {
			const struct exec_stack *es = &x->launch_stacks[k];
			enum frame_class cls = launch_class(tc, es, &stmt);

			if (cls == FRAME_NESTED)
				st->launch_draft += es->launches;
			else if (cls == FRAME_LOOP && stmt == verify_stmt)
				st->launch_verify += es->launches;
			else if (cls == FRAME_LOOP)
				st->launch_extend += es->launches;
		}
	}
}

static enum graph_role most_of(__u32 draft, __u32 verify, __u32 extend)
{
	__u32 most = draft;
	enum graph_role role = ROLE_DRAFT;

	if (verify > most) {
		most = verify;
		role = ROLE_VERIFY;
	}
	if (extend > most)
		role = ROLE_EXTEND;
	return most || extend ? role : ROLE_UNKNOWN;
}

/*
 * The role its launches' frames give, where every one taken gives the same:
 * a sequence of kernels run from several places (a small helper's) has no
 * one role there.
 */
static enum graph_role launch_role(const struct exec_stats *st)
{
	int says = !!st->launch_draft + !!st->launch_verify + !!st->launch_extend;

	return says == 1 ? most_of(st->launch_draft, st->launch_verify, st->launch_extend) :
			   ROLE_UNKNOWN;
}

/* The role the syncs around its bursts voted; ROLE_UNKNOWN: none voted. */
static enum graph_role sync_role(const struct exec_stats *st)
{
	return most_of(st->frame_draft, st->frame_verify, st->frame_extend);
}

/*
 * The syncs' frames vote on every burst, the launches' on a sample: the
 * syncs decide where they voted, a forward's own launch frames where they
 * did not (a forward no classed sync brackets).
 */
static bool by_launches(const struct exec_stats *st)
{
	return sync_role(st) == ROLE_UNKNOWN && launch_role(st) != ROLE_UNKNOWN;
}

static enum graph_role frame_role(const struct exec_stats *st)
{
	return by_launches(st) ? launch_role(st) : sync_role(st);
}

/*
 * The verify anchor the frames tell: of the eager forwards most of whose
 * bursts voted verify, the one of most launches; NULL where no sync was
 * nested (the frames tell nothing), the thread launches graphs, or none
 * voted verify.
 */
struct model_exec *frames__anchor(const struct thread_ctx *tc)
{
	struct model_exec *best = NULL;

	/* beside CUDA graphs the forwards are graphs: the kernels tell them */
	if (!tc->frames.nested || tc->plain_graphs)
		return NULL;
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		struct model_exec *x = tc->v->execs[id];

		if (!x->eager || frame_role(&tc->stats[id]) != ROLE_VERIFY)
			continue;
		if (!best || x->eager_kernels > best->eager_kernels)
			best = x;
	}
	return best;
}

/* Every eager forward of the thread that voted takes the role most of its bursts voted. */
void frames__mark(struct thread_ctx *tc)
{
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		struct model_exec *x = tc->v->execs[id];
		enum graph_role role = frame_role(&tc->stats[id]);

		if (x->eager && role != ROLE_UNKNOWN && x->role == ROLE_UNKNOWN)
			set_role(x, role, by_launches(&tc->stats[id]) ? ROLE_FROM_LAUNCH_FRAMES :
									ROLE_FROM_FRAMES);
	}
}

void frames__count(const struct thread_ctx *tc, struct role_evidence *ev)
{
	for (size_t id = 0; id < tc->v->nr_execs; id++) {
		const struct exec_stats *st = &tc->stats[id];

		ev->frame_draft += st->frame_draft;
		ev->frame_verify += st->frame_verify;
		ev->frame_extend += st->frame_extend;
		ev->launch_draft += st->launch_draft;
		ev->launch_verify += st->launch_verify;
		ev->launch_extend += st->launch_extend;
		if (launch_role(st) != ROLE_UNKNOWN && sync_role(st) != ROLE_UNKNOWN)
			*(launch_role(st) == sync_role(st) ? &ev->launch_agreed :
							     &ev->launch_disagreed) += 1;
	}
	ev->frames = tc->frames;
}

/*
 * A sync's class against a loop the frames told, nothing learnt from it:
 * lost (its walk lost frames, or it is outside the loop's function) is
 * FRAME_NONE, or FRAME_LOOP where outside_is_loop.
 */
enum frame_class frames__class(const struct frame_loop *fl, const struct model_view *v,
			       __u32 stack, bool outside_is_loop)
{
	const struct cs_stack *st = stack_of(v, stack);

	if (!st)
		return FRAME_NONE;
	if (past_prefix(&fl->prefix, st) != fl->loop_code)
		return outside_is_loop ? FRAME_LOOP : FRAME_NONE;
	if (frames__nested(&fl->prefix, st) ||
	    is_draft_statement(fl, statement_of(&fl->prefix, st)))
		return FRAME_NESTED;
	return in_model(fl, st) ? FRAME_NONE : FRAME_LOOP;
}

/* A sync of the loop made in the model code its nested generation ran too (a forward's). */
bool frames__in_forward(const struct frame_loop *fl, const struct cs_stack *st)
{
	return st && st->nr_py && fl->nested && past_prefix(&fl->prefix, st) == fl->loop_code &&
	       !frames__nested(&fl->prefix, st) && in_model(fl, st);
}

bool frames__in_draft(const struct frame_loop *fl, const struct cs_stack *st)
{
	if (!st || !st->nr_py || !fl->nested)
		return false;
	if (frames__nested(&fl->prefix, st) || past_prefix(&fl->prefix, st) != fl->loop_code)
		return true;
	return is_draft_statement(fl, statement_of(&fl->prefix, st));
}
