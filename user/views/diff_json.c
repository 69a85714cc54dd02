// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe diff as one JSON document; the schema is docs/diff-json.md. */
#include <string.h>
#include "json.h"
#include "diff_view.h"

static void put_string(FILE *out, const char *s)
{
	json__string(out, s, strlen(s));
}

/* {"a":x,"b":y,"change":y-x} */
static void put_abc(FILE *out, const char *key, double a, double b)
{
	fprintf(out, "\"%s\":{\"a\":%.1f,\"b\":%.1f,\"change\":%.1f}", key, a, b, b - a);
}

static void put_abc2(FILE *out, const char *key, double a, double b)
{
	fprintf(out, "\"%s\":{\"a\":%.2f,\"b\":%.2f,\"change\":%.2f}", key, a, b, b - a);
}

static void put_times(FILE *out, const struct diff_times *t)
{
	const struct cycle_summary *a = &t->a, *b = &t->b;
	const struct boot_change *c = &t->change;

	fprintf(out, "\"cycles\":{\"a\":%zu,\"b\":%zu},", a->cycles, b->cycles);
	put_abc2(out, "cycles_per_s", a->cycles_per_s, b->cycles_per_s);
	fputc(',', out);
	put_abc(out, "p50_ns", a->p50_ns, b->p50_ns);
	fputc(',', out);
	put_abc(out, "p90_ns", a->p90_ns, b->p90_ns);
	fputc(',', out);
	put_abc(out, "p99_ns", a->p99_ns, b->p99_ns);
	fputc(',', out);
	put_abc(out, "mean_ns", a->mean_ns, b->mean_ns);
	fputc(',', out);
	put_abc(out, "iqr_ns", c->iqr_a, c->iqr_b);
	if (!t->compared) {
		fputs(",\"p50_ci_ns\":null,\"mean_ci_ns\":null,\"noise_floor_ns\":null,"
		      "\"verdict\":null,\"significant\":false,\"direction\":null",
		      out);
		return;
	}
	fprintf(out, ",\"p50_ci_ns\":[%.1f,%.1f],\"mean_ci_ns\":[%.1f,%.1f]", c->median_ci.lo,
		c->median_ci.hi, c->mean_ci.lo, c->mean_ci.hi);
	fprintf(out, ",\"p50_change_rel\":%.4f", c->median_a ? c->median_change / c->median_a : 0);
	fprintf(out, ",\"noise_floor_ns\":%.1f,\"verdict\":\"%s\",\"significant\":%s",
		bootstrap__noise_floor(c), bootstrap__verdict_name(t->verdict),
		t->verdict == VERDICT_SIGNIFICANT ? "true" : "false");
	fprintf(out, ",\"direction\":\"%s\"", c->median_change > 0   ? "slower"
					      : c->median_change < 0 ? "faster"
								     : "same");
}

static void put_loop_id(FILE *out, const char *key, const struct loop *lp)
{
	if (!lp) {
		fprintf(out, "\"%s\":null", key);
		return;
	}
	fprintf(out, "\"%s\":{\"pid\":%u,\"tid\":%u,\"rank\":", key, lp->tgid, lp->tid);
	if (lp->rank >= 0)
		fprintf(out, "%d}", lp->rank);
	else
		fputs("null}", out);
}

static void put_loops(FILE *out, const struct diff *d)
{
	fprintf(out, ",\"loops_paired_by\":\"%s\",\"loops\":[", d->by_rank ? "rank" : "position");
	for (size_t i = 0; i < d->nr_pairs; i++) {
		const struct diff_pair *p = &d->pairs[i];

		fputs(i ? ",{" : "{", out);
		put_loop_id(out, "a", p->a);
		fputc(',', out);
		put_loop_id(out, "b", p->b);
		fputc(',', out);
		put_times(out, &p->times);
		fputc('}', out);
	}
	fputc(']', out);
}

static void put_phases(FILE *out, const struct diff *d)
{
	const struct diff_phase *a = d->side[0].phase, *b = d->side[1].phase;

	fputs(",\"phases\":{", out);
	for (int p = 0; p <= PHASE_NR; p++) {
		fprintf(out, "%s\"%s\":{", p ? "," : "",
			p < PHASE_NR ? cycles__phase_name(p) : "cycle");
		put_abc(out, "span_p50_ns", a[p].span_p50, b[p].span_p50);
		fputc(',', out);
		put_abc(out, "blocked_p50_ns", a[p].blocked_p50, b[p].blocked_p50);
		fputc(',', out);
		put_abc(out, "blocked_mean_ns", a[p].blocked_mean, b[p].blocked_mean);
		fputc(',', out);
		put_abc2(out, "launches", a[p].launches, b[p].launches);
		fputc(',', out);
		put_abc2(out, "syncs", a[p].syncs, b[p].syncs);
		fputc('}', out);
	}
	fputc('}', out);
}

