// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe diff for a person: tables that fit 100 columns; change = B - A. */
#include <math.h>
#include <string.h>
#include "diff_view.h"
#include "report_view.h"

#define PATH_WIDTH 80
#define CELL 36

static double ms(double ns)
{
	return ns / 1e6;
}

static bool replicated(const struct diff *d)
{
	return d->runs[0].nr > 1 || d->runs[1].nr > 1;
}

/* --sample: its cycles are those its windows held whole (docs/sampling.md). */
static void put_sampled(FILE *out, struct model *m)
{
	const struct model_view *v = m ? model__view(m) : NULL;

	if (v && sample__on(&v->sample))
		fprintf(out, ", whole in --sample windows, %.0f %% of its time",
			100 * sample__share(&v->sample, v->first_ns, v->last_ns));
}

/* A long path keeps its end, where the file name is; with replicates, each one's p50. */
static void put_path(FILE *out, const struct diff *d, int s, size_t i)
{
	const char *path = d->runs[s].in[i].path;
	size_t len = strlen(path), width = replicated(d) ? PATH_WIDTH - 20 : PATH_WIDTH;
	char tag[16];

	snprintf(tag, sizeof(tag), i ? "%c%zu" : "%c", s ? 'B' : 'A', i + 1);
	if (len > width)
		fprintf(out, "  %-*s = ...%s (%zu cycles", replicated(d) ? 2 : 1, tag,
			path + len - width + 3, d->runs[s].cycles[i]);
	else
		fprintf(out, "  %-*s = %s (%zu cycles", replicated(d) ? 2 : 1, tag, path,
			d->runs[s].cycles[i]);
	if (replicated(d))
		fprintf(out, ", p50 %.3f ms", ms(d->runs[s].p50[i]));
	put_sampled(out, d->runs[s].in[i].model);
	fputs(")\n", out);
}

static void put_recordings(FILE *out, const struct diff *d)
{
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < d->runs[s].nr; i++)
			put_path(out, d, s, i);
	if (!replicated(d))
		return;
	fprintf(out, "  between-run spread: %.3f ms, the largest p50 difference between\n"
		     "  recordings of one side. Cycle time pools each side's recordings;\n"
		     "  per loop, phases and setup are of A and B alone\n",
		ms(d->between_runs));
}

static void put_pct(FILE *out, double change, double base)
{
	if (base)
		fprintf(out, " %+7.1f%%", 100 * change / base);
	else
		fprintf(out, " %8s", "");
}

static void put_ci(FILE *out, const struct boot_interval *ci)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "[%+.3f, %+.3f]", ms(ci->lo), ms(ci->hi));
	fprintf(out, "  %-20s", buf);
}

static void put_time_row(FILE *out, const char *name, double a, double b,
			 const struct boot_interval *ci)
{
	fprintf(out, "  %-9s %10.3f %10.3f %+10.3f", name, ms(a), ms(b), ms(b - a));
	put_pct(out, b - a, a);
	if (ci)
		fprintf(out, "  [%+.3f, %+.3f]", ms(ci->lo), ms(ci->hi));
	fputc('\n', out);
}

static const char *direction(const struct boot_change *c)
{
	return c->median_change > 0 ? "B is slower" : c->median_change < 0 ? "B is faster"
									      : "no change";
}

/* "B is faster" in the sense of the row that tells: less time, or more per second. */
static const char *better_name(int better)
{
	return better > 0 ? "B is faster" : better < 0 ? "B is slower" : "no change";
}

