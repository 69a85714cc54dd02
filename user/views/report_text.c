// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The report for a person: tables that fit 100 columns. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "gputime.h"
#include "merge.h"
#include "promtext.h"
#include "report_view.h"

#define FIRST_CYCLES 10
#define SLOWEST_CYCLES 5
#define NAMES_WIDTH 92

static double ms(double ns)
{
	return ns / 1e6;
}

static void put_rank(FILE *out, int rank)
{
	if (rank >= 0)
		fprintf(out, "%-5d", rank);
	else
		fprintf(out, "%-5s", "-");
}

/* Rings, dumps and merges: what the file does not hold, and how its clocks were joined. */
#define MOVED_PID (1u << MERGE_HOST_SHIFT)

static bool moved_pids(const struct model_view *v)
{
	for (size_t i = 0; i < v->nr_procs; i++)
		if (v->procs[i]->tgid >= MOVED_PID)
			return true;
	return false;
}

static void put_flight_notes(FILE *out, const struct model_view *v)
{
	const struct sp_segment_rec *seg = &v->rotated;
	const struct sp_window_rec *w = &v->window;

	if (seg->type && seg->prior_records)
		fprintf(out,
			"  note: bounded recording (--max-size %llu): %llu calls, %llu records, "
			"%llu bytes over %.3f s were rotated out before segment %u\n",
			(unsigned long long)seg->max_bytes, (unsigned long long)seg->prior_calls,
			(unsigned long long)seg->prior_records,
			(unsigned long long)seg->prior_bytes,
			(seg->prior_last_ts - seg->prior_first_ts) / 1e9, seg->index);
	if (w->type)
		fprintf(out,
			"  note: dump %u: pid %u tid %u call %u unreturned %.1f s at +%.3f s; the "
			"dump holds the ring up to %.1f s after\n",
			w->dump, w->tgid, w->tid, w->seq, w->threshold_ns / 1e9,
			w->ts > v->first_ns ? (w->ts - v->first_ns) / 1e9 : 0.0, w->after_ns / 1e9);
	if (v->merged_sources > 1)
		fprintf(out,
			"  note: merged from %u recordings on one clock: aligned within %s%llu ns "
			"as measured; the hosts' realtime (NTP) offsets are not in the files\n",
			v->merged_sources, v->merged_gap_unknown ? "an unmeasured gap plus " : "",
			(unsigned long long)v->merged_gap_ns);
	if (v->merged_sources > 1 && moved_pids(v))
		fprintf(out, "  note: a pid of %u or more is another host's, or another window of "
			"a process, kept apart: its own pid is the pid mod %u\n", MOVED_PID,
			MOVED_PID);
}

/* What reading found missing or damaged (report --json: input): one line, none if sound. */
static void put_input(FILE *out, const struct decode_stats *in)
{
	const struct {
		__u64 n;
		const char *what;
	} said[] = {
		{ in ? in->missing_calls : 0, "calls missing (call numbers skip)" },
		{ in ? in->ring_gap_calls : 0, "calls in missing segments" },
		{ in ? in->unknown_process_calls : 0, "calls of undescribed processes" },
		{ in ? in->unknown_cookie_calls : 0, "calls of unknown probes" },
		{ in ? in->misnumbered_calls : 0, "calls misnumbered" },
		{ in ? in->duplicate_records : 0, "records seen twice" },
		{ in ? in->out_of_order : 0, "records out of order" },
	};
	bool first = true;

	for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++) {
		if (!said[i].n)
			continue;
		fprintf(out, "%s%llu %s", first ? "  input: " : ", ", (unsigned long long)said[i].n,
			said[i].what);
		first = false;
	}
	if (!first)
		fputs("; the figures cover what was read\n", out);
}

/* What the calls were, each count out of the calls. */
static void put_call_kinds(FILE *out, const struct model_view *v, const struct syncs *sy)
{
	if (!v->calls)
		return;
	fprintf(out, "  of the %llu calls: %llu launches, %llu copies and memsets",
		(unsigned long long)v->calls, (unsigned long long)v->launches,
		(unsigned long long)v->copies);
	if (sy)
		fprintf(out, "; %zu syncs", sy->sync_calls);
	fputc('\n', out);
}

/* What the recording holds, after the five lines of report__head. */
static void put_header(FILE *out, const struct model_view *v, const struct syncs *sy)
{
	fprintf(out, "  %llu unreturned, %llu dropped, %llu failed reads%s\n",
		(unsigned long long)v->unreturned, (unsigned long long)v->dropped,
		(unsigned long long)v->failed_reads,
		v->ended_cleanly ? "" : "; the recording did not end cleanly");
	put_call_kinds(out, v, sy);
	if (v->merged_marks && v->merged_sources > 1)
		fprintf(out, "  probes attached in at most %.1f ms per input; every call from each "
			"process's input's attach mark on is recorded\n", ms(v->merged_attach_ns));
	else if (sample__on(&v->sample))
		fprintf(out, "  probes attached in %.1f ms; every call from the attach mark on is "
			"recorded, launches only inside --sample windows\n",
			ms(v->attach_done_ns - v->attach_start_ns));
	else
		fprintf(out, "  probes attached in %.1f ms; every call from the attach mark on is "
			"recorded\n", ms(v->attach_done_ns - v->attach_start_ns));
	put_flight_notes(out, v);
	if (v->dropped)
		fprintf(out,
			"  warning: %llu records were dropped: cycles around them may be wrong\n",
			(unsigned long long)v->dropped);
	if (v->out_of_memory)
		fputs("  warning: out of memory while reading: the report is partial\n", out);
}

/* " (2 bad_value, 1 closed)": the failed scrapes by what failed; nothing when none did. */
static void put_failed_by(FILE *out, const struct srv_figures *f)
{
	const char *sep = " (";

	for (unsigned int st = 0; st <= SP_SRV_STATUS_NR; st++) {
		if (!f->failed_by[st])
			continue;
		fprintf(out, "%s%u %s", sep, f->failed_by[st], promtext__status_name(st));
		sep = ", ";
	}
	if (f->failed)
		fputc(')', out);
}

