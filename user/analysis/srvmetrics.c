// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Server counters over the cycles' span (docs/server-metrics.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cycles.h"
#include "promtext.h"
#include "srvmetrics.h"

/* One good scrape: the families it held. */
struct scrape {
	__u64 ts;
	__u32 number;
	__u8 server;
	bool has[SP_SRV_FAMILY_NR];
	double value[SP_SRV_FAMILY_NR];
};

struct cycle_mark {
	__u32 tgid, tid;
	__u64 start_ns, end_ns;
};

struct srvstats {
	struct scrape *scrapes;
	size_t nr_scrapes, cap_scrapes;
	struct cycle_mark *cycles;
	size_t nr_cycles, cap_cycles;
	__u32 failed, last_failed;
	__u32 failed_by[SP_SRV_STATUS_NR + 1];
	__u32 tgid;
	bool any;
};

struct srvstats *srvstats__new(void)
{
	return calloc(1, sizeof(struct srvstats));
}

bool srvstats__any(const struct srvstats *s)
{
	return s && s->any;
}

static void *grow_to(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 64;
	void *grown;

	if (need <= *cap)
		return p;
	while (n < need)
		n *= 2;
	grown = realloc(p, n * elem);
	if (grown)
		*cap = n;
	return grown;
}

static void fail_scrape(struct srvstats *s, __u32 scrape, unsigned int status)
{
	if (scrape == s->last_failed)
		return;
	s->failed++;
	s->failed_by[status < SP_SRV_STATUS_NR ? status : SP_SRV_STATUS_NR]++;
	s->last_failed = scrape;
}

