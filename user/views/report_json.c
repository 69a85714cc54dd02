// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The report as one JSON document; the schema is docs/report-json.md. */
#include <string.h>
#include "gputime.h"
#include "json.h"
#include "promtext.h"
#include "report_view.h"

static void put_int_or_null(FILE *out, const char *key, long long v, bool known)
{
	if (known)
		fprintf(out, "\"%s\":%lld", key, v);
	else
		fprintf(out, "\"%s\":null", key);
}

static void put_handle(FILE *out, const char *key, __u64 h, bool known)
{
	if (known)
		fprintf(out, "\"%s\":\"0x%llx\"", key, (unsigned long long)h);
	else
		fprintf(out, "\"%s\":null", key);
}

static void put_string(FILE *out, const char *s)
{
	json__string(out, s, strlen(s));
}

/* Only in bounded recordings, dumps and merges, so other reports stay as they were. */
static void put_flight(FILE *out, const struct model_view *v)
{
	const struct sp_segment_rec *g = &v->rotated;
	const struct sp_window_rec *w = &v->window;

	if (g->type && g->prior_records)
		fprintf(out, ",\"rotated_out\":{\"before_segment\":%u,\"calls\":%llu,"
			"\"records\":%llu,\"bytes\":%llu,\"first_ns\":%llu,\"last_ns\":%llu,"
			"\"max_size\":%llu}", g->index, (unsigned long long)g->prior_calls,
			(unsigned long long)g->prior_records, (unsigned long long)g->prior_bytes,
			(unsigned long long)g->prior_first_ts, (unsigned long long)g->prior_last_ts,
			(unsigned long long)g->max_bytes);
	if (w->type)
		fprintf(out, ",\"dump\":{\"number\":%u,\"reason\":\"hung\",\"pid\":%u,"
			"\"tid\":%u,\"seq\":%u,\"entry_ns\":%llu,\"trigger_ns\":%llu,"
			"\"threshold_ns\":%llu,\"after_ns\":%llu}", w->dump, w->tgid, w->tid, w->seq,
			(unsigned long long)w->entry_ts, (unsigned long long)w->ts,
			(unsigned long long)w->threshold_ns, (unsigned long long)w->after_ns);
	if (v->merged_sources > 1)
		fprintf(out, ",\"merged\":{\"sources\":%u,\"aligned_within_ns\":%llu,"
			"\"all_gaps_measured\":%s}", v->merged_sources,
			(unsigned long long)v->merged_gap_ns,
			v->merged_gap_unknown ? "false" : "true");
}

static void put_recording(FILE *out, const struct model_view *v)
{
	fputs("\"recording\":{\"host\":", out);
	put_string(out, v->host);
	fputs(",\"kernel\":", out);
	put_string(out, v->kernel);
	fprintf(out, ",\"attach_start_ns\":%llu,\"attach_done_ns\":%llu,",
		(unsigned long long)v->attach_start_ns, (unsigned long long)v->attach_done_ns);
	put_int_or_null(out, "first_ns", v->first_ns, v->calls);
	fputc(',', out);
	put_int_or_null(out, "last_ns", v->last_ns, v->calls);
	fprintf(out, ",\"calls\":%llu,\"launches\":%llu,\"copies\":%llu,\"unreturned\":%llu,"
		     "\"dropped\":%llu,\"failed_reads\":%llu,\"ended_cleanly\":%s,\"partial\":%s",
		(unsigned long long)v->calls, (unsigned long long)v->launches,
		(unsigned long long)v->copies, (unsigned long long)v->unreturned,
		(unsigned long long)v->dropped, (unsigned long long)v->failed_reads,
		v->ended_cleanly ? "true" : "false", v->out_of_memory ? "true" : "false");
	put_flight(out, v);
	fputc('}', out);
}

static void put_process(FILE *out, const struct model_proc *p)
{
	fprintf(out, "{\"pid\":%u,", p->tgid);
	put_int_or_null(out, "parent", p->parent, p->parent);
	fputc(',', out);
	put_int_or_null(out, "rank", p->rank, p->rank >= 0);
	fputc(',', out);
	put_int_or_null(out, "nranks", p->nranks, p->nranks >= 0);
	fputs(",\"rank_from\":", out);
	if (rank_from__name(p->rank_from))
		put_string(out, rank_from__name(p->rank_from));
	else
		fputs("null", out);
	fputs(",\"rank_shown\":", out);
	if (p->rank_what[0])
		put_string(out, p->rank_what);
	else
		fputs("null", out);
	fputc(',', out);
	put_int_or_null(out, "device", p->device, p->device >= 0);
	fprintf(out,
		",\"threads\":%u,\"streams_created\":%u,\"events_created\":%u,"
		"\"captures\":%u,\"execs\":%u,\"calls\":%llu,\"first_ns\":%llu,\"last_ns\":%llu,",
		p->nr_threads, p->nr_streams, p->nr_events, p->nr_captures, p->nr_execs,
		(unsigned long long)p->calls, (unsigned long long)p->first_ns,
		(unsigned long long)p->last_ns);
	put_int_or_null(out, "exit_ns", p->exit_ns, p->exit_ns);
	fputc(',', out);
	/* the signal that ended it; 0: exited, null: not known (older recording, alive) */
	put_int_or_null(out, "exit_signal", p->exit_status & 0x7f,
			p->exit_ns && p->exit_status_known);
	fputc('}', out);
}