/* --server-metrics: the user's number first, then what it rests on. */
static void put_server(FILE *out, const struct srv_figures *f)
{
	const char *name = promtext__server_name(f->server);
	double secs = (f->span_end_ns - f->span_start_ns) / 1e9;

	if (!f->have) {
		fprintf(out, "\nServer metrics: %u good scrape(s), %u failed", f->scrapes, f->failed);
		put_failed_by(out, f);
		fputs(": too few to give tokens/s\n", out);
		return;
	}
	fputc('\n', out);
	if (f->has[SP_SRV_GENERATED])
		fprintf(out, "%.1f tok/s, ", f->tokens_per_s);
	else
		fputs("- tok/s, ", out);
	if (f->accept_length)
		fprintf(out, "accept length %.2f (%s%s), ", f->accept_length, name,
			f->accept_from_gauge ? " gauge" : "");
	else
		fputs("accept length - , ", out);
	fprintf(out, "%.1f cycles/s\n", f->cycles_per_s);
	fprintf(out, "  %s's counters over %.1f s between two scrapes: ", name, secs);
	if (f->has[SP_SRV_GENERATED])
		fprintf(out, "%.0f tokens (%.2f per cycle), ", f->delta[SP_SRV_GENERATED],
			f->tokens_per_cycle);
	if (f->has[SP_SRV_DRAFTS])
		fprintf(out, "%.0f drafts (%.2f per cycle), ", f->delta[SP_SRV_DRAFTS],
			f->drafts_per_cycle);
	if (f->accept_rate >= 0)
		fprintf(out, "acceptance rate %.1f %%, ", 100 * f->accept_rate);
	fprintf(out, "%zu cycles traced\n", f->cycles);
	if (f->resets)
		fprintf(out, "  %u counter drop(s): the server restarted; counted from 0 after each, "
			"as Prometheus's rate() does\n", f->resets);
	if (f->failed) {
		fprintf(out, "  %u scrape(s) failed", f->failed);
		put_failed_by(out, f);
		fputs(": left out, the span is between the good ones\n", out);
	}
	if (f->disagree)
		fprintf(out, "  warning: the server counted %.0f drafts but specprobe %zu cycles in "
			"the same %.1f s: one of them is wrong (the server's counter, or cycles "
			"the reconstruction split or missed)\n", f->delta[SP_SRV_DRAFTS], f->cycles,
			secs);
}

/* How each rank was learned: NCCL init traced, or what the process showed at attach. */
static void put_rank_sources(FILE *out, const struct model_view *v)
{
	static const char *const how[] = {
		[RANK_FROM_NCCL_INIT] = "its ncclCommInitRank call, traced",
		[RANK_FROM_NCCL_COMM] = "its communicator",
		[RANK_FROM_ENVIRON] = "its environment",
		[RANK_FROM_TITLE] = "its process title",
		[RANK_FROM_DEVICE] = "the one GPU it has open (a rank per GPU assumed)",
	};

	for (size_t i = 0; i < v->nr_procs; i++) {
		const struct model_proc *p = v->procs[i];

		if (p->rank < 0 || p->rank_from == RANK_FROM_NONE || p->rank_from > RANK_FROM_DEVICE)
			continue;
		fprintf(out, "  pid %u: rank %d from %s", p->tgid, p->rank, how[p->rank_from]);
		if (p->rank_what[0])
			fprintf(out, " (%.*s)", SP_RANK_WHAT - 1, p->rank_what);
		fputc('\n', out);
	}
}

/* The signal that ended a traced process, 0 where it exited or is not known to. */
static int proc_killed_by(const struct model_proc *p)
{
	return p && p->exit_ns && p->exit_status_known ? (int)(p->exit_status & 0x7f) : 0;
}

/* "SEGV" for SIGSEGV; "" for none. */
static const char *signal_abbrev(int sig)
{
	const char *name = sig ? sigabbrev_np(sig) : NULL;

	return name ? name : sig ? "?" : "";
}

static const struct model_proc *view_proc(const struct model_view *v, __u32 tgid)
{
	for (size_t i = 0; i < v->nr_procs; i++)
		if (v->procs[i]->tgid == tgid)
			return v->procs[i];
	return NULL;
}

static void put_processes(FILE *out, const struct model_view *v)
{
	fputs("\nProcesses\n  pid       parent    rank  device  threads  streams  graphs  "
	      "captures  calls       exited\n",
	      out);
	size_t idle = 0;

	for (size_t i = 0; i < v->nr_procs; i++) {
		const struct model_proc *p = v->procs[i];
		char parent[16] = "-", device[16] = "-", exited[32] = "-";

		/* a compile worker maps libcuda and makes no call: one line for them all */
		if (!p->calls && v->nr_procs > 1) {
			idle++;
			continue;
		}
		if (p->parent)
			snprintf(parent, sizeof(parent), "%u", p->parent);
		if (p->device >= 0)
			snprintf(device, sizeof(device), "%d", p->device);
		if (p->exit_ns)
			snprintf(exited, sizeof(exited), "+%.3f s%s%s",
				 (p->exit_ns - v->first_ns) / 1e9, proc_killed_by(p) ? " SIG" : "",
				 signal_abbrev(proc_killed_by(p)));
		fprintf(out, "  %-9u %-9s ", p->tgid, parent);
		put_rank(out, p->rank);
		fprintf(out, " %-7s %-8u %-8u %-7u %-9u %-11llu %s\n", device, p->nr_threads,
			p->nr_streams, p->nr_execs, p->nr_captures, (unsigned long long)p->calls,
			exited);
	}
	if (idle)
		fprintf(out, "  and %zu process%s that made no CUDA call while traced "
			     "(--json: processes[])\n", idle, idle == 1 ? "" : "es");
	put_rank_sources(out, v);
}

