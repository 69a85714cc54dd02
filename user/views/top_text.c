// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* top --batch: one block of text per interval, for logs and tests. */
#include <errno.h>
#include <stdio.h>
#include "catalog.h"
#include "model.h"
#include "top_view.h"

static const char *const sort_names[TOP_SORT_NR] = { "rank", "cycles/s", "p99" };

const char *top__sort_name(enum top_sort sort)
{
	return sort < TOP_SORT_NR ? sort_names[sort] : "?";
}

static void print_rank(FILE *out, int rank)
{
	if (rank >= 0)
		fprintf(out, "  %4d", rank);
	else
		fprintf(out, "  %4s", "-");
}

static void print_loops(FILE *out, const struct top_frame *f)
{
	fprintf(out, "LOOPS\n  %4s %7s %7s %9s %6s %7s %7s %7s %6s %6s %6s %6s %7s\n", "rank",
		"pid", "tid", "cycles/s", "tok/s", "p50_ms", "p99_ms", "total", "draft", "verify",
		"accept", "extend", "blocked");
	for (size_t i = 0; i < f->nr_loops; i++) {
		const struct top_loop_row *r = &f->loops[i];

		print_rank(out, r->rank);
		fprintf(out, " %7u %7u", r->tgid, r->tid);
		if (r->idle)
			fprintf(out, " %9s %6s %7s %7s", "idle", "-", "-", "-");
		else
			fprintf(out, " %9.1f %6s %7.3f %7.3f", r->cycles_per_s, "-", r->p50_ns / 1e6,
				r->p99_ns / 1e6);
		fprintf(out, " %7llu", (unsigned long long)r->total);
		fprintf(out, " %5.0f%% %5.0f%% %5.0f%% %5.0f%% %6.0f%%\n", 100 * r->share[PHASE_DRAFT],
			100 * r->share[PHASE_VERIFY], 100 * r->share[PHASE_ACCEPT],
			100 * r->share[PHASE_EXTEND], 100 * r->share[PHASE_NR]);
	}
}

static void print_sites(FILE *out, const struct top_frame *f)
{
	fprintf(out, "SYNCS flagged\n  %4s %7s %-24s %-13s %-13s %8s %10s %7s\n", "rank", "pid",
		"call", "position", "kind", "count/s", "blk_ms/cyc", "total");
	for (size_t i = 0; i < f->nr_sites; i++) {
		const struct top_site_row *s = &f->sites[i];

		print_rank(out, s->rank);
		fprintf(out, " %7u %-24s %-13s %-13s %8.1f %10.3f %7llu\n", s->tgid,
			model__call_name(s->name), syncs__pos_name(s->pos),
			model__sync_kind_name(s->kind), s->per_s,
			s->blocked_ms_per_cycle, (unsigned long long)s->total);
		if (s->where)
			fprintf(out, "       at %.90s\n", s->where);
	}
	if (f->sites_lost)
		fprintf(out, "  (%llu more flagged syncs at other sites)\n",
			(unsigned long long)f->sites_lost);
}

static void print_hung(FILE *out, const struct top_frame *f, const struct top_opts *o)
{
	fprintf(out, "HUNG open>%.1fs\n  %4s %7s %7s %-24s %8s\n", o->hung_ns / 1e9, "rank", "pid",
		"tid", "call", "age_s");
	for (size_t i = 0; i < f->nr_hung; i++) {
		const struct top_hung_row *h = &f->hung[i];

		print_rank(out, h->rank);
		fprintf(out, " %7u %7u %-24s %8.1f\n", h->tgid, h->tid, model__call_name(h->name),
			h->age_ns / 1e9);
	}
}

int top__print(FILE *out, const struct top_frame *f, const struct top_title *title)
{
	const struct top_opts *o = title->opts;

	fprintf(out, "== specprobe top %s t=%.1fs window=%.0fs sort=%s", title->mode, f->elapsed_s,
		f->window_s, top__sort_name(o->sort));
	if (o->focus_rank >= 0)
		fprintf(out, " rank=%d", o->focus_rank);
	fprintf(out, "\ntracer: %d probes, %.0f records/s, %llu records, %llu drops, ", f->probes,
		f->records_per_s, (unsigned long long)f->records, (unsigned long long)f->drops);
	if (f->overhead_pct >= 0)
		fprintf(out, "probes cost %.2f%% of the targets' CPU\n", f->overhead_pct);
	else
		fprintf(out, "probes cost unknown\n");
	print_loops(out, f);
	print_sites(out, f);
	print_hung(out, f, o);
	fprintf(out, "CALLS\n");
	for (size_t i = 0; i < f->nr_calls; i++)
		fprintf(out, "  %-28s %10.1f/s\n", model__call_name(f->calls_top[i].name),
			f->calls_top[i].per_s);
	fprintf(out, "\n");
	fflush(out);
	return ferror(out) ? -EIO : 0;
}
