// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Calls to state. Per process: threads, streams (and the capture each is in),
 * events (where they were last recorded), kernel names, graphs and execs,
 * pinned host ranges. Per thread: the loop events the cycle analysis reads.
 * This file: the catalogue binding, dispatch of calls and records, the API.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_int.h"

static const struct {
	const char *name;
	enum op op;
} op_names[] = {
	{ "cuLaunchKernel", OP_LAUNCH },
	{ "cuLaunchCooperativeKernel", OP_LAUNCH },
	{ "cuLaunchKernelEx", OP_LAUNCH_EX },
	{ "cuLaunchHostFunc", OP_HOST_FUNC },
	{ "cuGraphLaunch", OP_GRAPH_LAUNCH },
	{ "cuStreamBeginCapture", OP_BEGIN_CAPTURE },
	{ "cuStreamBeginCaptureToGraph", OP_BEGIN_CAPTURE },
	{ "cuStreamEndCapture", OP_END_CAPTURE },
	{ "cuGraphInstantiate", OP_INSTANTIATE },
	{ "cuGraphInstantiateWithFlags", OP_INSTANTIATE },
	{ "cuGraphInstantiateWithParams", OP_INSTANTIATE },
	{ "cuGraphExecUpdate", OP_EXEC_UPDATE },
	{ "cuGraphExecDestroy", OP_EXEC_DESTROY },
	{ "cuCtxSynchronize", OP_CTX_SYNC },
	{ "cuStreamSynchronize", OP_STREAM_SYNC },
	{ "cuEventSynchronize", OP_EVENT_SYNC },
	{ "cuMemHostAlloc", OP_HOST_ALLOC },
	{ "cuMemAllocHost", OP_HOST_ALLOC },
	{ "cuMemHostRegister", OP_HOST_REGISTER },
	{ "cuMemHostUnregister", OP_HOST_RELEASE },
	{ "cuMemFreeHost", OP_HOST_RELEASE },
	{ "cuMemFree", OP_MEM_FREE },
	{ "cuMemAlloc", OP_MEM_ALLOC },
	{ "cuStreamQuery", OP_STREAM_QUERY },
	{ "cuEventQuery", OP_EVENT_QUERY },
	{ "cuEventRecord", OP_EVENT_RECORD },
	{ "cuEventRecordWithFlags", OP_EVENT_RECORD },
	{ "cuStreamWaitEvent", OP_WAIT_EVENT },
	{ "cuEventCreate", OP_EVENT_CREATE },
	{ "cuModuleGetFunction", OP_NAMED },
	{ "cuLibraryGetKernel", OP_NAMED },
	{ "cuKernelGetFunction", OP_KERNEL_FUNC },
	{ "cuStreamCreate", OP_STREAM_CREATE },
	{ "cuStreamCreateWithPriority", OP_STREAM_CREATE },
	{ "cuDevicePrimaryCtxRetain", OP_CTX_RETAIN },
	{ "ncclCommInitRank", OP_COMM_INIT },
	{ "ncclCommInitRankConfig", OP_COMM_INIT },
	{ "ncclCommInitRankScalable", OP_COMM_INIT },
};

static int arg_index(const struct catalog_entry *e, const char *const *names)
{
	int i = catalog__arg_index(e, names);

	return i == SP_NO_ARG ? NO_ARG : i;
}

#define ARG(e, ...) arg_index(e, (const char *const[]){ __VA_ARGS__, NULL })