static void put_rank_rows(FILE *out, const struct results *res)
{
	const struct cycles *cy = &res->cycles;

	fputs("\nCycles per rank (a cycle starts at its first draft launch; phase means in ms)\n"
	      "  rank  pid       tid       cycles  cycles/s  p50 ms  p90 ms  p99 ms  "
	      "draft  verify accept extend\n",
	      out);
	for (size_t i = 0; i < cy->nr_loops; i++) {
		const struct loop *lp = &cy->loops[i];
		const struct cycle_summary *s = &res->per_loop[i];

		fputs("  ", out);
		put_rank(out, lp->rank);
		fprintf(out, " %-9u %-9u %-7zu ", lp->tgid, lp->tid, s->cycles);
		if (!s->cycles) {
			fprintf(out, "no complete cycle (%u verify launches seen)\n",
				lp->iterations);
			continue;
		}
		fprintf(out, "%-9.1f %-7.3f %-7.3f %-7.3f %-6.3f %-6.3f %-6.3f %.3f\n",
			s->cycles_per_s, ms(s->p50_ns), ms(s->p90_ns), ms(s->p99_ns),
			ms(s->phase[PHASE_DRAFT].span_ns), ms(s->phase[PHASE_VERIFY].span_ns),
			ms(s->phase[PHASE_ACCEPT].span_ns), ms(s->phase[PHASE_EXTEND].span_ns));
	}
}

static void put_accept_kinds(FILE *out, const struct cycle_summary *s)
{
	fputs("  accept sync:", out);
	for (int k = 0; k < s->nr_accept_kinds; k++)
		fprintf(out, "%s %s in %zu cycles", k ? "," : "",
			model__call_name(s->accept_call[k]), s->accept_count[k]);
	if (s->no_accept_sync)
		fprintf(out, "%s none found in %zu cycles", s->nr_accept_kinds ? "," : "",
			s->no_accept_sync);
	fprintf(out, "; it blocks %.3f ms on average", ms(s->accept_wait_ns));
	if (s->deferred)
		fprintf(out,
			"\n  deferred: in %zu cycles the accept sync came in the next iteration",
			s->deferred);
	fputc('\n', out);
}

static void put_notes(FILE *out, const struct cycle_summary *s)
{
	/* with GPU records the split is the GPU's own: the host-only caveat does not hold */
	if (s->draft_joined && !s->gpu_cycles)
		fprintf(out,
			"  note: no sync between draft and verify launches in %zu of %zu cycles:\n"
			"        the host sees their GPU work only together, in the accept sync;\n"
			"        draft and verify spans are launch-call times: no GPU split\n",
			s->draft_joined, s->cycles);
	if (s->extend_joined && !s->gpu_cycles)
		fprintf(out,
			"  note: no sync between extend and the next draft in %zu of %zu cycles:\n"
			"        their GPU work, too, is seen only together\n",
			s->extend_joined, s->extend_joinable);
	if (s->verify_pieces)
		fprintf(out,
			"  note: verify was several graph launches (piecewise) in %zu cycles\n",
			s->verify_pieces);
	if (s->lead_shape_draft)
		fprintf(out,
			"  note: in %zu loop(s) nothing seen tells the first graph after the accept\n"
			"        from a first draft step; read as draft: no extend phase\n",
			s->lead_shape_draft);
	if (s->lead_shape_extend)
		fprintf(out,
			"  note: in %zu loop(s) nothing seen tells the first graph after the accept\n"
			"        from a first draft step; read as extend: one graph or eager\n"
			"        launches follow it\n",
			s->lead_shape_extend);
}

/* Inside a phase's GPU span, the time no work of it ran: the GPU waited for the host. */
static double gpu_wait_ns(double span_ns, double busy_ns)
{
	return span_ns > busy_ns ? span_ns - busy_ns : 0;
}

/* --gpu: the phase table with each phase's GPU busy time (cycles matched whole only). */
static void put_gpu_breakdown(FILE *out, const struct cycle_summary *s)
{
	fputs("  phase    host span ms  blocked in syncs ms  launches  syncs  GPU busy ms  GPU wait ms"
	      "  GPU span ms\n", out);
	for (int p = 0; p < PHASE_NR; p++)
		if (p == PHASE_EXTEND && summary__extend_unresolved(s))
			fputs("  extend   unresolved: read into draft (see the note below)\n", out);
		else
			fprintf(out, "  %-8s %12.3f  %19.3f  %8.2f  %5.2f  %11.3f  %11.3f  %11.3f\n",
			cycles__phase_name(p), ms(s->phase[p].span_ns), ms(s->phase[p].blocked_ns),
			s->phase[p].launches, s->phase[p].syncs, ms(s->phase[p].gpu_busy_ns),
			ms(gpu_wait_ns(s->phase[p].gpu_span_ns, s->phase[p].gpu_busy_ns)),
			ms(s->phase[p].gpu_span_ns));
	fprintf(out, "  %-8s %12.3f  %19.3f  %8.2f  %5.2f  %11.3f  %11.3f  %11.3f\n", "cycle",
		ms(s->total.span_ns), ms(s->total.blocked_ns), s->total.launches, s->total.syncs,
		ms(s->gpu_window_ns - s->gpu_idle_ns), ms(s->gpu_idle_ns), ms(s->gpu_window_ns));
	fprintf(out, "  (GPU: means over %zu cycles whose every launch was matched; %zu not; GPU "
		     "idle %.3f ms a cycle)\n  (GPU span: from when the GPU could start the phase, as "
		     "CUDA events around it read;\n   GPU wait: its span less its busy time, the GPU "
		     "waiting for the host inside the phase)\n",
		s->gpu_cycles, s->gpu_cycles_unmatched, ms(s->gpu_idle_ns));
	fputs("  (accept overlaps the next cycle when its sync is deferred; other: no phase)\n",
	      out);
	put_accept_kinds(out, s);
	put_notes(out, s);
}

