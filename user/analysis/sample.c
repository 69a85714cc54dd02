// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <stdint.h>
#include <stdlib.h>
#include "sample.h"
#include "specprobe.h"

static void note_open(struct sample_windows *s, const struct sp_sample_rec *r)
{
	if (s->nr && s->w[s->nr - 1].close_ns == UINT64_MAX)
		return;		/* opened twice: the first holds */
	if (s->nr && r->ts < s->w[s->nr - 1].close_ns)
		return;		/* out of order: not a window this reader can trust */
	if (s->nr == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct sample_window *grown = realloc(s->w, cap * sizeof(*grown));

		if (!grown)
			return;
		s->w = grown;
		s->cap = cap;
	}
	s->w[s->nr++] = (struct sample_window){ .open_ns = r->ts, .close_ns = UINT64_MAX,
						.whole_from_ns = r->ts + r->late_us * 1000ull,
						.whole_to_ns = UINT64_MAX };
	s->attach_ns += r->cost_ns;
	if (r->cost_ns > s->attach_max_ns)
		s->attach_max_ns = r->cost_ns;
}

void sample__note(struct sample_windows *s, const void *rec, size_t size)
{
	const struct sp_sample_rec *r = rec;
	struct sample_window *last;

	if (size < sizeof(*r))
		return;
	s->on_ms = r->on_ms;
	s->every_ms = r->every_ms;
	if (r->flags & SP_SAMPLE_DETACHED) {
		s->detach_ns += r->cost_ns;
		if (r->cost_ns > s->detach_max_ns)
			s->detach_max_ns = r->cost_ns;
		return;
	}
	if (r->flags & SP_SAMPLE_OPEN) {
		s->probes = r->probes;
		note_open(s, r);
		return;
	}
	if (!s->nr) {
		/* a ring's segment that begins inside a window: open since its start */
		struct sp_sample_rec open = *r;

		open.ts = 0;
		open.cost_ns = 0;
		note_open(s, &open);
	}
	last = s->nr ? &s->w[s->nr - 1] : NULL;
	if (!last || last->close_ns != UINT64_MAX || r->ts < last->open_ns)
		return;		/* a close with no open window */
	last->close_ns = r->ts;
	last->whole_to_ns = r->ts - (r->late_us * 1000ull < r->ts ? r->late_us * 1000ull : r->ts);
	/* a close that holds its detach's cost (a tool that cuts windows: 0) */
	s->detach_ns += r->cost_ns;
	if (r->cost_ns > s->detach_max_ns)
		s->detach_max_ns = r->cost_ns;
}

size_t sample__slot(const struct sample_windows *s, __u64 ts)
{
	size_t lo = 0, hi = s->nr;

	/* the last window opened at or before ts */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->w[mid].open_ns <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	return ts <= s->w[lo - 1].close_ns ? 2 * lo - 1 : 2 * lo;
}

bool sample__inside(const struct sample_windows *s, __u64 from, __u64 to)
{
	const struct sample_window *w;
	size_t slot;

	if (!s->nr)
		return true;
	slot = sample__slot(s, from);
	if (!(slot % 2) || sample__slot(s, to) != slot)
		return false;
	/* where an edge was set late, only what lies past it was recorded whole */
	w = &s->w[slot / 2];
	return from >= w->whole_from_ns && to <= w->whole_to_ns;
}

__u64 sample__covered_ns(const struct sample_windows *s, __u64 first_ns, __u64 last_ns)
{
	__u64 sum = 0;

	for (size_t i = 0; i < s->nr; i++) {
		__u64 a = s->w[i].open_ns > first_ns ? s->w[i].open_ns : first_ns;
		__u64 b = s->w[i].close_ns < last_ns ? s->w[i].close_ns : last_ns;

		if (b > a)
			sum += b - a;
	}
	return sum;
}

double sample__share(const struct sample_windows *s, __u64 first_ns, __u64 last_ns)
{
	if (!s->nr)
		return 1.0;
	if (last_ns <= first_ns)
		return 0.0;
	return (double)sample__covered_ns(s, first_ns, last_ns) / (double)(last_ns - first_ns);
}

void sample__figures(const struct sample_windows *s, __u64 first_ns, __u64 last_ns,
		     struct sample_figures *f)
{
	size_t closes = 0;

	*f = (struct sample_figures){ 0 };
	if (!sample__on(s))
		return;
	f->on = true;
	f->on_ms = s->on_ms;
	f->every_ms = s->every_ms;
	f->windows = s->nr;
	for (size_t i = 0; i < s->nr; i++)
		closes += s->w[i].close_ns != UINT64_MAX;
	f->seen_share = sample__share(s, first_ns, last_ns);
	f->attach_mean_ns = s->nr ? s->attach_ns / s->nr : 0;
	f->detach_mean_ns = closes ? s->detach_ns / closes : 0;
}

void sample__free(struct sample_windows *s)
{
	for (size_t i = 0; i < s->sites.cap; i++)
		free(s->sites.slots[i].value);
	hmap__free(&s->sites);
	free(s->w);
	*s = (struct sample_windows){ 0 };
}
