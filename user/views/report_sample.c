// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * --sample: what the windows saw, said wherever figures come from them
 * (docs/sampling.md). Cycles and launches are the windows'; syncs are the
 * whole run's; per-cycle sync costs divide by the cycles scaled to the run.
 */
#include <stdint.h>
#include "report_view.h"

void report__sample_figures(const struct results *res, struct sample_figures *f)
{
	const struct model_view *v = model__view(res->model);

	sample__figures(&v->sample, v->first_ns, v->last_ns, f);
	if (!f->on)
		return;
	for (size_t i = 0; i < res->cycles.nr_loops; i++) {
		f->cycles_whole += res->cycles.loops[i].nr_cycles;
		f->cycles_cut += res->cycles.loops[i].skipped_unsampled;
	}
	f->cycles_scaled = res->syncs_err ? f->cycles_whole : res->syncs.cycles;
}

void report__sample_line(FILE *out, const struct results *res)
{
	const struct model_view *v = model__view(res->model);
	struct sample_figures f;

	report__sample_figures(res, &f);
	if (!f.on)
		return;
	fprintf(out, "  sampled: launches seen %.1f %% of the time (%u ms of every %u ms, %zu "
		     "windows); cycles from them, syncs from all of it; per cycle: over ~%zu "
		     "cycles, scaled\n", 100 * f.seen_share, v->sample.on_ms, v->sample.every_ms,
		f.windows, f.cycles_scaled);
}

void report__sample_section(FILE *out, const struct results *res)
{
	const struct model_view *v = model__view(res->model);
	const struct sample_windows *s = &v->sample;
	const struct syncs *sy = &res->syncs;
	struct sample_figures f;

	report__sample_figures(res, &f);
	if (!f.on)
		return;
	fprintf(out, "\nSampled (--sample %ums/%ums): launch probes in %zu windows, %.1f %% of "
		     "%.3f s; every other probe all the time\n", s->on_ms, s->every_ms, f.windows,
		100 * f.seen_share, (v->last_ns - v->first_ns) / 1e9);
	fprintf(out, "  putting %u launch probes in took %.3f ms a window (worst %.3f), taking "
		     "them out %.3f ms (worst %.3f)\n", s->probes, f.attach_mean_ns / 1e6,
		s->attach_max_ns / 1e6, f.detach_mean_ns / 1e6, s->detach_max_ns / 1e6);
	fprintf(out, "  cycles: %zu whole inside windows (the figures below), %zu cut by a "
		     "window's edge; ~%zu over the run, scaled\n", f.cycles_whole, f.cycles_cut,
		f.cycles_scaled);
	fputs("  launches and graphs' counts: the windows' only\n", out);
	if (res->syncs_err)
		return;
	fprintf(out, "  syncs: all %zu seen; %zu outside whole cycles judged as their call site "
		     "was inside them (%zu flagged), %zu whose site no window saw\n",
		sy->sync_calls, sy->by_site, sy->flagged_by_site, sy->verdicts_of[VERDICT_UNSEEN]);
}

void report__sample_json(FILE *out, const struct results *res)
{
	const struct model_view *v = model__view(res->model);
	const struct sample_windows *s = &v->sample;
	struct sample_figures f;

	report__sample_figures(res, &f);
	if (!f.on) {
		fputs(",\"sampling\":null", out);
		return;
	}
	fprintf(out, ",\"sampling\":{\"on_ms\":%u,\"every_ms\":%u,\"windows\":%zu,"
		     "\"seen_share\":%.6f,\"launch_probes\":%u,\"attach_ns_mean\":%llu,"
		     "\"attach_ns_max\":%llu,\"detach_ns_mean\":%llu,\"detach_ns_max\":%llu,"
		     "\"cycles_whole\":%zu,\"cycles_cut\":%zu,\"cycles_scaled\":%zu,",
		s->on_ms, s->every_ms, f.windows, f.seen_share, s->probes,
		(unsigned long long)f.attach_mean_ns, (unsigned long long)s->attach_max_ns,
		(unsigned long long)f.detach_mean_ns, (unsigned long long)s->detach_max_ns,
		f.cycles_whole, f.cycles_cut, f.cycles_scaled);
	if (!res->syncs_err)
		fprintf(out, "\"syncs_by_site\":%zu,\"flagged_by_site\":%zu,\"syncs_unseen_site\":%zu,",
			res->syncs.by_site, res->syncs.flagged_by_site,
			res->syncs.verdicts_of[VERDICT_UNSEEN]);
	fputs("\"spans\":[", out);
	for (size_t i = 0; i < s->nr; i++)
		fprintf(out, "%s[%llu,%llu]", i ? "," : "", (unsigned long long)s->w[i].open_ns,
			(unsigned long long)(s->w[i].close_ns == UINT64_MAX ? v->last_ns
									     : s->w[i].close_ns));
	fputs("],", out);
	/* which figures are read from the windows, and which are scaled from them */
	fputs("\"from_windows\":[\"cycles\",\"summary\",\"loops\",\"graphs.launches\","
	      "\"recording.launches\"],\"scaled\":[\"syncs.cycles\",\"syncs.flagged_sites.blocked_ns_per_cycle\","
	      "\"syncs.unknown_sites.blocked_ns_per_cycle\"]}", out);
}