static void put_kernels(FILE *out, struct model *m, const struct model_capture *cap)
{
	fputs(",\"kernel_names\":[", out);
	for (__u32 i = 0; cap && i < cap->nr_kernels; i++) {
		const struct model_kernel *k = &cap->kernels[i];
		const char *name = model__func_name(m, cap->tgid, k->func);

		fprintf(out, "%s{\"name\":", i ? "," : "");
		if (name)
			put_string(out, name);
		else
			fputs("null", out);
		fprintf(out, ",\"func\":\"0x%llx\",\"count\":%u,\"side\":%u}",
			(unsigned long long)k->func, k->count, k->side);
	}
	fputs("],\"collectives\":[", out);
	for (__u32 i = 0; cap && i < cap->nr_colls; i++)
		fprintf(out, "%s{\"name\":\"%s\",\"count\":%u,\"bytes\":%llu}", i ? "," : "",
			model__call_name(cap->colls[i].name), cap->colls[i].count,
			(unsigned long long)cap->colls[i].bytes);
	fputc(']', out);
}

static void put_capture(FILE *out, struct model *m, const struct model_capture *cap)
{
	__u64 coll_count = 0, coll_bytes = 0;

	put_int_or_null(out, "capture_order", cap ? cap->order : 0, cap);
	fputc(',', out);
	put_int_or_null(out, "capture_tid", cap ? cap->tid : 0, cap);
	fputc(',', out);
	put_handle(out, "capture_stream", cap ? cap->stream : 0, cap);
	fputc(',', out);
	put_int_or_null(out, "capture_begin_ns", cap ? cap->begin_ns : 0, cap);
	fputc(',', out);
	put_int_or_null(out, "capture_end_ns", cap ? cap->end_ns : 0, cap);
	fputs(",\"side_streams\":[", out);
	for (__u32 i = 0; cap && i < cap->nr_side; i++)
		fprintf(out, "%s\"0x%llx\"", i ? "," : "",
			(unsigned long long)cap->side_streams[i]);
	fputs("],", out);
	put_int_or_null(out, "kernels", cap ? cap->kernel_count : 0, cap);
	fputc(',', out);
	put_int_or_null(out, "side_kernels", cap ? cap->side_kernel_count : 0, cap);
	for (__u32 i = 0; cap && i < cap->nr_colls; i++) {
		coll_count += cap->colls[i].count;
		coll_bytes += cap->colls[i].bytes;
	}
	fputc(',', out);
	put_int_or_null(out, "collective_count", coll_count, cap);
	fputc(',', out);
	put_int_or_null(out, "collective_bytes", coll_bytes, cap);
	fputc(',', out);
	put_int_or_null(out, "copies", cap ? cap->copies : 0, cap);
	fputc(',', out);
	put_int_or_null(out, "host_funcs", cap ? cap->host_funcs : 0, cap);
	put_kernels(out, m, cap);
}

static void put_graph(FILE *out, struct model *m, const struct model_exec *x)
{
	fprintf(out, "{\"pid\":%u,\"exec\":\"0x%llx\",", x->tgid, (unsigned long long)x->handle);
	put_handle(out, "graph", x->graph, x->graph);
	fprintf(out, ",\"captured\":%s,\"instantiated\":%s,\"destroyed\":%s,",
		x->capture ? "true" : "false", x->instantiated ? "true" : "false",
		x->destroyed ? "true" : "false");
	put_capture(out, m, x->capture);
	fprintf(out, ",\"launches\":%llu,", (unsigned long long)x->launches);
	put_int_or_null(out, "launch_tid", x->launch_tid, x->launches);
	fprintf(out, ",\"role\":\"%s\",\"role_from\":\"%s\",\"eager\":%s,",
		model__role_name(x->role), model__role_source_name(x->role_from),
		x->eager ? "true" : "false");
	put_int_or_null(out, "eager_launches", x->eager_kernels, x->eager);
	fputc('}', out);
}

static void put_phase_means(FILE *out, const struct cycle_summary *s)
{
	fputs("\"phases\":{", out);
	for (int p = 0; p < PHASE_NR; p++)
		fprintf(out,
			"%s\"%s\":{\"span_ns\":%.1f,\"blocked_ns\":%.1f,\"launches\":%.3f,"
			"\"syncs\":%.3f}",
			p ? "," : "", cycles__phase_name(p), s->phase[p].span_ns,
			s->phase[p].blocked_ns, s->phase[p].launches, s->phase[p].syncs);
	fputc('}', out);
}