/* Only when both sides have GPU figures (--gpu): means over the cycles with them. */
static void put_gpu(FILE *out, const struct diff *d)
{
	const struct cycle_summary *a = &d->side[0].sum, *b = &d->side[1].sum;

	if (!diff__gpu(d))
		return;
	fprintf(out, ",\"gpu\":{\"cycles\":{\"a\":%zu,\"b\":%zu},\"busy_mean_ns\":{", a->gpu_cycles,
		b->gpu_cycles);
	for (int p = 0; p < PHASE_NR; p++) {
		fputs(p ? "," : "", out);
		put_abc(out, cycles__phase_name(p), a->phase[p].gpu_busy_ns,
			b->phase[p].gpu_busy_ns);
	}
	fputs("},", out);
	put_abc(out, "idle_mean_ns", a->gpu_idle_ns, b->gpu_idle_ns);
	fputc('}', out);
}

/* {"a":x,"b":y,"change":y-x} exactly, or null */
static void put_abc_exact(FILE *out, const char *key, bool known, double a, double b)
{
	if (known)
		fprintf(out, "\"%s\":{\"a\":%.17g,\"b\":%.17g,\"change\":%.17g}", key, a, b,
			b - a);
	else
		fprintf(out, "\"%s\":null", key);
}

/* Only when both sides have the server's own figures (--server-metrics), as their reports. */
static void put_server(FILE *out, const struct diff *d)
{
	const struct srv_figures *a = d->side[0].server, *b = d->side[1].server;

	if (!diff__server(d))
		return;
	fputs(",\"server\":{", out);
	put_abc_exact(out, "tokens_per_s", a->has[SP_SRV_GENERATED] && b->has[SP_SRV_GENERATED],
		      a->tokens_per_s, b->tokens_per_s);
	fputc(',', out);
	put_abc_exact(out, "accept_length", a->accept_length > 0 && b->accept_length > 0,
		      a->accept_length, b->accept_length);
	fputc(',', out);
	put_abc_exact(out, "tokens_per_cycle",
		      a->has[SP_SRV_GENERATED] && a->cycles && b->has[SP_SRV_GENERATED] && b->cycles,
		      a->tokens_per_cycle, b->tokens_per_cycle);
	fputc('}', out);
}

static void put_role(FILE *out, const struct diff_role *r)
{
	fprintf(out, "{\"execs\":%zu,\"launched\":%zu,\"uncaptured_launched\":%zu,\"kernels\":[",
		r->execs, r->launched, r->uncaptured);
	for (int i = 0; i < r->nr_kernels; i++)
		fprintf(out, "%s%u", i ? "," : "", r->kernels[i]);
	fprintf(out, "],\"more_kernel_counts\":%s,\"max_collectives\":%u}",
		r->more_kernels ? "true" : "false", r->collectives);
}

static void put_setup_side(FILE *out, const struct diff *d, int s)
{
	const struct diff_setup *st = &d->side[s].setup;
	const struct cycle_summary *sum = &d->side[s].sum;

	fprintf(out, "{\"path\":");
	put_string(out, d->in[s]->path);
	fputs(",\"host\":", out);
	put_string(out, model__view(d->in[s]->model)->host);
	fprintf(out, ",\"processes\":%zu,\"loops\":%zu,\"ranks\":", st->processes, st->loops);
	if (st->ranks >= 0)
		fprintf(out, "%d", st->ranks);
	else
		fputs("null", out);
	fputs(",\"graphs\":{", out);
	for (int r = 0; r < ROLE_NR; r++) {
		fprintf(out, "%s\"%s\":", r ? "," : "", model__role_name(r));
		put_role(out, &st->role[r]);
	}
	fputs("},\"accept_syncs\":{", out);
	for (int k = 0; k < sum->nr_accept_kinds; k++)
		fprintf(out, "\"%s\":%zu,", model__call_name(sum->accept_call[k]),
			sum->accept_count[k]);
	fprintf(out, "\"none\":%zu},\"dropped\":%llu}", sum->no_accept_sync,
		(unsigned long long)model__view(d->in[s]->model)->dropped);
}

static void put_setup(FILE *out, const struct diff *d)
{
	char a[128], b[128];
	const char *name;
	bool first = true;

	fputs(",\"setup\":{\"a\":", out);
	put_setup_side(out, d, 0);
	fputs(",\"b\":", out);
	put_setup_side(out, d, 1);
	fputs(",\"differs\":[", out);
	for (int row = 0; diff__setup_row(d, row, &name, a, b, sizeof(a)); row++) {
		if (!strcmp(a, b))
			continue;
		fprintf(out, "%s\"%s\"", first ? "" : ",", name);
		first = false;
	}
	fputs("]}", out);
}

