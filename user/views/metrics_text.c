// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* top's totals as Prometheus text: HELP and TYPE first, then each series of the family. */
#include <errno.h>
#include <stdio.h>
#include "catalog.h"
#include "cycles.h"
#include "metrics_view.h"
#include "model.h"
#include "promtext.h"
#include "syncs.h"

#define NS 1e9

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* --sample: a family whose values come from the windows only says so in its HELP. */
static void family_sampled(FILE *out, const struct top_totals *t, const char *name,
			   const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s%s\n# TYPE %s %s\n", name, help,
		t->sample.on ? " Sampled (--sample): only what its windows saw; a rate is over their time." : "", name,
		type);
}

/* A label value with its backslashes, quotes and newlines escaped. */
static void put_value(FILE *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', out);
		if (*v == '\n') {
			fputs("\\n", out);
			continue;
		}
		fputc(*v, out);
	}
}

static void put_label(FILE *out, const char *name, const char *value)
{
	fprintf(out, ",%s=\"", name);
	put_value(out, value);
	fputc('"', out);
}

/* pid and rank, the labels every per-process series starts with; rank empty when unknown. */
static void put_who(FILE *out, __u32 tgid, int rank)
{
	if (rank >= 0)
		fprintf(out, "{pid=\"%u\",rank=\"%d\"", tgid, rank);
	else
		fprintf(out, "{pid=\"%u\",rank=\"\"", tgid);
}

static void put_loop(FILE *out, const char *name, const struct top_loop_total *l)
{
	fputs(name, out);
	put_who(out, l->tgid, l->rank);
	fprintf(out, ",tid=\"%u\"", l->tid);
}

static void loops_counters(FILE *out, const struct top_totals *t)
{
	family_sampled(out, t, "specprobe_cycles_total", "counter",
	       "Decode-loop cycles completed, per process, rank and launching thread.");
	for (size_t i = 0; i < t->nr_loops; i++) {
		put_loop(out, "specprobe_cycles_total", &t->loops[i]);
		fprintf(out, "} %llu\n", (unsigned long long)t->loops[i].cycles);
	}
	family_sampled(out, t, "specprobe_cycles_per_second", "gauge",
	       "Cycles per second over the cycles that ended in the last window.");
	for (size_t i = 0; i < t->nr_loops; i++) {
		put_loop(out, "specprobe_cycles_per_second", &t->loops[i]);
		fprintf(out, "} %.6g\n", t->loops[i].cycles_per_s);
	}
	family_sampled(out, t, "specprobe_phase_seconds_total", "counter",
	       "Host time in each phase of the cycles (draft, verify, accept, extend, other).");
	for (size_t i = 0; i < t->nr_loops; i++)
		for (int p = 0; p < PHASE_NR; p++) {
			put_loop(out, "specprobe_phase_seconds_total", &t->loops[i]);
			put_label(out, "phase", cycles__phase_name(p));
			fprintf(out, "} %.9f\n", t->loops[i].phase_ns[p] / NS);
		}
	family_sampled(out, t, "specprobe_blocked_seconds_total", "counter",
	       "Host time the loop's thread spent blocked in synchronising calls within cycles.");
	for (size_t i = 0; i < t->nr_loops; i++) {
		put_loop(out, "specprobe_blocked_seconds_total", &t->loops[i]);
		fprintf(out, "} %.9f\n", t->loops[i].blocked_ns / NS);
	}
}