/* --gpu: means over the cycles whose every launch was matched (docs/gpu-timeline.md). */
static void put_summary_gpu(FILE *out, const struct cycle_summary *s)
{
	if (!s->gpu_cycles && !s->gpu_cycles_unmatched) {
		fputs(",\"gpu\":null", out);
		return;
	}
	fprintf(out, ",\"gpu\":{\"cycles\":%zu,\"cycles_unmatched\":%zu,\"window_ns\":%.1f,"
		     "\"idle_ns\":%.1f,\"idle_after_flagged_ns\":%.1f,\"flagged_syncs\":%.3f,"
		     "\"window_ns_p50\":%llu,\"idle_ns_p50\":%llu,\"cycles_idle_after_flagged\":%zu,"
		     "\"phases\":{",
		s->gpu_cycles, s->gpu_cycles_unmatched, s->gpu_window_ns, s->gpu_idle_ns,
		s->gpu_idle_flagged_ns, s->gpu_flagged_syncs,
		(unsigned long long)s->gpu_window_p50_ns, (unsigned long long)s->gpu_idle_p50_ns,
		s->gpu_cycles_flagged);
	for (int p = 0; p < PHASE_NR; p++)
		fprintf(out, "%s\"%s\":{\"busy_ns\":%.1f,\"wait_ns\":%.1f,\"span_ns\":%.1f,"
			     "\"busy_ns_p50\":%llu}",
			p ? "," : "", cycles__phase_name(p), s->phase[p].gpu_busy_ns,
			s->phase[p].gpu_span_ns > s->phase[p].gpu_busy_ns
				? s->phase[p].gpu_span_ns - s->phase[p].gpu_busy_ns
				: 0,
			s->phase[p].gpu_span_ns, (unsigned long long)s->phase[p].gpu_busy_p50_ns);
	fputs("}}", out);
}

static void put_summary_fields(FILE *out, const struct cycle_summary *s)
{
	fprintf(out, "\"cycles\":%zu,\"cycles_per_s\":%.3f,\"extend_unresolved\":%s,", s->cycles,
		s->cycles_per_s, summary__extend_unresolved(s) ? "true" : "false");
	if (s->cycles)
		fprintf(out,
			"\"cycle_ns\":{\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,\"mean\":%.1f,"
			"\"min\":%llu,\"max\":%llu},",
			(unsigned long long)s->p50_ns, (unsigned long long)s->p90_ns,
			(unsigned long long)s->p99_ns, s->mean_ns, (unsigned long long)s->min_ns,
			(unsigned long long)s->max_ns);
	else
		fputs("\"cycle_ns\":null,", out);
	put_phase_means(out, s);
	fprintf(out,
		",\"draft_joined_cycles\":%zu,\"extend_joined_cycles\":%zu,"
		"\"deferred_accept_cycles\":%zu,\"verify_pieces_cycles\":%zu,"
		"\"accept_wait_ns\":%.1f,\"accept_syncs\":{",
		s->draft_joined, s->extend_joined, s->deferred, s->verify_pieces,
		s->accept_wait_ns);
	for (int k = 0; k < s->nr_accept_kinds; k++)
		fprintf(out, "%s\"%s\":%zu", k ? "," : "", model__call_name(s->accept_call[k]),
			s->accept_count[k]);
	fprintf(out, "%s\"none\":%zu}", s->nr_accept_kinds ? "," : "", s->no_accept_sync);
	put_summary_gpu(out, s);
}

/* How late the loop's thread made its first record for want of a CPU after the mark. */
static __u64 late_start_of(const struct model_view *v, const struct loop *lp)
{
	for (size_t i = 0; i < v->nr_threads; i++)
		if (v->threads[i]->tid == lp->tid && v->threads[i]->tgid == lp->tgid)
			return v->threads[i]->late_start_ns;
	return 0;
}

/* Each piece of evidence of the loop's roles and its vote; decided_by: the one that chose. */
static void put_role_evidence(FILE *out, struct model *m, const struct role_evidence *ev)
{
	fprintf(out, "\"role_evidence\":{\"decided_by\":\"%s\",\"kernels\":{\"verify_from\":\"%s\",",
		model__role_source_name(ev->decided_by), model__role_source_name(ev->kernels_from));
	if (ev->kernels_said)
		fprintf(out, "\"verify_exec\":\"0x%llx\"},",
			(unsigned long long)model__view(m)->execs[ev->kernels_verify]->handle);
	else
		fputs("\"verify_exec\":null},", out);
	fprintf(out, "\"python_frames\":{\"nested\":%s,\"draft_bursts\":%u,\"verify_bursts\":%u,"
		     "\"extend_bursts\":%u},",
		ev->frames.nested ? "true" : "false", ev->frame_draft, ev->frame_verify,
		ev->frame_extend);
	fprintf(out, "\"launch_frames\":{\"draft_launches\":%u,\"verify_launches\":%u,"
		     "\"extend_launches\":%u,\"forwards_agreed\":%u,\"forwards_disagreed\":%u}},",
		ev->launch_draft, ev->launch_verify, ev->launch_extend, ev->launch_agreed,
		ev->launch_disagreed);
}

static void put_loop(FILE *out, struct model *m, const struct loop *lp,
		     const struct cycle_summary *s)
{
	const struct model_exec *anchor = model__view(m)->execs[lp->verify_exec];

	fprintf(out, "{\"pid\":%u,\"tid\":%u,", lp->tgid, lp->tid);
	put_int_or_null(out, "rank", lp->rank, lp->rank >= 0);
	fprintf(out, ",\"verify_exec\":\"0x%llx\",\"verify_from\":\"%s\",\"iterations\":%u,"
		     "\"skipped_start\":%u,\"late_start_ns\":%llu,\"skipped_end\":%u,"
		     "\"skipped_no_draft\":%u,\"skipped_unsampled\":%u,",
		(unsigned long long)anchor->handle, model__role_source_name(lp->verify_from),
		lp->iterations, lp->skipped_start,
		(unsigned long long)late_start_of(model__view(m), lp), lp->skipped_end,
		lp->skipped_no_draft, lp->skipped_unsampled);
	if (lp->lead_from == LEAD_NONE)
		fputs("\"lead_role\":null,", out);
	else
		fprintf(out, "\"lead_role\":\"%s\",", lp->lead_extends ? "extend" : "draft");
	fprintf(out, "\"lead_from\":\"%s\",", cycles__lead_from_name(lp->lead_from));
	put_role_evidence(out, m, &lp->evidence);
	put_summary_fields(out, s);
	fputc('}', out);
}