/* Every recording of both sides; the spread is null with one per side. */
static void put_recordings(FILE *out, const struct diff *d)
{
	fputs(",\"recordings\":{", out);
	for (int s = 0; s < 2; s++) {
		fprintf(out, "%s\"%c\":[", s ? "," : "", s ? 'b' : 'a');
		for (size_t i = 0; i < d->runs[s].nr; i++) {
			fputs(i ? ",{\"path\":" : "{\"path\":", out);
			put_string(out, d->runs[s].in[i].path);
			fprintf(out, ",\"cycles\":%zu,\"p50_ns\":%.1f}", d->runs[s].cycles[i],
				d->runs[s].p50[i]);
		}
		fputc(']', out);
	}
	fputs("},\"between_run_spread_ns\":", out);
	if (d->runs[0].nr > 1 || d->runs[1].nr > 1)
		fprintf(out, "%.1f", d->between_runs);
	else
		fputs("null", out);
}

/* One verdict of every row (docs/diff-json.md, "One verdict"). */
static void put_verdict(FILE *out, const struct diff *d)
{
	const struct diff_verdict *v = &d->verdict;
	static const char *const better[] = { "slower", "same", "faster" };

	fprintf(out, ",\"verdict\":{\"verdict\":\"%s\",\"significant\":%s,\"mixed\":%s,"
		     "\"direction\":\"%s\",\"by\":",
		bootstrap__verdict_name(v->verdict), v->verdict == VERDICT_SIGNIFICANT ? "true"
											: "false",
		v->mixed ? "true" : "false", better[v->better + 1]);
	if (v->verdict == VERDICT_SIGNIFICANT && !v->mixed)
		fprintf(out, "\"%s\"", diff__row_name(v->by));
	else
		fputs("null", out);
	fprintf(out, ",\"noise_floor_rel\":%.4f,\"rows\":{", v->floor_rel);
	for (int r = 0, n = 0; r < DIFF_ROW_NR; r++) {
		const struct diff_row_verdict *row = &v->row[r];

		if (!row->known)
			continue;
		fprintf(out, "%s\"%s\":{\"change_rel\":%.4f,\"verdict\":\"%s\",\"direction\":"
			     "\"%s\",\"interval\":%s}", n++ ? "," : "", diff__row_name(r),
			row->change_rel, bootstrap__verdict_name(row->verdict),
			better[row->better + 1], row->interval ? "true" : "false");
	}
	fputs("}}", out);
}

/* A's and B's figure of one site; null where not known. */
static void put_site_pair(FILE *out, const char *key, const double *v)
{
	fprintf(out, ",\"%s\":{", key);
	for (int k = 0; k < 2; k++) {
		fprintf(out, "%s\"%c\":", k ? "," : "", k ? 'b' : 'a');
		if (v[k] < 0)
			fputs("null", out);
		else
			fprintf(out, "%.1f", v[k]);
	}
	fputc('}', out);
}

/* Flagged syncs by call site, A against B; null where a side's syncs were not classified. */
static void put_sites(FILE *out, const struct diff *d)
{
	if (!d->sites_known) {
		fputs(",\"flagged_sites\":null", out);
		return;
	}
	fputs(",\"flagged_sites\":[", out);
	for (size_t i = 0; i < d->nr_sites; i++) {
		const struct diff_site *s = &d->sites[i];

		fputs(i ? ",{\"call_site\":" : "{\"call_site\":", out);
		put_string(out, s->label);
		fprintf(out, ",\"count\":{\"a\":%zu,\"b\":%zu}", s->count[0], s->count[1]);
		put_site_pair(out, "blocked_ns_per_cycle", s->blocked_ns);
		put_site_pair(out, "gpu_idle_caused_ns_per_cycle", s->gpu_idle_ns);
		fputc('}', out);
	}
	fputc(']', out);
}

void diff__json(FILE *out, const struct diff *d)
{
	fprintf(out, "{\"diff_version\":%d,\"a\":", DIFF_JSON_VERSION);
	put_string(out, d->in[0]->path);
	fputs(",\"b\":", out);
	put_string(out, d->in[1]->path);
	put_recordings(out, d);
	fprintf(out, ",\"bootstrap\":{\"resamples\":%d,\"seed\":%llu,\"level\":%.2f,"
		     "\"noise_min_rel\":%.2f,\"noise_iqr_frac\":%.2f,\"noise_runs_mult\":%d}",
		BOOT_RESAMPLES, (unsigned long long)BOOT_SEED, BOOT_LEVEL, NOISE_MIN_REL,
		NOISE_IQR_FRAC, NOISE_RUNS_MULT);
	fputs(",\"cycle_time\":{", out);
	put_times(out, &d->overall);
	fputc('}', out);
	put_loops(out, d);
	put_phases(out, d);
	put_gpu(out, d);
	put_server(out, d);
	put_verdict(out, d);
	put_sites(out, d);
	put_setup(out, d);
	fputs("}\n", out);
}