/* --gpu: only when some cycle had GPU figures, so that host-only output stays as it was. */
static void gpu_counters(FILE *out, const struct top_totals *t)
{
	bool any = false;

	for (size_t i = 0; i < t->nr_loops; i++)
		any |= t->loops[i].gpu_cycles > 0;
	if (!any)
		return;
	family_sampled(out, t, "specprobe_gpu_cycles_total", "counter",
	       "Cycles with GPU figures (--gpu): every launch matched to its execution.");
	for (size_t i = 0; i < t->nr_loops; i++) {
		put_loop(out, "specprobe_gpu_cycles_total", &t->loops[i]);
		fprintf(out, "} %llu\n", (unsigned long long)t->loops[i].gpu_cycles);
	}
	family_sampled(out, t, "specprobe_gpu_phase_seconds_total", "counter",
	       "GPU busy time of each phase's executions, over the cycles with GPU figures.");
	for (size_t i = 0; i < t->nr_loops; i++)
		for (int p = 0; p < PHASE_NR; p++) {
			put_loop(out, "specprobe_gpu_phase_seconds_total", &t->loops[i]);
			put_label(out, "phase", cycles__phase_name(p));
			fprintf(out, "} %.9f\n", t->loops[i].gpu_phase_ns[p] / NS);
		}
	family_sampled(out, t, "specprobe_gpu_idle_seconds_total", "counter",
	       "Time the process's GPU ran none of its executions within the cycles' GPU windows.");
	for (size_t i = 0; i < t->nr_loops; i++) {
		put_loop(out, "specprobe_gpu_idle_seconds_total", &t->loops[i]);
		fprintf(out, "} %.9f\n", t->loops[i].gpu_idle_ns / NS);
	}
}

/* The server's own counters (--server-metrics) under its process's pid and rank. */
static void put_server(FILE *out, const char *name, const struct top_server_total *s)
{
	fputs(name, out);
	put_who(out, s->tgid, s->rank);
	put_label(out, "server", s->server ? promtext__server_name(s->server) : "");
	fputs("} ", out);
}

static const struct {
	int family;
	const char *name, *help;
} server_counters[] = {
	{ SP_SRV_GENERATED, "specprobe_server_generated_tokens_total",
	  "The server's generated tokens since specprobe's first scrape (restarts counted from 0)." },
	{ SP_SRV_DRAFTS, "specprobe_server_drafts_total",
	  "The server's verified drafts since specprobe's first scrape (vLLM: one per request "
	  "and step)." },
	{ SP_SRV_DRAFT_TOKENS, "specprobe_server_draft_tokens_total",
	  "The server's proposed draft tokens since specprobe's first scrape." },
	{ SP_SRV_ACCEPTED, "specprobe_server_accepted_tokens_total",
	  "The server's accepted draft tokens since specprobe's first scrape (bonus token not "
	  "counted)." },
};

/* Only with --server-metrics, so that output without it stays as it was. */
static void server_figures(FILE *out, const struct top_server_total *s)
{
	if (!s->any)
		return;
	family(out, "specprobe_server_scrapes_total", "counter",
	       "Scrapes of --server-metrics that held a known family.");
	put_server(out, "specprobe_server_scrapes_total", s);
	fprintf(out, "%u\n", s->scrapes);
	family(out, "specprobe_server_scrape_failures_total", "counter",
	       "Scrapes of --server-metrics that failed (down, slow, not the text format, too big).");
	put_server(out, "specprobe_server_scrape_failures_total", s);
	fprintf(out, "%u\n", s->failed);
	for (size_t i = 0; i < sizeof(server_counters) / sizeof(server_counters[0]); i++) {
		if (!s->has[server_counters[i].family])
			continue;
		family(out, server_counters[i].name, "counter", server_counters[i].help);
		put_server(out, server_counters[i].name, s);
		fprintf(out, "%.17g\n", s->total[server_counters[i].family]);
	}
	if (s->recent && s->tokens_per_s >= 0) {
		family(out, "specprobe_server_tokens_per_second", "gauge",
		       "The server's generated tokens per second between its last two scrapes.");
		put_server(out, "specprobe_server_tokens_per_second", s);
		fprintf(out, "%.17g\n", s->tokens_per_s);
	}
	if (s->recent && s->accept_length > 0) {
		family(out, "specprobe_server_accept_length", "gauge",
		       "Mean accept length (bonus token counted) between the server's last two "
		       "scrapes: 1 + accepted / drafts, or SGLang's gauge.");
		put_server(out, "specprobe_server_accept_length", s);
		fprintf(out, "%.17g\n", s->accept_length);
	}
}