/* --gpu: null unless every launch of the cycle was matched to its execution. */
static void put_cycle_gpu(FILE *out, const struct cycle *c)
{
	static const enum phase shown[] = { PHASE_DRAFT, PHASE_VERIFY, PHASE_ACCEPT, PHASE_EXTEND };

	if (!c->gpu_known) {
		fputs("\"gpu\":null", out);
		return;
	}
	fprintf(out, "\"gpu\":{\"start_ns\":%llu,\"end_ns\":%llu,\"idle_ns\":%llu,"
		     "\"idle_after_flagged_ns\":%llu,\"phases\":{",
		(unsigned long long)c->gpu_start_ns, (unsigned long long)c->gpu_end_ns,
		(unsigned long long)c->gpu_idle_ns, (unsigned long long)c->gpu_idle_flagged_ns);
	for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
		const struct cycle_phase *ph = &c->phase[shown[i]];

		fprintf(out, "%s\"%s\":{\"start_ns\":%llu,\"end_ns\":%llu,\"busy_ns\":%llu}",
			i ? "," : "", cycles__phase_name(shown[i]),
			(unsigned long long)ph->gpu_start_ns, (unsigned long long)ph->gpu_end_ns,
			(unsigned long long)ph->gpu_busy_ns);
	}
	fputs("}}", out);
}

static void put_cycle(FILE *out, const struct loop *lp, const struct cycle *c)
{
	fprintf(out, "{\"pid\":%u,\"tid\":%u,", lp->tgid, lp->tid);
	put_int_or_null(out, "rank", lp->rank, lp->rank >= 0);
	fprintf(out, ",\"index\":%u,\"start_ns\":%llu,\"end_ns\":%llu,\"duration_ns\":%llu,"
		     "\"phases\":{",
		c->index, (unsigned long long)c->start_ns, (unsigned long long)c->end_ns,
		(unsigned long long)(c->end_ns - c->start_ns));
	for (int p = 0; p < PHASE_NR; p++) {
		const struct cycle_phase *ph = &c->phase[p];

		fprintf(out, "%s\"%s\":{", p ? "," : "", cycles__phase_name(p));
		if (p != PHASE_OTHER)
			fprintf(out, "\"start_ns\":%llu,\"end_ns\":%llu,",
				(unsigned long long)ph->start_ns, (unsigned long long)ph->end_ns);
		fprintf(out, "\"span_ns\":%llu,\"blocked_ns\":%llu,\"launches\":%u,\"syncs\":%u}",
			(unsigned long long)ph->span_ns, (unsigned long long)ph->blocked_ns,
			ph->launches, ph->syncs);
	}
	fprintf(out, "},\"blocked_ns\":%llu,\"launches\":%u,\"syncs\":%u,\"accept_sync\":",
		(unsigned long long)c->blocked_ns, c->launches, c->syncs);
	if (c->has_accept_sync)
		fprintf(out, "\"%s\"", model__call_name(c->accept_call));
	else
		fputs("null", out);
	fprintf(out, ",\"accept_wait_ns\":%llu,\"accept_deferred\":%s,\"draft_joined\":%s,"
		     "\"extend_joined\":%s,\"verify_pieces\":%s,",
		(unsigned long long)c->accept_wait_ns, c->accept_deferred ? "true" : "false",
		c->draft_joined ? "true" : "false", c->extend_joined ? "true" : "false",
		c->verify_pieces ? "true" : "false");
	put_cycle_gpu(out, c);
	fputc('}', out);
}

/* Loops whose lead role came from the shape alone (docs/report-json.md, "Roles"). */
static void put_lead_note(FILE *out, const char *reading, size_t loops, bool *first)
{
	if (!loops)
		return;
	fprintf(out, "%s\"in %zu loop(s) nothing seen tells the graph launched first after the "
		     "accept from a first draft step (no graph replays in a cycle, no captured "
		     "kernels tell, the loop's first and last cycles are not seen whole); read as "
		     "%s\"",
		*first ? "" : ",", loops, reading);
	*first = false;
}

static void put_notes(FILE *out, const struct cycles *cy, const struct cycle_summary *s)
{
	bool first = true;

	fputs("\"notes\":[", out);
	if (!s->cycles) {
		fputs(cy->nr_loops
			  ? "\"no cycles found: no complete decode cycle after the attach mark\""
			  : "\"no cycles found: no thread launched a graph repeatedly\"",
		      out);
		first = false;
	}
	if (s->draft_joined) {
		fprintf(out,
			"%s\"draft and verify launches had no sync between them in %zu of %zu "
			"cycles: the host sees their GPU work only together; no split is given\"",
			first ? "" : ",", s->draft_joined, s->cycles);
		first = false;
	}
	if (s->extend_joined) {
		fprintf(out, "%s\"extend and the next draft had no sync between them in %zu of %zu "
			     "cycles: their GPU work is seen only together\"",
			first ? "" : ",", s->extend_joined, s->extend_joinable);
		first = false;
	}
	put_lead_note(out, "draft: no extend phase", s->lead_shape_draft, &first);
	put_lead_note(out, "extend: one graph or eager launches follow it", s->lead_shape_extend,
		      &first);
	fputc(']', out);
}