/* --gpu: the agents that kept the timeline from being whole, and the matching left over. */
static void put_gpu_gaps(FILE *out, const struct model_view *v, const struct gpu_stats *st)
{
	for (__u32 i = 0; i < st->nr_agents; i++) {
		const struct gpu_agent *a = &st->agents[i];
		int killed;

		if (a->status != SP_GPU_ON && a->status != SP_GPU_OFF)
			fprintf(out, "  GPU agent of pid %u: %s: %s\n", a->tgid,
				report__gpu_status_name(a->status), a->detail);
		killed = proc_killed_by(view_proc(v, a->tgid));
		if (killed && a->was_on)
			fprintf(out, "  GPU agent of pid %u: the process died of SIG%s at +%.3f s with "
				     "the agent in it; its last %llu launches have no GPU records\n",
				a->tgid, signal_abbrev(killed),
				(view_proc(v, a->tgid)->exit_ns - v->first_ns) / 1e9,
				(unsigned long long)a->unmatched_after);
		else if (gpu_agent__stopped(a))
			fprintf(out, "  GPU agent of pid %u: CUPTI's records stopped, its last %llu "
				     "launches have none:\n    another CUPTI client (torch.profiler, "
				     "Nsight) took CUPTI's buffers after the agent began\n",
				a->tgid, (unsigned long long)a->unmatched_after);
		if (a->cupti_dropped || a->ring_dropped)
			fprintf(out, "  GPU agent of pid %u: %llu records dropped by CUPTI, %llu by "
				     "the ring\n", a->tgid, (unsigned long long)a->cupti_dropped,
				(unsigned long long)a->ring_dropped);
	}
	if (st->unmatched_records || st->unmatched_calls)
		fprintf(out, "  GPU matching: %llu executions and %llu calls left unmatched\n",
			(unsigned long long)st->unmatched_records,
			(unsigned long long)st->unmatched_calls);
}

/* --gpu: the answer in GPU time, medians a cycle; where its idle time comes from, as shares. */
static void put_gpu_medians(FILE *out, const struct cycle_summary *s)
{
	double idle = s->gpu_idle_ns, win = s->gpu_window_ns;

	fprintf(out, "\nGPU busy a cycle, p50 ms of %zu: draft %.3f, verify %.3f, accept %.3f, "
		     "extend %.3f; idle %.3f\n", s->gpu_cycles,
		ms(s->phase[PHASE_DRAFT].gpu_busy_p50_ns), ms(s->phase[PHASE_VERIFY].gpu_busy_p50_ns),
		ms(s->phase[PHASE_ACCEPT].gpu_busy_p50_ns), ms(s->phase[PHASE_EXTEND].gpu_busy_p50_ns),
		ms(s->gpu_idle_p50_ns));
	fprintf(out, "  GPU idle: %.1f %% of GPU time; %.0f %% of it caused by flagged syncs (in %zu "
		     "of %zu cycles)\n", win > 0 ? 100 * idle / win : 0.0,
		idle > 0 ? 100 * s->gpu_idle_flagged_ns / idle : 0.0, s->gpu_cycles_flagged,
		s->gpu_cycles);
	if (idle > s->gpu_idle_flagged_ns)
		fputs("  the rest waited on the host: after the loop's own accept sync, or between "
		      "launches\n", out);
	if (s->gpu_cycles_unmatched)
		fprintf(out, "  %zu cycles not in these figures: some launch of theirs was not "
			     "matched to its execution\n", s->gpu_cycles_unmatched);
}

/* --gpu: the answer first, in GPU time, and what kept the timeline from being whole. */
static void put_gpu_lead(FILE *out, const struct model_view *v, const struct cycle_summary *s)
{
	const struct gpu_stats *st = v->gpu ? gputime__stats(v->gpu) : NULL;

	if (!st)
		return;
	if (s->gpu_cycles && s->gpu_window_ns > 0)
		put_gpu_medians(out, s);
	else if (st->records)
		fputs("\nGPU: no cycle had every launch matched to its execution\n", out);
	else
		fputs("\nGPU: no GPU records: host-only\n", out);
	put_gpu_gaps(out, v, st);
}

static void put_breakdown(FILE *out, const struct cycles *cy, const struct cycle_summary *s)
{
	fprintf(out, "\nPhase breakdown: mean per cycle over %zu cycles of %zu loop(s), "
		     "%.1f cycles/s\n",
		s->cycles, cy->nr_loops, s->cycles_per_s);
	fprintf(out, "  cycle time p50 %.3f ms, p90 %.3f ms, p99 %.3f ms (min %.3f, max %.3f)\n",
		ms(s->p50_ns), ms(s->p90_ns), ms(s->p99_ns), ms(s->min_ns), ms(s->max_ns));
	if (s->gpu_cycles) {
		put_gpu_breakdown(out, s);
		return;
	}
	fputs("  phase    host span ms  blocked in syncs ms  launches  syncs\n", out);
	for (int p = 0; p < PHASE_NR; p++)
		if (p == PHASE_EXTEND && summary__extend_unresolved(s))
			fputs("  extend   unresolved: read into draft (see the note below)\n", out);
		else
			fprintf(out, "  %-8s %12.3f  %19.3f  %8.2f  %5.2f\n", cycles__phase_name(p),
				ms(s->phase[p].span_ns), ms(s->phase[p].blocked_ns),
				s->phase[p].launches, s->phase[p].syncs);
	fprintf(out, "  %-8s %12.3f  %19.3f  %8.2f  %5.2f\n", "cycle", ms(s->total.span_ns),
		ms(s->total.blocked_ns), s->total.launches, s->total.syncs);
	fputs("  (accept overlaps the next cycle when its sync is deferred; other: no phase)\n",
	      out);
	put_accept_kinds(out, s);
	put_notes(out, s);
}