static void probe_info_fill(struct probe_info *pi, const struct catalog_entry *e)
{
	pi->known = true;
	pi->catalog = e - catalog;
	pi->blocking = e->wake;
	for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (!strcmp(op_names[i].name, e->name))
			pi->op = op_names[i].op;
	if (pi->op == OP_NONE && e->cls == SP_CLASS_COPY)
		pi->op = OP_COPY;
	pi->stream = ARG(e, "stream");
	pi->func = ARG(e, "func");
	pi->exec = ARG(e, "exec");
	pi->graph = ARG(e, "graph");
	pi->event = ARG(e, "event");
	pi->count = ARG(e, "count");
	pi->datatype = ARG(e, "datatype");
	pi->bytes = ARG(e, "bytes");
	pi->host = ARG(e, "dst_host", "src_host");
	pi->d2h = ARG(e, "dst_host") != NO_ARG;
	pi->ptr = ARG(e, "ptr");
	pi->device = ARG(e, "device");
	pi->rank = ARG(e, "rank");
	pi->nranks = ARG(e, "nranks");
	pi->flags = ARG(e, "flags");
	if (pi->op == OP_NONE && e->cls == SP_CLASS_NCCL && pi->count != NO_ARG)
		pi->op = OP_COLLECTIVE;
}

struct model *model__new(const struct tf_header *hdr)
{
	struct model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->nr_probes = hdr->nr_probes;
	m->probes = calloc(hdr->nr_probes ? hdr->nr_probes : 1, sizeof(*m->probes));
	if (!m->probes) {
		free(m);
		return NULL;
	}
	for (__u32 p = 0; p < hdr->nr_probes; p++)
		if (hdr->probes[p].catalog < (__u32)catalog_len)
			probe_info_fill(&m->probes[p], &catalog[hdr->probes[p].catalog]);
	snprintf(m->view.host, sizeof(m->view.host), "%s", hdr->host);
	snprintf(m->view.kernel, sizeof(m->view.kernel), "%s", hdr->kernel);
	m->view.attach_start_ns = hdr->attach_start_ns;
	m->view.attach_done_ns = hdr->attach_done_ns;
	return m;
}

/* Calls that describe rather than queue work: names, streams, devices, pinned memory. */
static int dispatch_setup(struct model *m, struct model_proc *p, const struct sp_call *c,
			  const struct probe_info *pi)
{
	__u64 v;

	switch (pi->op) {
	case OP_HOST_ALLOC:
	case OP_HOST_REGISTER:
	case OP_HOST_RELEASE:
		return waits__host_memory(p, c, pi);
	case OP_EVENT_CREATE:
		p->nr_events += out_value(c, &v);
		return 0;
	case OP_NAMED:
		return store__named(m, c);
	case OP_KERNEL_FUNC:
		return store__kernel_func(m, c);
	case OP_STREAM_CREATE:
		return store__stream_create(m, p, c, pi);
	case OP_CTX_RETAIN:
		if (p->device < 0 && arg(c, pi->device, &v))
			p->device = (int)v;
		return 0;
	case OP_COMM_INIT:
		nccl__comm_init(p, c, pi);
		return 0;
	default:
		return 0;
	}
}

/* Syncs, copies, queries and collectives nested in another traced call are the outer one's. */
static int dispatch(struct model *m, struct model_proc *p, struct model_thread *t,
		    const struct sp_call *c, const struct probe_info *pi)
{
	struct model_exec *x;

	switch (pi->op) {
	case OP_LAUNCH:
	case OP_LAUNCH_EX:
		return graphs__launch(m, p, t, c, pi);
	case OP_HOST_FUNC:
		return graphs__host_func(m, p, t, c, pi);
	case OP_GRAPH_LAUNCH:
		return graphs__graph_launch(m, p, t, c, pi);
	case OP_BEGIN_CAPTURE:
		return graphs__begin_capture(m, p, c, pi);
	case OP_END_CAPTURE:
		return graphs__end_capture(m, c, pi);
	case OP_INSTANTIATE:
		return graphs__instantiate(m, p, c, pi);
	case OP_EXEC_UPDATE:
		return graphs__exec_update(m, c, pi);
	case OP_EXEC_DESTROY:
		x = hmap__get(&m->execs, p->tgid, arg_or0(c, pi->exec));
		if (x)
			x->destroyed = true;
		return 0;
	case OP_CTX_SYNC:
	case OP_STREAM_SYNC:
	case OP_EVENT_SYNC:
	case OP_MEM_FREE:
		return c->entry.depth ? 0 : waits__sync_call(m, p, t, c, pi);
	case OP_MEM_ALLOC:
		return c->entry.depth ? 0 : waits__classify_wait(m, p, t, c, pi);
	case OP_STREAM_QUERY:
	case OP_EVENT_QUERY:
		return c->entry.depth ? 0 : waits__query(m, p, t, c, pi);
	case OP_COPY:
		return c->entry.depth ? 0 : waits__copy(m, p, t, c, pi);
	case OP_EVENT_RECORD:
		return waits__event_record(m, t, c, pi);
	case OP_WAIT_EVENT:
		return waits__wait_event(m, c, pi);
	case OP_COLLECTIVE:
		return c->entry.depth ? 0 : nccl__collective(m, p, t, c, pi);
	default:
		return dispatch_setup(m, p, c, pi);
	}
}