static void put_work(FILE *out, const char *key, const struct work_count *w)
{
	fprintf(out, "\"%s\":{\"graphs\":%u,\"kernels\":%u,\"copies\":%u}", key, w->graphs,
		w->kernels, w->copies);
}

static void put_host(FILE *out, const struct model_sync *sy)
{
	bool copy = sy->kind == SYNC_PAGEABLE || sy->kind == SYNC_UNKNOWN_HOST;

	if (!copy) {
		fputs("\"host_memory\":null,\"host_from\":null", out);
		return;
	}
	fprintf(out, "\"host_memory\":\"%s\",\"host_from\":\"%s\"",
		hostmem__kind_name(sy->host), hostmem__from_name(sy->host_from));
}

static void put_sync(FILE *out, const struct sync_verdict *sv, const struct callstacks *stacks)
{
	const struct model_sync *sy = sv->sync;
	const struct cs_stack *st = callstacks__stack(stacks, sy->stack);
	const struct cs_site *site = st ? callstacks__site(stacks, st->site) : NULL;

	fprintf(out, "{\"ts\":%llu,", (unsigned long long)sy->ts);
	put_int_or_null(out, "return_ns", sy->ts_return, !(sy->flags & SYNC_UNRETURNED));
	fprintf(out, ",\"pid\":%u,\"tid\":%u,", sy->tgid, sy->tid);
	put_int_or_null(out, "rank", sv->rank, sv->rank >= 0);
	fputc(',', out);
	put_int_or_null(out, "cycle", sv->cycle, sv->cycle >= 0);
	fprintf(out, ",\"kind\":\"%s\",\"call\":\"%s\",\"position\":\"%s\",",
		model__sync_kind_name(sy->kind), model__call_name(sy->name),
		syncs__pos_name(sv->pos));
	put_handle(out, "handle", sy->handle, sy->handle);
	fprintf(out, ",\"result\":%d,\"queries\":%u,\"blocked_ns\":%llu,\"in_flight\":{",
		sy->result, sy->queries, (unsigned long long)sv->blocked_ns);
	put_work(out, "waited", &sy->waited);
	fputc(',', out);
	put_work(out, "other", &sy->other);
	fprintf(out, ",\"waited_known\":%s,\"waited_streams\":%u,",
		sy->flags & SYNC_WAIT_UNKNOWN ? "false" : "true", sy->waited_streams);
	put_handle(out, "waited_on", sy->waited_on, sy->waited_on);
	fputs("},", out);
	put_int_or_null(out, "starvation_bound_ns", sv->bound_ns, sv->has_bound);
	fputc(',', out);
	put_int_or_null(out, "gpu_idle_caused_ns", sv->gpu_idle_ns, sv->has_gpu_idle);
	fprintf(out, ",\"own\":%s,\"breaks_overlap\":%s,\"flagged\":%s,\"verdict\":\"%s\","
		     "\"is_sync\":%s,\"by_site\":%s,",
		sv->own ? "true" : "false", sv->breaks_overlap ? "true" : "false",
		sv->flagged ? "true" : "false", syncs__verdict_name(sv->verdict),
		sv->is_sync ? "true" : "false", sv->by_site ? "true" : "false");
	put_host(out, sy);
	fputc(',', out);
	/* legacy: the other stream it is ordered behind, or the one it holds back */
	put_handle(out, "serialises_with", sy->waited_on, sy->kind == SYNC_LEGACY && sy->waited_on);
	fprintf(out, ",\"held_back\":%s,\"call_site\":",
		sy->flags & SYNC_HELD_BACK ? "true" : "false");
	if (site)
		json__string(out, site->label, 1024);
	else
		fputs("null", out);
	fputc('}', out);
}

static void put_sites(FILE *out, const struct site_table *tab, size_t cycles)
{
	for (size_t i = 0; i < tab->nr; i++) {
		const struct sync_site *site = &tab->sites[i];

		fprintf(out, "%s{\"call\":\"%s\",\"position\":\"%s\",\"kind\":\"%s\",", i ? "," : "",
			model__call_name(site->name), syncs__pos_name(site->pos),
			model__sync_kind_name(site->kind));
		put_handle(out, "stream", site->stream, site->stream);
		fprintf(out, ",\"count\":%zu,\"cycles_with\":%zu,\"blocked_ns\":%llu,"
			     "\"blocked_ns_per_cycle\":%.1f,\"breaks_overlap\":%zu,",
			site->count, site->cycles_with, (unsigned long long)site->blocked_ns,
			cycles ? (double)site->blocked_ns / cycles : 0.0, site->breaks);
		put_int_or_null(out, "gpu_idle_caused_ns", site->gpu_idle_ns, site->gpu_known);
		if (site->gpu_known)
			fprintf(out, ",\"gpu_idle_caused_ns_mean\":%.1f}",
				(double)site->gpu_idle_ns / site->gpu_known);
		else
			fputs(",\"gpu_idle_caused_ns_mean\":null}", out);
	}
}