/* gpu: the GPU busy and idle columns (--gpu) take the place of the launch and sync counts. */
static void put_cycle_row(FILE *out, const struct cycle *c, __u64 t0, bool gpu)
{
	fprintf(out, "  %-7u %9.3f %8.3f", c->index, ms(c->start_ns - t0),
		ms(c->end_ns - c->start_ns));
	for (int p = 0; p < PHASE_NR; p++)
		fprintf(out, " %7.3f", ms(c->phase[p].span_ns));
	fprintf(out, " %8.3f", ms(c->blocked_ns));
	if (!gpu)
		fprintf(out, " %6u %5u", c->launches, c->syncs);
	else if (c->gpu_known)
		fprintf(out, " %8.3f %8.3f",
			ms(c->gpu_end_ns - c->gpu_start_ns - c->gpu_idle_ns), ms(c->gpu_idle_ns));
	else
		fprintf(out, " %8s %8s", "-", "-");
	fprintf(out, "%s\n", c->draft_joined ? "" : "  synced");
}

/* Slower first; of equal ones, the earlier. */
static bool slower(const struct cycle *x, const struct cycle *y)
{
	__u64 dx = x->end_ns - x->start_ns, dy = y->end_ns - y->start_ns;

	return dx != dy ? dx > dy : x->index < y->index;
}

/* One walk over a loop's cycles: the first rows, the slowest kept, whether any synced. */
struct cycle_walk {
	FILE *out;
	__u64 t0;
	bool gpu;		/* GPU columns */
	size_t shown, seen;
	bool synced;
	struct cycle slowest[SLOWEST_CYCLES];
	size_t nr_slowest;
};

static void keep_slowest(struct cycle_walk *w, const struct cycle *c)
{
	size_t at = w->nr_slowest;

	while (at > 0 && slower(c, &w->slowest[at - 1]))
		at--;
	if (at == SLOWEST_CYCLES)
		return;
	if (w->nr_slowest < SLOWEST_CYCLES)
		w->nr_slowest++;
	memmove(&w->slowest[at + 1], &w->slowest[at],
		(w->nr_slowest - 1 - at) * sizeof(w->slowest[0]));
	w->slowest[at] = *c;
}

static int walk_cycle(void *ctx, const struct cycle *c)
{
	struct cycle_walk *w = ctx;

	if (w->seen++ < w->shown)
		put_cycle_row(w->out, c, w->t0, w->gpu);
	w->synced |= !c->draft_joined;
	keep_slowest(w, c);
	return 0;
}

static void put_cycle_table(FILE *out, const struct loop *lp, __u64 t0, bool all, bool gpu)
{
	struct cycle_walk w = { .out = out, .t0 = t0, .gpu = gpu };

	w.shown = all || lp->nr_cycles <= FIRST_CYCLES + SLOWEST_CYCLES ? lp->nr_cycles
									 : FIRST_CYCLES;
	if (!lp->nr_cycles)
		return;
	fputs("\nCycles of ", out);
	if (lp->rank >= 0)
		fprintf(out, "rank %d, ", lp->rank);
	fprintf(out, "pid %u tid %u: %zu counted, skipped %u at the start and %u at the end (ms)\n",
		lp->tgid, lp->tid, lp->nr_cycles, lp->skipped_start, lp->skipped_end);
	if (lp->skipped_unsampled)
		fprintf(out, "  %u more cut by a --sample window's edge: not counted\n",
			lp->skipped_unsampled);
	if (lp->skipped_no_draft)
		fprintf(out, "  %u verify launches had no draft before them: not cycles\n",
			lp->skipped_no_draft);
	fprintf(out, "  %-7s %9s %8s %7s %7s %7s %7s %7s %8s", "cycle", "start", "total", "draft",
		"verify", "accept", "extend", "other", "blocked");
	if (gpu)
		fprintf(out, " %8s %8s\n", "GPU busy", "GPU idle");
	else
		fprintf(out, " %6s %5s\n", "launch", "sync");
	if (loop__each_cycle(lp, walk_cycle, &w))
		fputs("  (the cycles could not be read back)\n", out);
	if (w.shown < lp->nr_cycles) {
		fprintf(out, "  ... %zu more (--all-cycles, or --json)\n", lp->nr_cycles - w.shown);
		fputs("  slowest:\n", out);
		for (size_t i = 0; i < w.nr_slowest; i++)
			put_cycle_row(out, &w.slowest[i], t0, gpu);
	}
	if (w.synced)
		fputs("  synced: a sync between draft and verify launches shows the draft's "
		      "GPU end\n",
		      out);
}

/* "name x4, name x1 (1 side)" wrapped under an exec row. */
static void put_kernel_names(FILE *out, struct model *m, const struct model_capture *cap)
{
	int col = 6;

	fputs("      ", out);
	for (__u32 i = 0; i < cap->nr_kernels; i++) {
		const struct model_kernel *k = &cap->kernels[i];
		const char *name = model__func_name(m, cap->tgid, k->func);
		char item[192];
		int len;

		if (name)
			len = snprintf(item, sizeof(item), "%s x%u", name, k->count);
		else
			len = snprintf(item, sizeof(item), "0x%llx x%u",
				       (unsigned long long)k->func, k->count);
		if (k->side && len < (int)sizeof(item))
			len += snprintf(item + len, sizeof(item) - len, " (%u side)", k->side);
		if (col > 6 && col + len + 2 > NAMES_WIDTH) {
			fputs(",\n      ", out);
			col = 6;
		} else if (col > 6) {
			fputs(", ", out);
			col += 2;
		}
		fputs(item, out);
		col += len;
	}
	fputc('\n', out);
	for (__u32 i = 0; i < cap->nr_colls; i++)
		fprintf(out, "      %s x%u, %llu bytes\n", model__call_name(cap->colls[i].name),
			cap->colls[i].count, (unsigned long long)cap->colls[i].bytes);
}

static int by_process(const void *a, const void *b)
{
	const struct model_exec *x = *(const struct model_exec *const *)a;
	const struct model_exec *y = *(const struct model_exec *const *)b;

	if (x->tgid != y->tgid)
		return (x->tgid > y->tgid) - (x->tgid < y->tgid);
	return (x->id > y->id) - (x->id < y->id);
}