/* Launches and copies, each once: a kernel NCCL launches inside a collective is the collective's. */
static void count_kind(struct model_view *v, const struct sp_call *c, const struct probe_info *pi)
{
	if (c->entry.depth)
		return;
	switch (pi->op) {
	case OP_LAUNCH:
	case OP_LAUNCH_EX:
	case OP_HOST_FUNC:
	case OP_GRAPH_LAUNCH:
	case OP_COLLECTIVE:
		v->launches++;
		break;
	case OP_COPY:
		v->copies++;
		break;
	default:
		break;
	}
}

int model__call(struct model *m, const struct sp_call *c)
{
	const struct probe_info *pi;
	struct model_proc *p;
	struct model_thread *t;
	int ret;

	/* damage the decoder counted: no probe or no process to file it under */
	if (c->entry.probe >= m->nr_probes || !m->probes[c->entry.probe].known || c->undescribed)
		return 0;
	pi = &m->probes[c->entry.probe];
	p = store__proc_get(m, c->entry.tgid);
	t = p ? store__thread_get(m, p, c->entry.tid) : NULL;
	if (!t) {
		m->view.out_of_memory = true;
		return -ENOMEM;
	}
	if (c->has_ret)
		p->hits_return++;
	else
		p->hits_entry++;
	if (c->entry.flags & SP_CALL_HAS_STACK)
		p->hits_stack++;
	if (!p->calls++)
		p->first_ns = c->entry.ts;
	p->last_ns = c->entry.ts;
	if (!t->calls++)
		t->first_ns = c->entry.ts;
	t->last_ns = c->entry.ts;
	if (!m->view.calls++)
		m->view.first_ns = c->entry.ts;
	m->view.last_ns = c->entry.ts;
	/* a context made before any other work: every pinned allocation will be seen */
	if (pi->op == OP_CTX_RETAIN && !p->work_calls)
		p->pinned_known = true;
	if (waits__does_work(pi))
		p->work_calls++;
	count_kind(&m->view, c, pi);
	ret = dispatch(m, p, t, c, pi);
	if (ret)
		m->view.out_of_memory = true;
	return ret;
}

/* Same kernels (function and count) and collectives: one model, another batch size. */
bool model__same_kernels(const struct model_capture *a, const struct model_capture *b)
{
	if (!a || !b || a->nr_kernels != b->nr_kernels || a->nr_colls != b->nr_colls)
		return false;
	for (__u32 i = 0; i < a->nr_kernels; i++) {
		bool found = false;

		for (__u32 j = 0; j < b->nr_kernels && !found; j++)
			found = a->kernels[i].func == b->kernels[j].func &&
				a->kernels[i].count == b->kernels[j].count;
		if (!found)
			return false;
	}
	for (__u32 i = 0; i < a->nr_colls; i++) {
		bool found = false;

		for (__u32 j = 0; j < b->nr_colls && !found; j++)
			found = a->colls[i].name == b->colls[j].name &&
				a->colls[i].count == b->colls[j].count;
		if (!found)
			return false;
	}
	return true;
}