static void put_callsite(FILE *out, const struct cs_site *site, const struct callsite_stat *cs)
{
	fputs("{\"label\":", out);
	json__string(out, site->label, 1024);
	fputs(",\"python\":", out);
	if (site->py) {
		fputs("{\"file\":", out);
		json__string(out, site->py->file, 4096);
		fputs(",\"function\":", out);
		json__string(out, site->py->function, 1024);
		fputc(',', out);
		put_int_or_null(out, "line", site->py->line, site->py->line >= 0);
		fputc('}', out);
	} else {
		fputs("null", out);
	}
	fputs(",\"native\":", out);
	if (site->native) {
		fputs("{\"object\":", out);
		if (site->native->object)
			json__string(out, site->native->object, 4096);
		else
			fputs("null", out);
		fputs(",\"symbol\":", out);
		if (site->native->symbol)
			json__string(out, site->native->symbol, 1024);
		else
			fputs("null", out);
		fprintf(out, ",\"offset\":\"0x%llx\",\"addr\":\"0x%llx\"}",
			(unsigned long long)site->native->offset,
			(unsigned long long)site->native->addr);
	} else {
		fputs("null", out);
	}
	fprintf(out, ",\"count\":%zu,\"flagged\":%zu,\"blocked_ns\":%llu,"
		     "\"flagged_blocked_ns\":%llu,\"own\":%zu,",
		cs->count, cs->flagged, (unsigned long long)cs->blocked_ns,
		(unsigned long long)cs->flagged_ns, cs->own);
	put_int_or_null(out, "flagged_gpu_idle_caused_ns", cs->flagged_gpu_idle_ns,
			cs->flagged_gpu_known);
	if (cs->flagged)
		fprintf(out, ",\"flagged_call\":\"%s\",\"flagged_position\":\"%s\"}",
			model__call_name(cs->flagged_name), syncs__pos_name(cs->flagged_pos));
	else
		fputs(",\"flagged_call\":null,\"flagged_position\":null}", out);
}

/* Syncs by call site: the innermost Python line and native caller outside the driver. */
static void put_callsites(FILE *out, const struct results *res)
{
	const struct syncs *sy = &res->syncs;
	const struct callstacks *stacks = model__view(res->model)->stacks;

	fprintf(out, ",\"syncs_with_stack\":%zu,\"call_sites\":[", sy->with_stack);
	for (size_t i = 0; i < sy->nr_by_callsite; i++) {
		const struct cs_site *site = callstacks__site(stacks, sy->by_callsite[i].site);

		if (!site)
			continue;
		if (i)
			fputc(',', out);
		put_callsite(out, site, &sy->by_callsite[i]);
	}
	fputc(']', out);
}

/* Items of a list written one at a time, a comma and a new line between. */
struct list_walk {
	FILE *out;
	const struct loop *lp;
	const struct callstacks *stacks;
	size_t n;
};

static int walk_sync(void *ctx, const struct sync_verdict *sv)
{
	struct list_walk *w = ctx;

	/* calls that could synchronise and did not are counted in could_sync[] */
	if (!sv->is_sync)
		return 0;
	fputs(w->n++ ? ",\n" : "\n", w->out);
	put_sync(w->out, sv, w->stacks);
	return 0;
}

static int walk_cycle(void *ctx, const struct cycle *c)
{
	struct list_walk *w = ctx;

	fputs(w->n++ ? ",\n" : "\n", w->out);
	put_cycle(w->out, w->lp, c);
	return 0;
}

/* The calls that could synchronise and did not, by group: as many as the groups. */
static void put_could_sync(FILE *out, const struct quiet_table *tab,
			   const struct callstacks *stacks)
{
	fputs(",\"could_sync\":[", out);
	for (size_t i = 0; i < tab->nr; i++) {
		const struct quiet_site *q = &tab->sites[i];
		const struct cs_site *site = callstacks__site(stacks, q->site);

		fprintf(out, "%s{\"call\":\"%s\",\"kind\":\"%s\",\"position\":\"%s\","
			     "\"verdict\":\"%s\",\"call_site\":",
			i ? ",\n" : "\n", model__call_name(q->name), model__sync_kind_name(q->kind),
			syncs__pos_name(q->pos), syncs__verdict_name(q->verdict));
		if (site)
			json__string(out, site->label, 1024);
		else
			fputs("null", out);
		fprintf(out, ",\"count\":%zu}", q->count);
	}
	fputc(']', out);
}