static void put_graphs(FILE *out, struct model *m, const struct model_view *v)
{
	const struct model_capture *named = NULL;
	size_t captured = 0, launched = 0, eager = 0;
	struct model_exec **order;

	for (size_t i = 0; i < v->nr_execs; i++) {
		captured += v->execs[i]->capture != NULL;
		launched += v->execs[i]->launches && !v->execs[i]->eager;
		eager += v->execs[i]->eager;
	}
	fprintf(out, "\nGraphs: %zu execs, %zu captured while traced, %zu launched\n",
		v->nr_execs - eager, captured, launched);
	if (eager)
		fprintf(out, "  and %zu eager forwards (bursts of eager launches, no graph: "
			     "kernels per burst)\n", eager);
	if (!v->nr_execs)
		return;
	order = malloc(v->nr_execs * sizeof(*order));
	if (!order)
		return;
	memcpy(order, v->execs, v->nr_execs * sizeof(*order));
	qsort(order, v->nr_execs, sizeof(*order), by_process);
	fputs(
	    "  exec            pid      order  tid      role     from              kernels  side  "
	    "nccl  launches\n",
	    out);
	for (size_t i = 0; i < v->nr_execs; i++) {
		const struct model_exec *x = order[i];
		const struct model_capture *cap = x->capture;
		__u32 colls = 0;

		for (__u32 k = 0; cap && k < cap->nr_colls; k++)
			colls += cap->colls[k].count;
		if (x->eager)
			fprintf(out, "  eager-%-9u %-8u ", x->id, x->tgid);
		else
			fprintf(out, "  0x%-13llx %-8u ", (unsigned long long)x->handle, x->tgid);
		if (x->eager)
			fprintf(out, "%-15s ", "eager");
		else if (cap)
			fprintf(out, "%-6u %-8u ", cap->order, cap->tid);
		else
			fprintf(out, "%-15s ", "uncaptured");
		fprintf(out, "%-8s %-17s ", model__role_name(x->role),
			model__role_source_name(x->role_from));
		if (x->eager)
			fprintf(out, "%-8u %-5s %-5s ", x->eager_kernels, "-", "-");
		else if (cap)
			fprintf(out, "%-8u %-5u %-5u ", cap->kernel_count, cap->side_kernel_count,
				colls);
		else
			fprintf(out, "%-8s %-5s %-5s ", "?", "?", "?");
		fprintf(out, "%llu\n", (unsigned long long)x->launches);
		/* names once per run of graphs with the same kernels */
		if (cap && (cap->nr_kernels || cap->nr_colls) && !model__same_kernels(cap, named))
			put_kernel_names(out, m, cap);
		if (cap)
			named = cap;
	}
	free(order);
}

/* What a flagged call does when it does not break the graph overlap. */
static const char *effect_of(const struct sync_site *site)
{
	switch (site->kind) {
	case SYNC_CAPTURE:
		return "fails: capture open";
	case SYNC_LEGACY:
		return "serialises streams";
	case SYNC_UNKNOWN_HOST:
		return "host memory unknown";
	case SYNC_CTX:
	case SYNC_STREAM:
	case SYNC_EVENT:
	case SYNC_POLL:
	case SYNC_PAGEABLE:
		return "waits for the GPU";
	default:
		return "blocks the host";
	}
}

static void stream_name(char *buf, size_t size, __u64 stream)
{
	if (!stream)
		snprintf(buf, size, "-");
	else if (stream == 1)
		snprintf(buf, size, "legacy");
	else if ((stream & 0xffffffff) == 2)
		snprintf(buf, size, "per-thread");
	else
		snprintf(buf, size, "0x%llx", (unsigned long long)stream);
}

/* "4.0 graphs, 1.0 copies": the work in flight, per call, only the kinds there were. */
static void work_text(char *buf, size_t size, const struct sync_site *site)
{
	const double per[] = { site->waited_graphs, site->waited_kernels, site->waited_copies };
	static const char *const names[] = { "graphs", "kernels", "copies" };
	size_t len = 0;

	snprintf(buf, size, "nothing seen");
	for (int i = 0; i < 3 && len < size; i++)
		if (per[i] > 0)
			len += snprintf(buf + len, size - len, "%s%.1f %s", len ? ", " : "",
					per[i] / site->count, names[i]);
}

/* Evidence line: what it did, how long it blocked, what was in flight on what it waited for. */
static void put_evidence(FILE *out, const struct sync_site *site)
{
	char what[48], idle[40] = "", work[64];
	int len;

	if (site->breaks)
		snprintf(what, sizeof(what), "breaks overlap %zux", site->breaks);
	else
		snprintf(what, sizeof(what), "%s", effect_of(site));
	if (site->gpu_known)	/* measured on the GPU: it replaces the bound */
		snprintf(idle, sizeof(idle), ", GPU idle caused %.3f",
			 ms((double)site->gpu_idle_ns / site->gpu_known));
	else if (site->bounded)	/* one figure, told by "<=" as the bound (docs/guide.md) */
		snprintf(idle, sizeof(idle), ", GPU idle caused <=%.3f",
			 ms((double)site->bound_ns / site->bounded));
	work_text(work, sizeof(work), site);
	if (site->kind == SYNC_LEGACY) {	/* a launch: it returns at once, the GPU waits */
		fprintf(out, "    %s; behind %s there\n", what, work);
		return;
	}
	len = fprintf(out, "    %s; blocked %.3f ms%s;", what,
		      ms(site->blocked_ns / (double)site->count), idle);
	/* within 100 columns: what it waited on goes to a line of its own when long */
	fprintf(out, "%swaited on %s\n", len + 11 + strlen(work) > 100 ? "\n      " : " ", work);
}

static void put_site(FILE *out, const struct sync_site *site, size_t cycles)
{
	char stream[24];

	stream_name(stream, sizeof(stream), site->stream);
	fprintf(out, "  %-20s %-12s %-13s %-14s %6zu %6zu %9.3f\n", model__call_name(site->name),
		syncs__pos_name(site->pos), model__sync_kind_name(site->kind), stream, site->count,
		site->cycles_with, cycles ? ms((double)site->blocked_ns / cycles) : 0.0);
	put_evidence(out, site);
}