/* Counter records hold totals since the start: the latest one is what counts. */
static void counters(struct model *m, const __u64 *totals)
{
	m->view.dropped = totals[SP_CNT_DROP_CALL] + totals[SP_CNT_DROP_RET];
	m->view.failed_reads = 0;
	for (int f = 0; f < SP_FAULT_NR; f++)
		m->view.failed_reads += totals[SP_CNT_FAULT_BASE + f];
}

/* A library attached after the header: its probes continue the cookie numbering. */
static void add_late_probe(struct model *m, const struct sp_probe_rec *pr)
{
	struct probe_info *grown;

	if (pr->cookie != m->nr_probes || pr->cookie >= SP_MAX_PROBES)
		return;
	grown = realloc(m->probes, (m->nr_probes + 1) * sizeof(*grown));
	if (!grown) {
		m->view.out_of_memory = true;
		return;
	}
	m->probes = grown;
	memset(&grown[m->nr_probes], 0, sizeof(*grown));
	if (pr->catalog < (__u32)catalog_len)
		probe_info_fill(&grown[m->nr_probes], &catalog[pr->catalog]);
	m->nr_probes++;
}

/* Kept apart until the end: a sample may come before the process's first call. */
static void cpu_sample(struct model *m, const struct sp_cpu_rec *rec)
{
	struct cpu_span *span = hmap__get(&m->cpus, rec->tgid, 0);

	if (!span) {
		span = calloc(1, sizeof(*span));
		if (!span || hmap__set(&m->cpus, rec->tgid, 0, span)) {
			free(span);
			m->view.out_of_memory = true;
			return;
		}
		span->first_ts = rec->ts;
		span->first_ns = rec->cpu_ns;
	}
	span->last_ts = rec->ts;
	span->last_ns = rec->cpu_ns;
	span->samples++;
	/* a live view reads the probes' cost before the end */
	for (size_t i = 0; i < m->view.nr_procs; i++)
		if (m->view.procs[i]->tgid == rec->tgid)
			m->view.procs[i]->cpu = *span;
}

/* A thread's run-queue wait so far, before the attach mark and at its first probe hit. */
struct runq_pair {
	__u64 at_mark, at_first_hit;
	bool mark_seen, hit_seen;
};

__u64 model__late_start(struct model *m, __u32 tid)
{
	const struct runq_pair *p = hmap__get(&m->runq, tid, 0);

	if (!p || !p->mark_seen || !p->hit_seen || p->at_first_hit < p->at_mark)
		return 0;
	return p->at_first_hit - p->at_mark;
}

static void runq_sample(struct model *m, const struct sp_runq_rec *rec)
{
	struct runq_pair *p = hmap__get(&m->runq, rec->tid, 0);
	struct model_thread *t;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || hmap__set(&m->runq, rec->tid, 0, p)) {
			free(p);
			m->view.out_of_memory = true;
			return;
		}
	}
	if (rec->when == SP_RUNQ_MARK) {
		p->at_mark = rec->run_delay_ns;
		p->mark_seen = true;
	} else if (rec->when == SP_RUNQ_FIRST_HIT && !p->hit_seen) {
		p->at_first_hit = rec->run_delay_ns;
		p->hit_seen = true;
	}
	t = hmap__get(&m->threads, rec->tid, rec->tgid);
	if (t)
		t->late_start_ns = model__late_start(m, rec->tid);
}

__u64 model__attach_mark(struct model *m, __u32 tgid)
{
	const __u64 *mark = hmap__get(&m->marks, tgid, 0);

	return mark ? *mark : m->view.attach_done_ns;
}