/* One verdict of all rows, then each row's, then how the p50's was told. */
static void put_overall(FILE *out, const struct diff *d)
{
	const struct diff_verdict *v = &d->verdict;
	int n = 0;

	fprintf(out, "  verdict: %s", bootstrap__verdict_name(v->verdict));
	if (v->mixed)
		fputs(", mixed: the rows beyond the noise floor disagree", out);
	else if (v->verdict == VERDICT_SIGNIFICANT)
		fprintf(out, ", %s (%s %+.1f %%)", better_name(v->better), diff__row_name(v->by),
			100 * v->row[v->by].change_rel);
	fputs("\n  by row:", out);
	for (int r = 0; r < DIFF_ROW_NR; r++) {
		if (!v->row[r].known)
			continue;
		if (n)	/* two rows a line: each line within 100 columns */
			fputs(n % 2 ? "," : ",\n        ", out);
		n++;
		fprintf(out, " %s %+.1f %% %s", diff__row_name(r), 100 * v->row[r].change_rel,
			v->row[r].verdict == VERDICT_SIGNIFICANT ? "beyond the floor"
			: v->row[r].verdict == VERDICT_BELOW_NOISE ? "within the floor"
								   : "interval holds 0");
	}
	fprintf(out, "\n  (noise floor %.1f %% of A's p50%s)\n", 100 * v->floor_rel,
		v->row[DIFF_ROW_TOKENS].known ? "; tokens/s, the server's counters, has no interval"
					      : "");
}

static void put_verdict(FILE *out, const struct diff *d)
{
	const struct diff_times *t = &d->overall;
	const struct boot_change *c = &t->change;
	double floor_ns = bootstrap__noise_floor(c);

	put_overall(out, d);
	fprintf(out, "  p50: %s", bootstrap__verdict_name(t->verdict));
	switch (t->verdict) {
	case VERDICT_SIGNIFICANT:
		fprintf(out, ", %s: the interval of the p50 change excludes 0 and %.3f ms\n"
			     "       is more than the noise floor, %.3f ms\n",
			direction(c), ms(fabs(c->median_change)), ms(floor_ns));
		break;
	case VERDICT_BELOW_NOISE:
		fprintf(out, ": the interval excludes 0, but %.3f ms is within the noise floor,\n"
			     "       %.3f ms: runs of one setting differ this much\n",
			ms(fabs(c->median_change)), ms(floor_ns));
		break;
	default:
		fputs(": the interval of the p50 change holds 0\n", out);
	}
	fprintf(out, "  (%d resamples of each recording's cycles, fixed seed; noise floor: the larger\n"
		     "   of %.0f%% of A's p50 and %.2f of the mean interquartile range",
		BOOT_RESAMPLES, 100 * NOISE_MIN_REL, NOISE_IQR_FRAC);
	if (replicated(d)) {
		fprintf(out, "; at least %d x\n   the between-run spread)\n", NOISE_RUNS_MULT);
		return;
	}
	/* runs of one setting differ by more than one recording can show */
	fputs(")\n  one recording per side: between-run variation not measured; record each\n"
	      "  setting twice to measure it (--also-a, --also-b)\n",
	      out);
}

static void put_cycle_time(FILE *out, const struct diff *d)
{
	const struct diff_times *t = &d->overall;
	const struct cycle_summary *a = &t->a, *b = &t->b;

	fputs("\nCycle time, all loops (ms)\n", out);
	fprintf(out, "  %-9s %10s %10s %10s %8s  %s\n", "", "A", "B", "change", "", "95% interval");
	fprintf(out, "  %-9s %10zu %10zu %+10lld\n", "cycles", a->cycles, b->cycles,
		(long long)b->cycles - (long long)a->cycles);
	fprintf(out, "  %-9s %10.1f %10.1f %+10.1f", "cycles/s", a->cycles_per_s, b->cycles_per_s,
		b->cycles_per_s - a->cycles_per_s);
	put_pct(out, b->cycles_per_s - a->cycles_per_s, a->cycles_per_s);
	fputc('\n', out);
	put_time_row(out, "p50", a->p50_ns, b->p50_ns, &t->change.median_ci);
	put_time_row(out, "p90", a->p90_ns, b->p90_ns, NULL);
	put_time_row(out, "p99", a->p99_ns, b->p99_ns, NULL);
	put_time_row(out, "mean", a->mean_ns, b->mean_ns, &t->change.mean_ci);
	put_time_row(out, "IQR", t->change.iqr_a, t->change.iqr_b, NULL);
}

static void loop_label(const struct loop *a, const struct loop *b, char *buf, size_t len)
{
	const struct loop *lp = a ? a : b;

	if (lp->rank >= 0)
		snprintf(buf, len, "rank %d", lp->rank);
	else
		snprintf(buf, len, "%u/%u", lp->tgid, lp->tid);
}