static void put_syncs(FILE *out, const struct results *res)
{
	const struct syncs *sy = &res->syncs;
	struct list_walk sw = { .out = out };

	fputs(",\"syncs\":[", out);
	if (res->syncs_err) {
		fputs("]", out);
		return;
	}
	sw.stacks = model__view(res->model)->stacks;
	syncs__each(sy, model__view(res->model), walk_sync, &sw);
	fprintf(out, "],\"sync_calls\":%zu,\"legacy_work\":{\"calls\":%zu,\"synchronised\":%zu,"
		     "\"unknown\":%zu},"
		     "\"host_unknown_no_wait\":%zu,\"flagged_syncs\":%zu,\"unknown_syncs\":%zu,"
		     "\"flagged_sites\":[",
		sy->sync_calls, sy->legacy_work, sy->legacy_synced, sy->legacy_unknown,
		sy->host_unknown_quiet,
		sy->flagged, sy->unknown);
	put_sites(out, &sy->flagged_sites, sy->cycles);
	fputs("],\"unknown_sites\":[", out);
	put_sites(out, &sy->unknown_sites, sy->cycles);
	fputc(']', out);
	put_could_sync(out, &sy->quiet, sw.stacks);
	put_callsites(out, res);
}

static void put_overhead(FILE *out, const struct model_view *v)
{
	bool first = true;

	fputs(",\"self_overhead\":{", out);
	if (!v->calib.calls) {
		fputs("\"calibrated\":false,\"processes\":[]}", out);
		return;
	}
	fprintf(out, "\"calibrated\":true,\"calib_calls\":%u,\"entry_ps\":%llu,"
		     "\"return_ps\":%llu,\"stack_ps\":%llu,\"processes\":[",
		v->calib.calls, (unsigned long long)v->calib.entry_ps,
		(unsigned long long)v->calib.return_ps, (unsigned long long)v->calib.stack_ps);
	for (size_t i = 0; i < v->nr_procs; i++) {
		struct overhead o;

		if (syncs__overhead(v, v->procs[i], &o) || !v->procs[i]->calls)
			continue;
		fprintf(out, "%s{\"pid\":%u,\"entry_only_calls\":%llu,\"completion_calls\":%llu,"
			     "\"stack_calls\":%llu,\"span_ns\":%.0f,\"entry_only_per_s\":%.1f,"
			     "\"completion_per_s\":%.1f,\"added_ns\":%.0f,\"added_ms_per_s\":%.4f,",
			first ? "" : ",", o.tgid, (unsigned long long)o.hits_entry,
			(unsigned long long)o.hits_return, (unsigned long long)o.hits_stack,
			o.span_s * 1e9, o.entry_per_s, o.return_per_s, o.added_ns, o.ms_per_s);
		if (o.has_cpu)
			fprintf(out, "\"cpu_ms_per_s\":%.4f,\"percent_of_cpu\":%.4f}",
				o.cpu_ms_per_s, o.percent);
		else
			fputs("\"cpu_ms_per_s\":null,\"percent_of_cpu\":null}", out);
		first = false;
	}
	fputs("]}", out);
}

/* How the input read: what it lacked or had wrong (all 0 and null for a sound one). */
static void put_input(FILE *out, const struct decode_stats *in)
{
	static const struct decode_stats none;

	in = in ? in : &none;
	fputs(",\"input\":{", out);
	put_int_or_null(out, "cut_at", in->cut_at, in->cut);
	fprintf(out, ",\"unknown_cookie_calls\":%llu,\"duplicate_records\":%llu,"
		"\"out_of_order\":%llu,\"ring_gaps\":%llu,\"ring_gap_calls\":%llu,"
		"\"unknown_process_calls\":%llu,\"missing_calls\":%llu,\"misnumbered_calls\":%llu}",
		(unsigned long long)in->unknown_cookie_calls,
		(unsigned long long)in->duplicate_records, (unsigned long long)in->out_of_order,
		(unsigned long long)in->ring_gaps, (unsigned long long)in->ring_gap_calls,
		(unsigned long long)in->unknown_process_calls,
		(unsigned long long)in->missing_calls, (unsigned long long)in->misnumbered_calls);
}

static const char *const gpu_status_names[] = {
	[SP_GPU_ON] = "on",		[SP_GPU_NO_CUPTI] = "no-cupti",
	[SP_GPU_IN_USE] = "in-use",	[SP_GPU_NO_GRAPH_TRACE] = "no-graph-trace",
	[SP_GPU_FAILED] = "failed",	[SP_GPU_OFF] = "off",
};

const char *report__gpu_status_name(__u32 status)
{
	return status < sizeof(gpu_status_names) / sizeof(gpu_status_names[0]) &&
		       gpu_status_names[status]
		       ? gpu_status_names[status]
		       : "unknown";
}

/* --gpu: the agents and the matching; null when no GPU record came. */
/* A figure that may be unknown: null then. */
static void put_num(FILE *out, const char *key, bool known, double v)
{
	if (known)
		fprintf(out, ",\"%s\":%.17g", key, v);
	else
		fprintf(out, ",\"%s\":null", key);
}