static void put_site_table(FILE *out, const struct site_table *tab, size_t cycles)
{
	/* a screen: the rest are in the JSON report */
	size_t shown = tab->nr < 8 ? tab->nr : 8;

	fprintf(out, "  %-20s %-12s %-13s %-14s %6s %6s %9s\n", "call", "position", "kind",
		"stream", "count", "cycles", "ms/cycle");
	for (size_t i = 0; i < shown; i++)
		put_site(out, &tab->sites[i], cycles);
	if (shown < tab->nr)
		fprintf(out, "  ... %zu more call sites (--json: syncs[])\n", tab->nr - shown);
}

/*
 * Calls that could have synchronised, apart from the syncs, each count out of its
 * own whole: legacy work out of the launches and copies, the syncs among it out of it.
 */
static void put_could_sync(FILE *out, const struct model_view *v, const struct syncs *sy)
{
	char did[48] = "none did";

	if (sy->legacy_synced)
		snprintf(did, sizeof(did), "%zu did, syncs above", sy->legacy_synced);
	if (sy->legacy_work)
		fprintf(out, "  %zu of %llu launches and copies, on the legacy stream, could "
			     "synchronise: %s\n", sy->legacy_work,
			(unsigned long long)(v->launches + v->copies), did);
	if (sy->legacy_unknown)
		fprintf(out, "  (%zu of the %zu behind streams made before attach: cannot be told, "
			     "syncs above)\n", sy->legacy_unknown, sy->legacy_work);
	if (sy->host_unknown_quiet)
		fprintf(out, "  (%zu of %llu copies: async, host memory of unknown kind, no wait "
			     "shown: not syncs)\n", sy->host_unknown_quiet,
			(unsigned long long)v->copies);
}

static void put_syncs(FILE *out, const struct model_view *v, const struct syncs *sy)
{
	fprintf(out, "\nFlagged syncs: %zu of %zu syncs (calls that blocked, or waited "
		     "implicitly)\n", sy->flagged, sy->sync_calls);
	put_could_sync(out, v, sy);
	if (sy->flagged_sites.nr)
		put_site_table(out, &sy->flagged_sites, sy->cycles);
	else
		fputs("  none\n", out);
	fprintf(out, "  not flagged: %zu accept syncs and result copies, %zu with no wait seen "
		     "(nothing in\n  flight, or back sooner than its return probe costs, %.1f us), %zu outside the "
		     "loop, %zu unknown\n  per call (means): blocked, GPU idle caused (<=: the bound, its "
		     "return to the next\n  launch), what was in flight on what it waited for; "
		     "ms/cycle: blocked per counted cycle\n",
		sy->verdicts_of[VERDICT_ACCEPT], sy->verdicts_of[VERDICT_NO_WAIT],
		sy->trap_ns / 1e3, sy->verdicts_of[VERDICT_OUTSIDE], sy->unknown);
	if (sy->verdicts_of[VERDICT_STEP])
		fprintf(out, "  also not flagged: %zu eager draft steps' reads of their token, the "
			     "loop's own\n", sy->verdicts_of[VERDICT_STEP]);
	if (sy->unknown_sites.nr) {
		fputs("\nUnknown: cannot be told from outside (made before attach), not flagged\n",
		      out);
		put_site_table(out, &sy->unknown_sites, sy->cycles);
	}
}

/* One call site's row; n and ms are the flagged or the other syncs'. */
static void put_callsite_row(FILE *out, const struct cs_site *site, size_t n, __u64 blocked_ns,
			     const char *what)
{
	const char *label = site ? site->label : "?", *tail = report__label_tail(label, 62);

	fprintf(out, "  %6zu %10.3f  %-8s %s%s\n", n, ms((double)blocked_ns), what,
		tail != label ? "..." : "", tail);
}

/*
 * Why a site's syncs are flagged: where in the cycle the host waits (where
 * the loop reads nothing back to decide by), how often and at what cost.
 */
static void put_callsite_why(FILE *out, const struct callsite_stat *cs, size_t cycles)
{
	static const char *const where[SPOS_NR] = {
		[SPOS_DRAFT_VERIFY] = "between draft and verify",
		[SPOS_VERIFY] = "inside a piecewise verify",
		[SPOS_AFTER_VERIFY] = "after verify, before its result's copy",
		[SPOS_ACCEPT] = "in accept, beside the loop's own read",
		[SPOS_EXTEND] = "after the accept, before the next draft",
		[SPOS_OUTSIDE] = "outside the loop",
	};
	double n = cycles ? (double)cycles : 1;

	fprintf(out, "    why: %s; %.1f a cycle, blocked %.3f ms a cycle\n",
		cs->flagged_pos < SPOS_NR && where[cs->flagged_pos] ? where[cs->flagged_pos] : "?",
		cs->flagged / n, ms((double)cs->flagged_ns) / n);
}

/* Most of the syncs that are not flagged first. */
static int by_others(const void *a, const void *b)
{
	const struct callsite_stat *x = *(const struct callsite_stat *const *)a;
	const struct callsite_stat *y = *(const struct callsite_stat *const *)b;
	size_t nx = x->count - x->flagged, ny = y->count - y->flagged;

	if (nx != ny)
		return (nx < ny) - (nx > ny);
	return (x->site > y->site) - (x->site < y->site);
}