/* A merge's mark for one process: the latest before its first call holds. */
static void attach_mark(struct model *m, const struct sp_attach_rec *rec)
{
	__u64 *mark = hmap__get(&m->marks, rec->tgid, 0);

	if (!mark) {
		mark = calloc(1, sizeof(*mark));
		if (!mark || hmap__set(&m->marks, rec->tgid, 0, mark)) {
			free(mark);
			m->view.out_of_memory = true;
			return;
		}
	}
	*mark = rec->done_ns;
	m->view.merged_marks++;
	if (rec->done_ns > rec->ts && rec->done_ns - rec->ts > m->view.merged_attach_ns)
		m->view.merged_attach_ns = rec->done_ns - rec->ts;
}

/* Kept apart until the process makes a call: a launcher that makes none is no process here. */
static void host_mapping(struct model *m, const struct sp_hostmem_rec *rec)
{
	struct model_proc *p = hmap__get(&m->procs, rec->tgid, 0);
	struct host_ranges *host = p ? &p->host : hmap__get(&m->hostmaps, rec->tgid, 0);

	if (!host) {
		host = calloc(1, sizeof(*host));
		if (!host || hmap__set(&m->hostmaps, rec->tgid, 0, host)) {
			free(host);
			m->view.out_of_memory = true;
			return;
		}
	}
	if (hostmem__add_mapping(host, rec->start, rec->end, rec->kind))
		m->view.out_of_memory = true;
}

/* What a ring, a dump or a merge says of the file: for the report's first lines. */
static void flight_record(struct model_view *v, const void *rec, size_t size)
{
	const struct sp_rec_hdr *h = rec;

	if (h->type == SP_REC_SEGMENT && size == sizeof(v->rotated)) {
		if (!v->rotated.type)
			memcpy(&v->rotated, rec, size);
	} else if (h->type == SP_REC_WINDOW && size == sizeof(v->window)) {
		memcpy(&v->window, rec, size);
	} else if (h->type == SP_REC_CLOCK && size == sizeof(struct sp_clock_rec)) {
		const struct sp_clock_rec *c = rec;

		if (!(c->flags & SP_CLOCK_MERGED))
			return;
		v->merged_sources++;
		if (!c->gap_ns)
			v->merged_gap_unknown = true;
		/* against the first source's snapshot, each read within half its gap */
		if (c->source == 0)
			v->merged_ref_gap_ns = c->gap_ns;
		else if ((c->gap_ns + v->merged_ref_gap_ns + 1) / 2 > v->merged_gap_ns)
			v->merged_gap_ns = (c->gap_ns + v->merged_ref_gap_ns + 1) / 2;
	}
}