static void put_pair(FILE *out, const struct diff_pair *p)
{
	const struct diff_times *t = &p->times;
	char label[32];

	loop_label(p->a, p->b, label, sizeof(label));
	fprintf(out, "  %-13s", label);
	if (!t->compared) {
		fprintf(out, " %8zu %8zu  %s\n", p->a ? p->a->nr_cycles : 0,
			p->b ? p->b->nr_cycles : 0,
			!p->a ? "only in B" : !p->b ? "only in A" : "no cycles in one of them");
		return;
	}
	fprintf(out, " %8zu %8zu %8.3f %8.3f %+8.3f", t->a.cycles, t->b.cycles, ms(t->a.p50_ns),
		ms(t->b.p50_ns), ms(t->change.median_change));
	put_ci(out, &t->change.median_ci);
	fprintf(out, " %s\n", bootstrap__verdict_name(t->verdict));
}

static void put_loops(FILE *out, const struct diff *d)
{
	fprintf(out, "\nPer loop, cycle time p50 (ms; loops paired by %s)\n",
		d->by_rank ? "rank" : "position: rank, pid, tid order");
	fprintf(out, "  %-13s %8s %8s %8s %8s %8s  %-20s %s\n", "loop", "cycles A", "cycles B",
		"p50 A", "p50 B", "change", "95% interval", "verdict");
	for (size_t i = 0; i < d->nr_pairs; i++)
		put_pair(out, &d->pairs[i]);
}

static void put_phases(FILE *out, const struct diff *d)
{
	const struct diff_phase *a = d->side[0].phase, *b = d->side[1].phase;

	fputs("\nPhases per cycle (ms): host span p50, blocked in syncs mean\n", out);
	fprintf(out, "  %-8s %8s %8s %8s   %9s %9s %8s\n", "phase", "span A", "span B", "change",
		"blocked A", "blocked B", "change");
	for (int p = 0; p <= PHASE_NR; p++)
		fprintf(out, "  %-8s %8.3f %8.3f %+8.3f   %9.3f %9.3f %+8.3f\n",
			p < PHASE_NR ? cycles__phase_name(p) : "cycle", ms(a[p].span_p50),
			ms(b[p].span_p50), ms(b[p].span_p50 - a[p].span_p50), ms(a[p].blocked_mean),
			ms(b[p].blocked_mean), ms(b[p].blocked_mean - a[p].blocked_mean));
	fputs("\nLaunches and syncs per cycle (means)\n", out);
	fprintf(out, "  %-8s %10s %10s %8s   %7s %7s %7s\n", "phase", "launches A", "launches B",
		"change", "syncs A", "syncs B", "change");
	for (int p = 0; p <= PHASE_NR; p++)
		fprintf(out, "  %-8s %10.2f %10.2f %+8.2f   %7.2f %7.2f %+7.2f\n",
			p < PHASE_NR ? cycles__phase_name(p) : "cycle", a[p].launches,
			b[p].launches, b[p].launches - a[p].launches, a[p].syncs, b[p].syncs,
			b[p].syncs - a[p].syncs);
}

/* --gpu on both sides: GPU busy per phase and GPU idle, means over the cycles with them. */
static void put_gpu(FILE *out, const struct diff *d)
{
	const struct cycle_summary *a = &d->side[0].sum, *b = &d->side[1].sum;

	if (!diff__gpu(d))
		return;
	fprintf(out, "\nGPU per cycle (ms, means over the cycles with GPU figures: A %zu, B %zu)\n",
		a->gpu_cycles, b->gpu_cycles);
	fprintf(out, "  %-8s %8s %8s %8s\n", "busy", "A", "B", "change");
	for (int p = 0; p < PHASE_NR; p++)
		fprintf(out, "  %-8s %8.3f %8.3f %+8.3f\n", cycles__phase_name(p),
			ms(a->phase[p].gpu_busy_ns), ms(b->phase[p].gpu_busy_ns),
			ms(b->phase[p].gpu_busy_ns - a->phase[p].gpu_busy_ns));
	fprintf(out, "  %-8s %8.3f %8.3f %+8.3f\n", "idle", ms(a->gpu_idle_ns), ms(b->gpu_idle_ns),
		ms(b->gpu_idle_ns - a->gpu_idle_ns));
}