/* The sites of syncs not flagged, apart: the loop's own accept sync is not a cost to cut. */
static void put_callsites_others(FILE *out, const struct syncs *sy,
				 const struct callstacks *stacks)
{
	const struct callsite_stat **order = malloc(sy->nr_by_callsite * sizeof(*order));
	size_t nr = 0;

	if (!order)
		return;
	for (size_t i = 0; i < sy->nr_by_callsite; i++)
		if (sy->by_callsite[i].count > sy->by_callsite[i].flagged)
			order[nr++] = &sy->by_callsite[i];
	qsort(order, nr, sizeof(*order), by_others);
	for (size_t i = 0; i < nr && i < 5; i++) {
		const struct callsite_stat *cs = order[i];
		size_t others = cs->count - cs->flagged;

		put_callsite_row(out, callstacks__site(stacks, cs->site), others,
				 cs->blocked_ns - cs->flagged_ns, cs->own == others ? "accept"
						: cs->own ? "accept+" : "other");
	}
	if (nr > 5)
		fprintf(out, "  ... %zu more call sites (--json: call_sites[])\n", nr - 5);
	free(order);
}

/* Syncs by where they were called: the flagged, then the rest; all in the JSON report. */
static void put_callsites(FILE *out, const struct syncs *sy, const struct callstacks *stacks)
{
	size_t shown = 0, flagged_sites = 0;

	if (!sy->nr_by_callsite)
		return;
	fprintf(out, "\nCall sites: %zu of %zu syncs with a stack; flagged, then not\n",
		sy->with_stack, sy->sync_calls);
	fprintf(out, "  %6s %10s  %-8s %s\n", "count", "blocked ms", "verdict", "site");
	for (size_t i = 0; i < sy->nr_by_callsite; i++) {
		const struct callsite_stat *cs = &sy->by_callsite[i];

		if (!cs->flagged)
			continue;
		flagged_sites++;
		if (shown++ >= 5)
			continue;
		put_callsite_row(out, callstacks__site(stacks, cs->site), cs->flagged,
				 cs->flagged_ns, "FLAGGED");
		put_callsite_why(out, cs, sy->cycles);
	}
	if (flagged_sites > 5)
		fprintf(out, "  ... %zu more flagged call sites (--json: call_sites[])\n",
			flagged_sites - 5);
	put_callsites_others(out, sy, stacks);
	fputs("  (FLAGGED: the host waited where the loop reads nothing back to decide by, why: where\n"
	      "  and how much; accept: the loop's own accept syncs and result copies; other: outside\n"
	      "  the loop, or no wait seen; a site of both kinds has a row of each)\n", out);
}

/* The probes' cost in one sentence: a share of the CPU time the traced processes used. */
static void put_overhead_total(FILE *out, double added_ms_per_s, double cpu_ms_per_s)
{
	if (cpu_ms_per_s <= 0) {
		fputs("  the traced processes' CPU time was not sampled: no share to give\n", out);
		return;
	}
	fprintf(out, "  probes cost %.2f %% of the traced processes' CPU time (%.3f of %.1f ms of "
		     "CPU a second)\n",
		100 * added_ms_per_s / cpu_ms_per_s, added_ms_per_s, cpu_ms_per_s);
}

static void put_overhead(FILE *out, const struct model_view *v)
{
	double added = 0, cpu = 0;
	struct overhead o;

	if (!v->calib.calls) {
		fputs("\nSelf-overhead: not measured (the recording has no calibration)\n", out);
		return;
	}
	fprintf(out, "\nSelf-overhead: a probe hit costs %.3f us, a return probe %.3f us more",
		v->calib.entry_ps / 1e6, v->calib.return_ps / 1e6);
	if (v->calib.stack_ps)
		fprintf(out, ", a call site %.3f us more", v->calib.stack_ps / 1e6);
	fputc('\n', out);
	fputs("  pid       entry-only/s  with return/s  probes ms/s  its CPU ms/s  "
	      "probes/its CPU\n", out);
	for (size_t i = 0; i < v->nr_procs; i++) {
		char cpu_s[16] = "?", pct[16] = "?";

		if (syncs__overhead(v, v->procs[i], &o) || !v->procs[i]->calls)
			continue;
		if (o.has_cpu) {
			snprintf(cpu_s, sizeof(cpu_s), "%.1f", o.cpu_ms_per_s);
			snprintf(pct, sizeof(pct), "%.2f %%", o.percent);
			added += o.ms_per_s;
			cpu += o.cpu_ms_per_s;
		}
		fprintf(out, "  %-9u %12.0f  %13.0f  %11.3f  %12s  %14s\n", o.tgid, o.entry_per_s,
			o.return_per_s, o.ms_per_s, cpu_s, pct);
	}
	put_overhead_total(out, added, cpu);
}

void report__text(FILE *out, const struct results *res, const struct report_opts *opts)
{
	struct model *m = res->model;
	const struct cycles *cy = &res->cycles;
	const struct cycle_summary *s = &res->overall;
	struct model_view *v = model__view(m);

	report__head(out, res);
	put_header(out, v, res->syncs_err ? NULL : &res->syncs);
	put_input(out, opts->input);
	report__sample_section(out, res);
	if (res->server)
		put_server(out, res->server);
	put_gpu_lead(out, v, s);
	/* what matters first: the syncs that cost the loop */
	if (!res->syncs_err) {
		put_syncs(out, v, &res->syncs);
		put_callsites(out, &res->syncs, v->stacks);
	} else
		fputs("\nFlagged syncs: out of memory\n", out);
	if (v->nr_procs)
		put_processes(out, v);
	if (!s->cycles) {
		fprintf(out, "\nno cycles found: %s\n",
			cy->nr_loops
			    ? "verify launches were seen, but no complete decode cycle after "
			      "the attach mark"
			    : "no thread launched a graph repeatedly");
		if (cy->nr_loops)
			put_rank_rows(out, res);
	} else {
		put_rank_rows(out, res);
		put_breakdown(out, cy, s);
		for (size_t i = 0; i < cy->nr_loops; i++)
			put_cycle_table(out, &cy->loops[i], v->first_ns, opts->all_cycles,
					s->gpu_cycles > 0);
	}
	put_graphs(out, m, v);
	put_overhead(out, v);
}

int report__print(FILE *out, const struct results *res, const struct report_opts *opts)
{
	if (opts->json)
		report__json(out, res, opts->input);
	else
		report__text(out, res, opts);
	return fflush(out) || ferror(out) ? -EIO : 0;
}