void model__record(struct model *m, const void *rec, size_t size)
{
	const struct sp_rec_hdr *hdr = rec;
	struct model_proc *p;

	switch (hdr->type) {
	case SP_REC_FORK:
		if (size < sizeof(struct sp_fork_rec))
			return;
		p = store__proc_get(m, ((const struct sp_fork_rec *)rec)->tgid);
		if (!p) {
			m->view.out_of_memory = true;
			return;
		}
		p->parent = ((const struct sp_fork_rec *)rec)->parent;
		/* traced from its first instruction: nothing of it was missed */
		p->pinned_known = true;
		break;
	case SP_REC_EXIT:
		if (size < sizeof(struct sp_exit_rec))
			return;
		p = hmap__get(&m->procs, ((const struct sp_exit_rec *)rec)->tgid, 0);
		if (p)
			p->exit_ns = ((const struct sp_exit_rec *)rec)->ts;
		break;
	case SP_REC_EXIT_STATUS:
		if (size < sizeof(struct sp_exit_status_rec))
			return;
		p = hmap__get(&m->procs, ((const struct sp_exit_status_rec *)rec)->tgid, 0);
		if (p) {
			p->exit_status = ((const struct sp_exit_status_rec *)rec)->status;
			p->exit_status_known = true;
		}
		break;
	case SP_REC_PROBE:
		if (size > sizeof(struct sp_probe_rec))
			add_late_probe(m, rec);
		break;
	case SP_REC_CALIB:
		decoder__read_calib(rec, size, &m->view.calib);
		break;
	case SP_REC_SEGMENT:
	case SP_REC_WINDOW:
	case SP_REC_CLOCK:
		flight_record(&m->view, rec, size);
		break;
	case SP_REC_CPU:
		if (size >= sizeof(struct sp_cpu_rec))
			cpu_sample(m, rec);
		break;
	case SP_REC_RUNQ:
		if (size >= sizeof(struct sp_runq_rec))
			runq_sample(m, rec);
		break;
	case SP_REC_ATTACH:
		if (size >= sizeof(struct sp_attach_rec))
			attach_mark(m, rec);
		break;
	case SP_REC_SAMPLE:
		sample__note(&m->view.sample, rec, size);
		break;
	case SP_REC_HOSTMEM:
		if (size >= sizeof(struct sp_hostmem_rec))
			host_mapping(m, rec);
		break;
	case SP_REC_RANK:
		nccl__rank_record(m, rec, size);
		break;
	case SP_REC_EXEC:
		if (size < sizeof(struct sp_exec_rec))
			return;
		p = hmap__get(&m->procs, ((const struct sp_exec_rec *)rec)->tgid, 0);
		if (p)
			hostmem__forget_mappings(&p->host);
		break;
	case SP_REC_END:
		m->view.ended_cleanly = true;
		/* fall through */
	case SP_REC_STATS:
		if (size >= sizeof(struct sp_stats_rec))
			counters(m, ((const struct sp_stats_rec *)rec)->counters);
		break;
	default:
		break;
	}
}

/*
 * A rank guessed from the one GPU a process has open tells nothing when no other
 * process has a rank: a program on one GPU is no tensor-parallel rank 0.
 */
static void drop_lone_device_rank(struct model_view *v)
{
	struct model_proc *guessed = NULL;

	for (size_t i = 0; i < v->nr_procs; i++) {
		if (v->procs[i]->rank_from == RANK_FROM_NONE)
			continue;
		if (guessed || v->procs[i]->rank_from != RANK_FROM_DEVICE)
			return;
		guessed = v->procs[i];
	}
	if (guessed) {
		guessed->rank = -1;
		guessed->nranks = -1;
		guessed->rank_from = RANK_FROM_NONE;
		guessed->rank_what[0] = '\0';
	}
}

void model__finish(struct model *m, const struct decode_stats *st)
{
	m->view.unreturned = st->unreturned;
	drop_lone_device_rank(&m->view);
	for (size_t i = 0; i < m->view.nr_procs; i++) {
		const struct cpu_span *span = hmap__get(&m->cpus, m->view.procs[i]->tgid, 0);

		if (span)
			m->view.procs[i]->cpu = *span;
	}
}

struct model_view *model__view(struct model *m)
{
	return &m->view;
}

const char *model__func_name(const struct model *m, __u32 tgid, __u64 func)
{
	return hmap__get(&m->names, tgid, func);
}

const struct loop_event *model__work_event(const struct model *m, const struct sp_call *c)
{
	const struct model_thread *t = hmap__get(&m->threads, c->entry.tid, c->entry.tgid);
	const struct loop_event *e;

	if (!t || !t->nr_events)
		return NULL;
	e = &t->events[t->nr_events - 1];
	if (e->ts != c->entry.ts || e->kind == LOOP_SYNC || e->kind == LOOP_RECORD)
		return NULL;
	return e;
}

const char *model__call_name(__u16 catalog_index)
{
	return catalog_index < catalog_len ? catalog[catalog_index].name : "?";
}

static void free_values(struct hmap *h)
{
	for (size_t i = 0; i < h->cap; i++)
		free(h->slots[i].value);
	hmap__free(h);
}

