// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The report's first five lines answer the question before any table: how fast the
 * loop runs, where a cycle's time goes, and the one sync to remove first, with its
 * call site. Words as docs/guide.md ("The figures") defines them.
 */
#include <string.h>
#include "report_view.h"

static double ms(double ns)
{
	return ns / 1e6;
}

const char *report__label_tail(const char *label, size_t max)
{
	size_t len = strlen(label);
	const char *tail = label;

	if (len <= max)
		return label;
	for (tail = label + len - (max - 3); (*tail & 0xc0) == 0x80; tail++)
		;	/* not inside a UTF-8 character */
	return tail;
}

/* Line 1: the rates and the cycle's median. */
static void put_rates(FILE *out, const struct results *res)
{
	const struct cycle_summary *s = &res->overall;
	const struct srv_figures *f = res->server;

	fprintf(out, "specprobe report: %.1f cycles/s, ", s->cycles_per_s);
	if (f && f->have && f->has[SP_SRV_GENERATED])
		fprintf(out, "%.1f tok/s, ", f->tokens_per_s);
	else
		fputs("- tok/s (no --server-metrics), ", out);
	fprintf(out, "cycle p50 %.3f ms, %zu cycles%s\n", ms(s->p50_ns), s->cycles,
		sample__on(&model__view(res->model)->sample) ? " whole in --sample windows" : "");
}

/* Line 2: the phase split, of GPU time where every launch of a cycle was matched. */
static void put_split(FILE *out, const struct cycle_summary *s)
{
	bool gpu = s->gpu_cycles > 0;
	double whole = gpu ? s->gpu_window_ns : s->total.span_ns;

	if (gpu)
		fprintf(out, "  GPU a cycle (p50 %.3f ms, %zu cycles):", ms(s->gpu_window_p50_ns),
			s->gpu_cycles);
	else
		fprintf(out, "  host a cycle (mean %.3f ms):", ms(s->mean_ns));
	for (int p = 0; p < PHASE_NR; p++) {
		double part = gpu ? s->phase[p].gpu_busy_ns : s->phase[p].span_ns;

		if (p == PHASE_OTHER && (whole <= 0 || part / whole < 0.005))
			continue;	/* other only where it counts */
		if (p == PHASE_EXTEND && summary__extend_unresolved(s)) {
			fputs(", extend ? (read into draft)", out);
			continue;
		}
		fprintf(out, "%s %s %.0f%%%s", p ? "," : "", cycles__phase_name(p),
			whole > 0 ? 100 * part / whole : 0.0,
			/* a deferred accept runs on into the next cycle: over 100 % together */
			p == PHASE_ACCEPT && s->deferred && !gpu ? " (deferred)" : "");
	}
	if (gpu)
		fprintf(out, ", idle %.0f%%", whole > 0 ? 100 * s->gpu_idle_ns / whole : 0.0);
	fputc('\n', out);
}

/* The call site whose flagged syncs cost most: GPU idle caused where known, else blocked. */
static const struct callsite_stat *top_callsite(const struct syncs *sy)
{
	const struct callsite_stat *best = NULL;

	for (size_t i = 0; i < sy->nr_by_callsite; i++) {
		const struct callsite_stat *cs = &sy->by_callsite[i];

		if (!cs->flagged)
			continue;
		if (!best || cs->flagged_gpu_idle_ns > best->flagged_gpu_idle_ns ||
		    (cs->flagged_gpu_idle_ns == best->flagged_gpu_idle_ns &&
		     cs->flagged_ns > best->flagged_ns))
			best = cs;
	}
	return best;
}

/* Lines 3 and 4: the flagged sync to remove first, its cost and where it is called. */
static void put_top_sync(FILE *out, const struct results *res, const struct callstacks *stacks)
{
	const struct syncs *sy = &res->syncs;
	const struct callsite_stat *cs = top_callsite(sy);
	const struct sync_site *site = sy->flagged_sites.nr ? &sy->flagged_sites.sites[0] : NULL;
	double cycles = sy->cycles ? sy->cycles : 1, mean = res->overall.mean_ns;
	double cost = cs ? cs->flagged_ns : site ? site->blocked_ns : 0;
	bool gpu = cs && cs->flagged_gpu_known;
	const struct cs_site *at = cs ? callstacks__site(stacks, cs->site) : NULL;
	const char *tail;

	if (!res->syncs_err && !cs && !site && sy->verdicts_of[VERDICT_UNSEEN]) {
		/* --sample: what no whole cycle showed was not judged, so not found clean */
		fprintf(out, "  flagged syncs: none of %zu syncs judged\n    %zu at call sites no "
			     "whole cycle in a window showed: not judged\n",
			sy->sync_calls - sy->verdicts_of[VERDICT_UNSEEN],
			sy->verdicts_of[VERDICT_UNSEEN]);
		return;
	}
	if (res->syncs_err || (!cs && !site)) {
		fprintf(out, "  flagged syncs: %s of %zu syncs\n    nothing the loop waits on "
			     "beyond its own accept sync\n", res->syncs_err ? "?" : "none",
			sy->sync_calls);
		return;
	}
	if (gpu)
		cost = cs->flagged_gpu_idle_ns;
	fprintf(out, "  top flagged sync: %s at %s, %.1f %% of the cycle (%.3f ms %s)\n",
		model__call_name(cs ? cs->flagged_name : site->name),
		syncs__pos_name(cs ? cs->flagged_pos : site->pos),
		mean > 0 ? 100 * cost / cycles / mean : 0.0, ms(cost / cycles),
		gpu ? "GPU idle caused" : "blocked");
	if (!at) {
		fprintf(out, "    call site not recorded (record --stacks none); %zu flagged in all\n",
			sy->flagged);
		return;
	}
	tail = report__label_tail(at->label, 60);
	fprintf(out, "    called at %s%s: %zu calls", tail != at->label ? "..." : "", tail,
		cs->flagged);
	if (sy->flagged > cs->flagged)
		fprintf(out, ", %zu more flagged elsewhere", sy->flagged - cs->flagged);
	fputc('\n', out);
}

void report__head(FILE *out, const struct results *res)
{
	const struct model_view *v = model__view(res->model);

	if (res->overall.cycles) {
		put_rates(out, res);
		put_split(out, &res->overall);
	} else {
		struct sample_figures f;

		report__sample_figures(res, &f);
		fprintf(out, "specprobe report: no cycles found (%zu loop(s))\n",
			res->cycles.nr_loops);
		if (f.on && f.cycles_cut)
			/* a cycle counts with the verify two before it and the next one in view */
			fprintf(out, "  no cycle whole in a %u ms --sample window (%zu cut by an edge): "
				     "a window must hold about four cycles; a longer ON\n",
				v->sample.on_ms, f.cycles_cut);
		else
			fputs("  no rate, cycle time or phase split to give\n", out);
	}
	put_top_sync(out, res, v->stacks);
	fprintf(out, "  host %s, kernel %s; %llu calls over %.3f s\n", v->host[0] ? v->host : "?",
		v->kernel[0] ? v->kernel : "?", (unsigned long long)v->calls,
		v->calls ? (v->last_ns - v->first_ns) / 1e9 : 0.0);
	report__sample_line(out, res);
}