/* --server-metrics (docs/server-metrics.md); null when no sample came. */
static void put_server(FILE *out, const struct srv_figures *f)
{
	if (!f) {
		fputs(",\"server\":null", out);
		return;
	}
	fprintf(out, ",\"server\":{\"source\":\"%s\",\"pid\":%u,\"scrapes\":%u,"
		"\"failed_scrapes\":%u,\"have\":%s", promtext__server_name(f->server), f->tgid,
		f->scrapes, f->failed, f->have ? "true" : "false");
	fputs(",\"failed_by\":{", out);
	for (unsigned int st = 0, n = 0; st <= SP_SRV_STATUS_NR; st++)
		if (f->failed_by[st])
			fprintf(out, "%s\"%s\":%u", n++ ? "," : "", promtext__status_name(st),
				f->failed_by[st]);
	fputc('}', out);
	if (!f->have) {
		fputc('}', out);
		return;
	}
	fprintf(out, ",\"span_start_ns\":%llu,\"span_end_ns\":%llu,\"resets\":%u",
		(unsigned long long)f->span_start_ns, (unsigned long long)f->span_end_ns,
		f->resets);
	put_num(out, "drafts", f->has[SP_SRV_DRAFTS], f->delta[SP_SRV_DRAFTS]);
	put_num(out, "draft_tokens", f->has[SP_SRV_DRAFT_TOKENS], f->delta[SP_SRV_DRAFT_TOKENS]);
	put_num(out, "accepted_tokens", f->has[SP_SRV_ACCEPTED], f->delta[SP_SRV_ACCEPTED]);
	put_num(out, "generated_tokens", f->has[SP_SRV_GENERATED], f->delta[SP_SRV_GENERATED]);
	put_num(out, "tokens_per_s", f->has[SP_SRV_GENERATED], f->tokens_per_s);
	put_num(out, "accept_length", f->accept_length > 0, f->accept_length);
	fprintf(out, ",\"accept_length_from\":\"%s\"",
		f->accept_length <= 0 ? "none" : f->accept_from_gauge ? "gauge" : "counters");
	put_num(out, "acceptance_rate", f->accept_rate >= 0, f->accept_rate);
	fprintf(out, ",\"cycles\":%zu", f->cycles);
	put_num(out, "cycles_per_s", true, f->cycles_per_s);
	put_num(out, "drafts_per_cycle", f->has[SP_SRV_DRAFTS] && f->cycles, f->drafts_per_cycle);
	put_num(out, "tokens_per_cycle", f->has[SP_SRV_GENERATED] && f->cycles,
		f->tokens_per_cycle);
	fprintf(out, ",\"counts_disagree\":%s}", f->disagree ? "true" : "false");
}

static void put_gpu(FILE *out, const struct gputime *g)
{
	const struct gpu_stats *st = g ? gputime__stats(g) : NULL;

	if (!st) {
		fputs(",\"gpu\":null", out);
		return;
	}
	fputs(",\"gpu\":{\"agents\":[", out);
	for (__u32 i = 0; i < st->nr_agents; i++) {
		const struct gpu_agent *a = &st->agents[i];

		fprintf(out, "%s{\"pid\":%u,\"status\":\"%s\",\"detail\":", i ? "," : "", a->tgid,
			report__gpu_status_name(a->status));
		json__string(out, a->detail, sizeof(a->detail));
		fprintf(out, ",\"cupti_version\":%u,\"records\":%llu,\"cupti_dropped\":%llu,"
			     "\"ring_dropped\":%llu,\"overhead_ns\":%llu,\"records_stopped\":%s,"
			     "\"unmatched_after_last_match\":%llu}",
			a->cupti_version, (unsigned long long)a->records,
			(unsigned long long)a->cupti_dropped, (unsigned long long)a->ring_dropped,
			(unsigned long long)a->overhead_ns, gpu_agent__stopped(a) ? "true" : "false",
			(unsigned long long)a->unmatched_after);
	}
	fprintf(out, "],\"records\":%llu,\"matched\":%llu,\"unmatched_records\":%llu,"
		     "\"unmatched_calls\":%llu}",
		(unsigned long long)st->records, (unsigned long long)st->matched,
		(unsigned long long)st->unmatched_records, (unsigned long long)st->unmatched_calls);
}

void report__json(FILE *out, const struct results *res, const struct decode_stats *input)
{
	struct model *m = res->model;
	const struct cycles *cy = &res->cycles;
	const struct cycle_summary *s = &res->overall;
	struct model_view *v = model__view(m);
	struct list_walk cw = { .out = out };

	fprintf(out, "{\"report_version\":%d,", REPORT_JSON_VERSION);
	put_recording(out, v);
	put_input(out, input);
	fputs(",\"processes\":[", out);
	for (size_t i = 0; i < v->nr_procs; i++) {
		fputs(i ? "," : "", out);
		put_process(out, v->procs[i]);
	}
	fputs("],\"graphs\":[", out);
	for (size_t i = 0; i < v->nr_execs; i++) {
		fputs(i ? ",\n" : "\n", out);
		put_graph(out, m, v->execs[i]);
	}
	fputs("],\"loops\":[", out);
	for (size_t i = 0; i < cy->nr_loops; i++) {
		fputs(i ? ",\n" : "\n", out);
		put_loop(out, m, &cy->loops[i], &res->per_loop[i]);
	}
	fputs("],\"cycles\":[", out);
	for (size_t i = 0; i < cy->nr_loops; i++) {
		cw.lp = &cy->loops[i];
		loop__each_cycle(&cy->loops[i], walk_cycle, &cw);
	}
	fputs("],\"summary\":{", out);
	fprintf(out, "\"loops\":%zu,", cy->nr_loops);
	put_summary_fields(out, s);
	fputc('}', out);
	put_syncs(out, res);
	report__sample_json(out, res);
	put_overhead(out, v);
	fputc(',', out);
	put_notes(out, cy, s);
	put_gpu(out, v->gpu);
	put_server(out, res->server);
	fputs("}\n", out);
}