void model__free(struct model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->view.nr_procs; i++) {
		hostmem__free(&m->view.procs[i]->host);
		free(m->view.procs[i]->pending);
		free(m->view.procs[i]);
	}
	for (size_t i = 0; i < m->view.nr_threads; i++) {
		free(m->view.threads[i]->events);
		free(m->view.threads[i]->burst);
		free(m->view.threads[i]->eager_ids);
		free(m->view.threads[i]);
	}
	for (size_t i = 0; i < m->view.nr_captures; i++) {
		free(m->view.captures[i]->kernels);
		free(m->view.captures[i]->colls);
		free(m->view.captures[i]->side_streams);
		free(m->view.captures[i]);
	}
	for (size_t i = 0; i < m->view.nr_execs; i++)
		free(m->view.execs[i]);
	for (size_t i = 0; i < m->nr_strings; i++)
		free(m->strings[i]);
	/* the view owns processes, threads, execs and captures; the maps own the rest */
	hmap__free(&m->procs);
	hmap__free(&m->threads);
	free_values(&m->streams);
	free_values(&m->events);
	free_values(&m->cpus);
	free_values(&m->runq);
	free_values(&m->marks);
	for (size_t i = 0; i < m->hostmaps.cap; i++)
		hostmem__free(m->hostmaps.slots[i].value);
	free_values(&m->hostmaps);
	free_values(&m->ranks);
	free(m->all_streams);
	free(m->view.syncs);
	sample__free(&m->view.sample);
	hmap__free(&m->names);
	hmap__free(&m->graphs);
	hmap__free(&m->execs);
	free(m->view.procs);
	free(m->view.threads);
	free(m->view.execs);
	free(m->view.captures);
	free(m->strings);
	free(m->probes);
	free(m);
}

static const char *const role_names[ROLE_NR] = {
	[ROLE_UNKNOWN] = "unknown", [ROLE_DRAFT] = "draft",
	[ROLE_VERIFY] = "verify",   [ROLE_EXTEND] = "extend",
};

static const char *const role_sources[ROLE_FROM_NR] = {
	[ROLE_FROM_NONE] = "none",	   [ROLE_FROM_KERNELS] = "captured-kernels",
	[ROLE_FROM_WAIT] = "sync-wait",	   [ROLE_FROM_PIECES] = "capture-pieces",
	[ROLE_FROM_POSITION] = "position", [ROLE_FROM_FAMILY] = "same-kernels",
	[ROLE_FROM_EAGER] = "eager-launches", [ROLE_FROM_EAGER_STEPS] = "eager-steps",
	[ROLE_FROM_EAGER_GRAPHS] = "eager-graphs", [ROLE_FROM_EAGER_SITES] = "eager-sites",
	[ROLE_FROM_FRAMES] = "python-frames",
	[ROLE_FROM_LAUNCH_FRAMES] = "launch-frames",
};

static const char *const sync_kind_names[SYNC_KIND_NR] = {
	[SYNC_CTX] = "ctx",
	[SYNC_STREAM] = "stream",
	[SYNC_EVENT] = "event",
	[SYNC_COPY] = "sync-copy",
	[SYNC_PAGEABLE] = "pageable-copy",
	[SYNC_UNKNOWN_HOST] = "unknown-host",
	[SYNC_FREE] = "free",
	[SYNC_ALLOC] = "alloc",
	[SYNC_LEGACY] = "legacy",
	[SYNC_POLL] = "poll",
	[SYNC_CAPTURE] = "capture-sync",
};

const char *model__sync_kind_name(enum sync_kind kind)
{
	return kind < SYNC_KIND_NR ? sync_kind_names[kind] : "?";
}

const char *model__role_name(enum graph_role role)
{
	return role < ROLE_NR ? role_names[role] : "?";
}

const char *model__role_source_name(enum role_source from)
{
	return from < ROLE_FROM_NR ? role_sources[from] : "?";
}