static void cycle_histogram(FILE *out, const struct top_totals *t)
{
	family_sampled(out, t, "specprobe_cycle_seconds", "histogram",
	       "Cycle time, first draft launch to the next cycle's.");
	for (size_t i = 0; i < t->nr_loops; i++) {
		const struct top_loop_total *l = &t->loops[i];

		for (int b = 0; b < TOP_CYCLE_BUCKETS; b++) {
			put_loop(out, "specprobe_cycle_seconds_bucket", l);
			fprintf(out, ",le=\"%g\"} %llu\n", top_cycle_bucket_s[b],
				(unsigned long long)l->bucket[b]);
		}
		put_loop(out, "specprobe_cycle_seconds_bucket", l);
		fprintf(out, ",le=\"+Inf\"} %llu\n", (unsigned long long)l->cycles);
		put_loop(out, "specprobe_cycle_seconds_sum", l);
		fprintf(out, "} %.9f\n", l->cycle_ns / NS);
		put_loop(out, "specprobe_cycle_seconds_count", l);
		fprintf(out, "} %llu\n", (unsigned long long)l->cycles);
	}
}

static void put_site(FILE *out, const char *name, const struct top_site_total *s)
{
	fputs(name, out);
	put_who(out, s->tgid, s->rank);
	put_label(out, "entry", model__call_name(s->name));
	put_label(out, "kind", model__sync_kind_name(s->kind));
	put_label(out, "position", syncs__pos_name(s->pos));
	fputs("} ", out);
}

static void flagged_syncs(FILE *out, const struct top_totals *t)
{
	family(out, "specprobe_flagged_syncs_total", "counter",
	       "Synchronising calls flagged as stalling the pipeline, by entry point, sync kind "
	       "and position in the cycle (report's verdicts).");
	for (size_t i = 0; i < t->nr_sites; i++) {
		put_site(out, "specprobe_flagged_syncs_total", &t->sites[i]);
		fprintf(out, "%llu\n", (unsigned long long)t->sites[i].count);
	}
	family(out, "specprobe_flagged_sync_blocked_seconds_total", "counter",
	       "Time the flagged synchronising calls blocked.");
	for (size_t i = 0; i < t->nr_sites; i++) {
		put_site(out, "specprobe_flagged_sync_blocked_seconds_total", &t->sites[i]);
		fprintf(out, "%.9f\n", t->sites[i].blocked_ns / NS);
	}
	family(out, "specprobe_flagged_syncs_untracked_total", "counter",
	       "Flagged syncs of call sites past the table, counted in no series above.");
	fprintf(out, "specprobe_flagged_syncs_untracked_total %llu\n",
		(unsigned long long)t->sites_lost);
}

static void calls(FILE *out, const struct top_totals *t)
{
	family(out, "specprobe_calls_total", "counter",
	       t->sample.on ? "Calls of each probed entry point (base name), nested calls "
			      "included. Sampled (--sample): launches only what its windows saw, "
			      "every other call all the time."
			    : "Calls of each probed entry point (base name), nested calls included.");
	for (size_t i = 0; i < t->nr_procs; i++)
		for (int c = 0; c < catalog_len; c++) {
			if (!t->procs[i].calls[c])
				continue;
			fputs("specprobe_calls_total", out);
			put_who(out, t->procs[i].tgid, t->procs[i].rank);
			put_label(out, "entry", catalog[c].name);
			fprintf(out, "} %llu\n", (unsigned long long)t->procs[i].calls[c]);
		}
	family(out, "specprobe_calls_untracked_total", "counter",
	       "Calls of processes past the table, counted in no series above.");
	fprintf(out, "specprobe_calls_untracked_total %llu\n", (unsigned long long)t->calls_lost);
	family(out, "specprobe_probe_overhead_ratio", "gauge",
	       "The probes' calibrated cost over the CPU time the process used.");
	for (size_t i = 0; i < t->nr_procs; i++) {
		if (t->procs[i].overhead_ratio < 0)
			continue;
		fputs("specprobe_probe_overhead_ratio", out);
		put_who(out, t->procs[i].tgid, t->procs[i].rank);
		fprintf(out, "} %.6g\n", t->procs[i].overhead_ratio);
	}
}