int srvstats__record(struct srvstats *s, const void *rec, size_t size)
{
	const struct sp_srvmetric_rec *m = rec;
	struct scrape *sc;

	if (size < sizeof(*m) || m->type != SP_REC_SRVMETRIC)
		return 0;
	s->any = true;
	/* a scrape after the server exited has no process: keep the one it had */
	if (m->tgid)
		s->tgid = m->tgid;
	sc = s->nr_scrapes ? &s->scrapes[s->nr_scrapes - 1] : NULL;
	if (m->status == SP_SRV_OK && m->family && m->family < SP_SRV_FAMILY_NR &&
	    promtext__check(m->family, m->value)) {
		/* the scrape's other families go with it: none of its numbers is data */
		if (sc && sc->number == m->scrape && sc->ts == m->ts)
			s->nr_scrapes--;
		fail_scrape(s, m->scrape, SP_SRV_BAD_VALUE);
		return 1;
	}
	if (m->status != SP_SRV_OK || !m->family || m->family >= SP_SRV_FAMILY_NR) {
		if (m->status != SP_SRV_OK)
			fail_scrape(s, m->scrape, m->status);
		return 1;
	}
	if (m->scrape == s->last_failed)
		return 1;
	if (!sc || sc->number != m->scrape || sc->ts != m->ts) {
		struct scrape *grown = grow_to(s->scrapes, &s->cap_scrapes, s->nr_scrapes + 1,
					       sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->scrapes = grown;
		sc = &s->scrapes[s->nr_scrapes++];
		memset(sc, 0, sizeof(*sc));
		sc->ts = m->ts;
		sc->number = m->scrape;
		sc->server = m->server;
	}
	sc->has[m->family] = true;
	sc->value[m->family] = m->value;
	return 1;
}

int srvstats__cycle(struct srvstats *s, const struct loop *lp, const struct cycle *c)
{
	struct cycle_mark *grown = grow_to(s->cycles, &s->cap_cycles, s->nr_cycles + 1,
					   sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	s->cycles = grown;
	s->cycles[s->nr_cycles++] = (struct cycle_mark){ lp->tgid, lp->tid, c->start_ns,
							 c->end_ns };
	return 0;
}

#define MAX_LOOPS 64	/* loops told apart; more share the last slot */

/* Cycles of the busiest loop starting in [from, to]; the first start and last end of all. */
static size_t cycles_in(const struct srvstats *s, __u64 from, __u64 to, __u64 *first,
			__u64 *last)
{
	struct { __u32 tgid, tid; size_t n; } loops[MAX_LOOPS];
	int nr = 0;
	size_t best = 0;

	*first = ~0ull;
	*last = 0;
	for (size_t i = 0; i < s->nr_cycles; i++) {
		const struct cycle_mark *c = &s->cycles[i];
		int l = 0;

		if (c->start_ns < *first)
			*first = c->start_ns;
		if (c->end_ns > *last)
			*last = c->end_ns;
		while (l < nr && (loops[l].tgid != c->tgid || loops[l].tid != c->tid))
			l++;
		if (l == nr && nr < MAX_LOOPS)
			loops[nr++] = (typeof(loops[0])){ c->tgid, c->tid, 0 };
		else if (l == nr)
			l = nr - 1;
		if (c->start_ns >= from && c->start_ns <= to && ++loops[l].n > best)
			best = loops[l].n;
	}
	return best;
}

/* The span's two scrapes: the last at or before first, the first at or after last. */
static void pick_span(const struct srvstats *s, __u64 first, __u64 last, size_t *a, size_t *b)
{
	*a = 0;
	*b = s->nr_scrapes - 1;
	if (first == ~0ull)
		return;
	for (size_t i = 0; i < s->nr_scrapes; i++)
		if (s->scrapes[i].ts <= first)
			*a = i;
	for (size_t i = s->nr_scrapes; i-- > 0;)
		if (s->scrapes[i].ts >= last)
			*b = i;
	if (*b < *a)
		*b = *a;
}

/* Counter increase from scrape a to b, a drop read as a restart from 0. */
static double increase(const struct srvstats *s, size_t a, size_t b, int f, __u32 *resets)
{
	double sum = 0, prev = s->scrapes[a].value[f];

	for (size_t i = a + 1; i <= b; i++) {
		double v = s->scrapes[i].value[f];

		if (!s->scrapes[i].has[f])
			continue;
		if (v < prev) {
			sum += v;
			(*resets)++;
		} else {
			sum += v - prev;
		}
		prev = v;
	}
	return sum;
}

static double gauge_mean(const struct srvstats *s, size_t a, size_t b, int f, bool *has)
{
	double sum = 0;
	size_t n = 0;

	for (size_t i = a + 1; i <= b; i++)
		if (s->scrapes[i].has[f]) {
			sum += s->scrapes[i].value[f];
			n++;
		}
	*has = n > 0;
	return n ? sum / n : 0;
}

static void counters(const struct srvstats *s, size_t a, size_t b, struct srv_figures *out)
{
	__u32 resets = 0;

	for (int f = SP_SRV_DRAFTS; f <= SP_SRV_GENERATED; f++) {
		/* a counter counts from the span's first scrape that holds it */
		size_t from = a;

		while (from < b && !s->scrapes[from].has[f])
			from++;
		if (!s->scrapes[from].has[f] || from == b)
			continue;
		out->has[f] = true;
		out->delta[f] = increase(s, from, b, f, &resets);
	}
	out->resets = resets;
}

void srvstats__compute(const struct srvstats *s, struct srv_figures *out)
{
	double secs;
	__u64 first, last;
	size_t a, b;
	bool has_len, has_rate;

	memset(out, 0, sizeof(*out));
	out->accept_rate = -1;
	if (!s)
		return;
	out->tgid = s->tgid;
	out->scrapes = s->nr_scrapes;
	out->failed = s->failed;
	memcpy(out->failed_by, s->failed_by, sizeof(out->failed_by));
	if (s->nr_scrapes < 2)
		return;
	cycles_in(s, 0, ~0ull, &first, &last);
	pick_span(s, first, last, &a, &b);
	if (a == b || s->scrapes[b].ts <= s->scrapes[a].ts)
		return;
	out->have = true;
	out->server = s->scrapes[b].server;
	out->span_start_ns = s->scrapes[a].ts;
	out->span_end_ns = s->scrapes[b].ts;
	secs = (out->span_end_ns - out->span_start_ns) / 1e9;
	counters(s, a, b, out);
	out->cycles = cycles_in(s, out->span_start_ns, out->span_end_ns, &first, &last);
	out->cycles_per_s = out->cycles / secs;
	if (out->has[SP_SRV_GENERATED])
		out->tokens_per_s = out->delta[SP_SRV_GENERATED] / secs;
	if (out->has[SP_SRV_DRAFTS] && out->has[SP_SRV_ACCEPTED] && out->delta[SP_SRV_DRAFTS] > 0)
		out->accept_length = 1 + out->delta[SP_SRV_ACCEPTED] / out->delta[SP_SRV_DRAFTS];
	if (out->has[SP_SRV_DRAFT_TOKENS] && out->has[SP_SRV_ACCEPTED] &&
	    out->delta[SP_SRV_DRAFT_TOKENS] > 0)
		out->accept_rate = out->delta[SP_SRV_ACCEPTED] / out->delta[SP_SRV_DRAFT_TOKENS];
	/* only where the counters say nothing: the gauge is of the last batch, not the span */
	if (!out->accept_length) {
		double mean = gauge_mean(s, a, b, SP_SRV_ACCEPT_LENGTH, &has_len);

		if (has_len) {
			out->accept_length = mean;
			out->accept_from_gauge = true;
			out->has[SP_SRV_ACCEPT_LENGTH] = true;
		}
	}
	if (out->accept_rate < 0) {
		double mean = gauge_mean(s, a, b, SP_SRV_ACCEPT_RATE, &has_rate);

		if (has_rate) {
			out->accept_rate = mean;
			out->has[SP_SRV_ACCEPT_RATE] = true;
		}
	}
	if (out->cycles && out->has[SP_SRV_DRAFTS])
		out->drafts_per_cycle = out->delta[SP_SRV_DRAFTS] / out->cycles;
	if (out->cycles && out->has[SP_SRV_GENERATED])
		out->tokens_per_cycle = out->delta[SP_SRV_GENERATED] / out->cycles;
	/* a cycle at each end may straddle its scrape: two cycles either way are the edges */
	if (out->has[SP_SRV_DRAFTS] && !out->resets &&
	    (out->delta[SP_SRV_DRAFTS] + 2 < (double)out->cycles ||
	     (s->nr_cycles && !out->cycles && out->delta[SP_SRV_DRAFTS] > 2)))
		out->disagree = true;
}

void srvstats__whole(const struct srvstats *s, struct srv_figures *out)
{
	struct srvstats all;

	if (!s) {
		srvstats__compute(NULL, out);
		return;
	}
	all = *s;
	all.nr_cycles = 0;
	srvstats__compute(&all, out);
}

bool srvstats__recent(const struct srvstats *s, double *tokens_per_s, double *accept_length)
{
	struct srv_figures f;
	struct srvstats last2;

	if (!s || s->nr_scrapes < 2)
		return false;
	last2 = (struct srvstats){ .scrapes = s->scrapes + s->nr_scrapes - 2, .nr_scrapes = 2 };
	srvstats__compute(&last2, &f);
	if (!f.have)
		return false;
	*tokens_per_s = f.has[SP_SRV_GENERATED] ? f.tokens_per_s : -1;
	*accept_length = f.accept_length;
	return true;
}

int srvstats__each_interval(const struct srvstats *s,
			    int (*fn)(void *ctx, const struct srv_figures *f), void *ctx)
{
	for (size_t i = 1; s && i < s->nr_scrapes; i++) {
		struct srvstats pair = { .scrapes = s->scrapes + i - 1, .nr_scrapes = 2 };
		struct srv_figures f;
		int ret;

		srvstats__compute(&pair, &f);
		if (f.have && (ret = fn(ctx, &f)))
			return ret;
	}
	return 0;
}

void srvstats__free(struct srvstats *s)
{
	if (!s)
		return;
	free(s->scrapes);
	free(s->cycles);
	free(s);
}