static void put_server_row(FILE *out, const char *name, bool known, double a, double b,
			   int prec)
{
	if (!known)
		return;
	fprintf(out, "  %-13s %10.*f %10.*f %+10.*f", name, prec, a, prec, b, prec, b - a);
	put_pct(out, b - a, a);
	fputc('\n', out);
}

/* --server-metrics on both sides: the server's own figures over each one's cycles. */
static void put_server(FILE *out, const struct diff *d)
{
	const struct srv_figures *a = d->side[0].server, *b = d->side[1].server;

	if (!diff__server(d))
		return;
	fputs("\nServer, from its own counters (--server-metrics; over each one's cycles)\n", out);
	fprintf(out, "  %-13s %10s %10s %10s\n", "", "A", "B", "change");
	put_server_row(out, "tokens/s", a->has[SP_SRV_GENERATED] && b->has[SP_SRV_GENERATED],
		       a->tokens_per_s, b->tokens_per_s, 1);
	put_server_row(out, "accept length", a->accept_length > 0 && b->accept_length > 0,
		       a->accept_length, b->accept_length, 3);
	put_server_row(out, "tokens/cycle",
		       a->has[SP_SRV_GENERATED] && a->cycles && b->has[SP_SRV_GENERATED] &&
			       b->cycles,
		       a->tokens_per_cycle, b->tokens_per_cycle, 3);
}

/* A's and B's figure; "-" where it is not known. */
static void put_site_cells(FILE *out, const double *v)
{
	for (int k = 0; k < 2; k++)
		if (v[k] < 0)
			fprintf(out, " %8s", "-");
		else
			fprintf(out, " %8.3f", ms(v[k]));
}

/* Flagged syncs by call site, A against B: did removing that sync help? */
static void put_sites(FILE *out, const struct diff *d)
{
	size_t shown = d->nr_sites < 8 ? d->nr_sites : 8;

	if (!d->sites_known)
		return;
	fputs("\nFlagged syncs by call site (per counted cycle: blocked and GPU idle caused, ms)\n",
	      out);
	if (!d->nr_sites) {
		fputs("  none in either\n", out);
		return;
	}
	fprintf(out, "  %7s %7s %8s %8s %8s %8s  %s\n", "count A", "count B", "blk A", "blk B",
		"idle A", "idle B", "site");
	for (size_t i = 0; i < shown; i++) {
		const struct diff_site *s = &d->sites[i];
		const char *tail = report__label_tail(s->label, 40);

		fprintf(out, "  %7zu %7zu", s->count[0], s->count[1]);
		put_site_cells(out, s->blocked_ns);
		put_site_cells(out, s->gpu_idle_ns);
		fprintf(out, "  %s%s\n", tail != s->label ? "..." : "", tail);
	}
	if (shown < d->nr_sites)
		fprintf(out, "  ... %zu more (--json: flagged_sites[])\n", d->nr_sites - shown);
	fputs("  (idle: GPU idle caused, where --gpu measured it, else -)\n", out);
}

static void put_setup(FILE *out, const struct diff *d)
{
	char a[128], b[128], label[32];
	const char *name;
	int differ = 0;

	fprintf(out, "\nSetup, as the recordings show it (* differs)\n  %-15s %-*s %s\n", "",
		CELL, "A", "B");
	for (int row = 0; diff__setup_row(d, row, &name, a, b, sizeof(a)); row++) {
		bool differs = strcmp(a, b) != 0;

		snprintf(label, sizeof(label), "%s", name);
		for (char *c = label; *c; c++)
			if (*c == '_')
				*c = ' ';
		fprintf(out, "%c %-15s %-*.*s %.*s\n", differs ? '*' : ' ', label, CELL, CELL, a,
			CELL + 8, b);
		differ += differs;
	}
	if (!differ)
		fputs("  (no difference the recordings can show)\n", out);
}

void diff__text(FILE *out, const struct diff *d)
{
	fputs("specprobe diff: change = B - A\n", out);
	put_recordings(out, d);
	put_cycle_time(out, d);
	put_server(out, d);
	/* one verdict of the rows above, then what changed in the flagged syncs */
	put_verdict(out, d);
	put_sites(out, d);
	put_loops(out, d);
	put_phases(out, d);
	put_gpu(out, d);
	put_setup(out, d);
}