static void tracer(FILE *out, const struct metrics_input *in)
{
	const struct top_totals *t = in->totals;

	family(out, "specprobe_build_info", "gauge", "The specprobe version serving this.");
	fprintf(out, "specprobe_build_info{version=\"%s\"} 1\n", in->version);
	family(out, "specprobe_tracing", "gauge", "1 while tracing; 0 once the trace has ended.");
	fprintf(out, "specprobe_tracing %d\n", in->tracing);
	family(out, "specprobe_tracer_cpu_seconds_total", "counter",
	       "CPU time (user and system) specprobe itself used.");
	fprintf(out, "specprobe_tracer_cpu_seconds_total %.6f\n", in->tracer_cpu_s);
	family(out, "specprobe_probes_attached", "gauge", "Probes attached to entry points.");
	fprintf(out, "specprobe_probes_attached %d\n", t ? t->probes : 0);
	family(out, "specprobe_records_total", "counter", "Records read from the ring buffer.");
	fprintf(out, "specprobe_records_total %llu\n", t ? (unsigned long long)t->records : 0ull);
	family(out, "specprobe_dropped_records_total", "counter",
	       "Records lost because the ring buffer was full, by what was lost.");
	fprintf(out, "specprobe_dropped_records_total{record=\"call\"} %llu\n",
		t ? (unsigned long long)t->drops_call : 0ull);
	fprintf(out, "specprobe_dropped_records_total{record=\"return\"} %llu\n",
		t ? (unsigned long long)t->drops_return : 0ull);
}

/* --sample only, so that output without it stays as it was. */
static void sampling(FILE *out, const struct top_totals *t)
{
	const struct sample_figures *s = &t->sample;

	if (!s->on)
		return;
	family(out, "specprobe_sample_on_seconds", "gauge",
	       "--sample: how long each window keeps the launch probes in.");
	fprintf(out, "specprobe_sample_on_seconds %.3f\n", s->on_ms / 1e3);
	family(out, "specprobe_sample_every_seconds", "gauge",
	       "--sample: a window opens this often.");
	fprintf(out, "specprobe_sample_every_seconds %.3f\n", s->every_ms / 1e3);
	family(out, "specprobe_sample_seen_ratio", "gauge",
	       "--sample: share of the time traced that launch probes were in.");
	fprintf(out, "specprobe_sample_seen_ratio %.6f\n", s->seen_share);
	family(out, "specprobe_sample_windows_total", "counter", "--sample: windows opened.");
	fprintf(out, "specprobe_sample_windows_total %zu\n", s->windows);
	family(out, "specprobe_sample_whole_cycles_total", "counter",
	       "--sample: cycles counted, each whole inside one window (the cycle families' "
	       "sum).");
	fprintf(out, "specprobe_sample_whole_cycles_total %zu\n", s->cycles_whole);
}

int metrics__render(FILE *out, const struct metrics_input *in)
{
	tracer(out, in);
	if (in->totals) {
		sampling(out, in->totals);
		loops_counters(out, in->totals);
		gpu_counters(out, in->totals);
		server_figures(out, &in->totals->server);
		cycle_histogram(out, in->totals);
		flagged_syncs(out, in->totals);
		calls(out, in->totals);
	}
	return ferror(out) ? -EIO : 0;
}
