// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <string.h>
#include "catalog.h"
#include "dump_fmt.h"
#include "json.h"
#include "promtext.h"
#include "report_view.h"

static const struct catalog_entry *probe_entry(const struct tf_header *hdr, __u32 probe)
{
	if (probe >= hdr->nr_probes || hdr->probes[probe].catalog >= (__u32)catalog_len)
		return NULL;
	return &catalog[hdr->probes[probe].catalog];
}

const char *dump_fmt__name(const struct tf_header *hdr, __u32 probe)
{
	const struct catalog_entry *e = probe_entry(hdr, probe);

	return e ? e->name : "?";
}

/* One argument value in its catalogue format; JSON and text share the forms. */
static void put_value(FILE *out, char fmt, __u64 v, bool json)
{
	switch (fmt) {
	case 'u':
		fprintf(out, "%u", (__u32)v);
		break;
	case 'd':
		fprintf(out, "%d", (int)(__u32)v);
		break;
	case 'z':
		fprintf(out, "%llu", (unsigned long long)v);
		break;
	default:
		fprintf(out, json ? "\"0x%llx\"" : "0x%llx", (unsigned long long)v);
		break;
	}
}

static bool arg_faulted(const struct sp_call *c, int i)
{
	return i >= SP_REG_ARGS && (c->entry.faults & (1 << SP_FAULT_STACK));
}

static void put_args(FILE *out, const struct catalog_entry *e, const struct sp_call *c,
		     bool json)
{
	int nargs = catalog__nargs(e), shown = 0;
	char name[32], fmt;

	for (int i = 0; i < nargs; i++) {
		if (!catalog__arg(e, i, name, sizeof(name), &fmt))
			continue;
		fprintf(out, json ? "%s\"%s\":" : "%s%s=", shown++ ? (json ? "," : ", ") : "",
			name);
		if (arg_faulted(c, i))
			fputs(json ? "null" : "?", out);
		else
			put_value(out, fmt, c->entry.args[i], json);
	}
}

/* CUlaunchConfig: seven u32 (grid, block, shared memory), then hStream at 32. */
static void put_launch_config(FILE *out, const struct sp_call *c, bool json)
{
	static const char *const names[] = { "gx", "gy", "gz", "bx", "by", "bz", "shmem" };
	__u32 dims[7];
	__u64 stream, num_attrs = 0;

	if (c->data_len < 56 || (c->entry.faults & (1 << SP_FAULT_DATA))) {
		fputs(json ? ",\"config\":null" : " config=?", out);
		return;
	}
	memcpy(dims, c->data, sizeof(dims));
	memcpy(&stream, c->data + 32, sizeof(stream));
	memcpy(&num_attrs, c->data + 48, sizeof(__u32));
	fputs(json ? ",\"config\":{" : " {", out);
	for (int i = 0; i < 7; i++)
		fprintf(out, json ? "%s\"%s\":%u" : "%s%s=%u", i ? (json ? "," : " ") : "",
			names[i], dims[i]);
	fprintf(out, json ? ",\"stream\":\"0x%llx\",\"num_attrs\":%u}" : " stream=0x%llx}",
		(unsigned long long)stream, (__u32)num_attrs);
}

static void put_data_json(FILE *out, const struct catalog_entry *e, const struct sp_call *c)
{
	char name[32], fmt;

	if (e->data_kind == SP_DATA_LAUNCH_CONFIG) {
		put_launch_config(out, c, true);
		return;
	}
	if (e->data_kind != SP_DATA_STRING || !catalog__arg(e, e->data_arg, name, sizeof(name), &fmt))
		return;
	fprintf(out, ",\"%s_str\":", name);
	if (c->entry.faults & (1 << SP_FAULT_DATA))
		fputs("null", out);
	else
		json__string(out, (const char *)c->data, c->data_len);
}

/* Which probed entry point a code pointer (cuGetProcAddress output) lands on. */
static const char *probe_at(const struct tf_header *hdr, __u32 tgid, __u64 addr)
{
	for (__u32 m = 0; m < hdr->nr_maps; m++) {
		const struct tf_map *map = &hdr->maps[m];
		__u64 offset;

		if (map->tgid != tgid || addr < map->start || addr >= map->end)
			continue;
		offset = addr - map->start + map->pgoff;
		for (__u32 p = 0; p < hdr->nr_probes; p++)
			if (hdr->probes[p].lib == map->lib && hdr->probes[p].offset == offset)
				return hdr->probes[p].symbol;
	}
	return NULL;
}

static void put_out_json(FILE *out, const struct tf_header *hdr, const struct catalog_entry *e,
			 const struct sp_call *c)
{
	const char *hit;

	if (e->out_arg == SP_NO_ARG || !e->out_name)
		return;
	fprintf(out, ",\"%s\":", e->out_name);
	if (!c->returned || (c->ret_faults & (1 << SP_FAULT_OUT))) {
		fputs("null", out);
		return;
	}
	fprintf(out, "\"0x%llx\"", (unsigned long long)c->out);
	if (e->cls == SP_CLASS_DRIVER) {
		hit = probe_at(hdr, c->entry.tgid, c->out);
		fputs(",\"pfn_probe\":", out);
		if (hit)
			json__string(out, hit, strlen(hit));
		else
			fputs("null", out);
	}
}

static void put_native_json(FILE *out, const struct cs_native *f)
{
	fprintf(out, "{\"addr\":\"0x%llx\",\"object\":", (unsigned long long)f->addr);
	if (f->object)
		json__string(out, f->object, 4096);
	else
		fputs("null", out);
	fputs(",\"symbol\":", out);
	if (f->symbol)
		json__string(out, f->symbol, 1024);
	else
		fputs("null", out);
	fprintf(out, ",\"offset\":\"0x%llx\"}", (unsigned long long)f->offset);
}

static void put_python_json(FILE *out, const struct cs_python *f)
{
	if (!f->file) {
		fprintf(out, "{\"code\":\"0x%llx\",\"file\":null,\"function\":null,"
			     "\"line\":null}", (unsigned long long)f->code);
		return;
	}
	fputs("{\"file\":", out);
	json__string(out, f->file, 4096);
	fputs(",\"function\":", out);
	json__string(out, f->function, 1024);
	if (f->line >= 0)
		fprintf(out, ",\"line\":%d}", f->line);
	else
		fputs(",\"line\":null}", out);
}

/* "stack": native frames innermost first, then Python's. */
static void put_stack_json(FILE *out, const struct cs_stack *st)
{
	fputs(",\"stack\":{\"native\":[", out);
	for (__u32 i = 0; i < st->nr_native; i++) {
		if (i)
			fputc(',', out);
		put_native_json(out, &st->native[i]);
	}
	fputs("],\"python\":[", out);
	for (__u32 i = 0; i < st->nr_py; i++) {
		if (i)
			fputc(',', out);
		put_python_json(out, &st->py[i]);
	}
	fputs("]}", out);
}

void dump_fmt__json(FILE *out, const struct tf_header *hdr, const struct sp_call *c)
{
	dump_fmt__json_stack(out, hdr, NULL, c);
}

void dump_fmt__json_stack(FILE *out, const struct tf_header *hdr, const struct callstacks *stacks,
			  const struct sp_call *c)
{
	const struct cs_stack *st = callstacks__stack(stacks, c->stack);
	const struct catalog_entry *e = probe_entry(hdr, c->entry.probe);
	const char *symbol = c->entry.probe < hdr->nr_probes ? hdr->probes[c->entry.probe].symbol : "?";

	fputs("{\"name\":", out);
	json__string(out, e ? e->name : "?", 128);
	fputs(",\"symbol\":", out);
	json__string(out, symbol, 128);
	fprintf(out, ",\"class\":\"%s\",\"pid\":%u,\"tid\":%u,\"seq\":%u,\"ts_entry\":%llu",
		e ? catalog__class_name(e->cls) : "?", c->entry.tgid, c->entry.tid, c->entry.seq,
		(unsigned long long)c->entry.ts);
	if (tf_header__ns_pid(hdr, c->entry.tgid))
		fprintf(out, ",\"ns_pid\":%u", tf_header__ns_pid(hdr, c->entry.tgid));
	if (c->returned)
		fprintf(out, ",\"ts_return\":%llu,\"result\":%lld", (unsigned long long)c->ts_return,
			(long long)(int)c->result);
	else
		fputs(",\"ts_return\":null,\"result\":null", out);
	fprintf(out, ",\"depth\":%u,\"parent_seq\":", c->entry.depth);
	if (c->entry.parent_seq)
		fprintf(out, "%u", c->entry.parent_seq);
	else
		fputs("null", out);
	fprintf(out, ",\"unreturned\":%s,\"args\":{", c->unreturned ? "true" : "false");
	if (e)
		put_args(out, e, c, true);
	fputc('}', out);
	if (e) {
		put_data_json(out, e, c);
		put_out_json(out, hdr, e, c);
	}
	if (st)
		put_stack_json(out, st);
	fputs("}\n", out);
}

void dump_fmt__text(FILE *out, const struct tf_header *hdr, const struct sp_call *c)
{
	const struct catalog_entry *e = probe_entry(hdr, c->entry.probe);
	__u64 ts = c->entry.ts;

	fprintf(out, "%6llu.%09llu %7u/%-7u %*s%s(", (unsigned long long)(ts / 1000000000ull),
		(unsigned long long)(ts % 1000000000ull), c->entry.tgid, c->entry.tid,
		2 * c->entry.depth, "", e ? e->name : "?");
	if (e)
		put_args(out, e, c, false);
	fputc(')', out);
	if (e && e->data_kind == SP_DATA_LAUNCH_CONFIG)
		put_launch_config(out, c, false);
	else if (e && e->data_kind == SP_DATA_STRING && !(c->entry.faults & (1 << SP_FAULT_DATA)))
		fprintf(out, " \"%.*s\"", (int)strnlen((const char *)c->data, c->data_len),
			(const char *)c->data);
	if (c->returned)
		fprintf(out, " = %d  %.3f us", (int)c->result,
			(double)(c->ts_return - c->entry.ts) / 1000.0);
	else if (c->unreturned)
		fputs(" = <unreturned>", out);
	if (c->returned && e && e->out_arg != SP_NO_ARG && e->out_name)
		fprintf(out, "  %s=0x%llx", e->out_name, (unsigned long long)c->out);
	fputc('\n', out);
}

/* As report --json names the counts (docs/report-json.md). */
static const char *const srv_family_names[SP_SRV_FAMILY_NR] = {
	[SP_SRV_DRAFTS] = "drafts", [SP_SRV_DRAFT_TOKENS] = "draft_tokens",
	[SP_SRV_ACCEPTED] = "accepted_tokens", [SP_SRV_GENERATED] = "generated_tokens",
	[SP_SRV_ACCEPT_LENGTH] = "accept_length", [SP_SRV_ACCEPT_RATE] = "accept_rate",
};

static const char *srv_family_name(__u16 f)
{
	return f < SP_SRV_FAMILY_NR && srv_family_names[f] ? srv_family_names[f] : NULL;
}

static const char *srv_server_name(__u8 s)
{
	return s == SP_SRV_VLLM || s == SP_SRV_SGLANG ? promtext__server_name(s) : "unknown";
}

void dump_fmt__srvmetric_text(FILE *out, const struct sp_srvmetric_rec *m)
{
	const char *fam = srv_family_name(m->family);

	fprintf(out, "%6llu.%09llu %7u/%-7s server-metrics scrape %u",
		(unsigned long long)(m->ts / 1000000000ull),
		(unsigned long long)(m->ts % 1000000000ull), m->tgid, "-", m->scrape);
	if (m->status != SP_SRV_OK)
		fprintf(out, " failed: %s", promtext__status_name(m->status));
	if (m->status == SP_SRV_HTTP)
		fprintf(out, " %.0f", m->value);
	if (m->status == SP_SRV_OK && fam)
		fprintf(out, " %s %s = %.17g (%u series)", srv_server_name(m->server), fam,
			m->value, m->series);
	if (m->rank >= 0)
		fprintf(out, " rank %d", m->rank);
	fputc('\n', out);
}

void dump_fmt__srvmetric_json(FILE *out, const struct sp_srvmetric_rec *m)
{
	const char *fam = m->status == SP_SRV_OK ? srv_family_name(m->family) : NULL;

	fprintf(out, "{\"record\":\"server_metric\",\"pid\":%u,\"ts\":%llu,\"scrape\":%u,"
		     "\"status\":\"%s\",\"server\":\"%s\",\"family\":", m->tgid,
		(unsigned long long)m->ts, m->scrape, promtext__status_name(m->status),
		srv_server_name(m->server));
	if (fam)
		fprintf(out, "\"%s\",\"value\":%.17g,\"series\":%u", fam, m->value, m->series);
	else
		fputs("null,\"value\":null,\"series\":0", out);
	if (m->status == SP_SRV_HTTP)
		fprintf(out, ",\"http_status\":%.0f", m->value);
	if (m->rank >= 0)
		fprintf(out, ",\"rank\":%d}\n", m->rank);
	else
		fputs(",\"rank\":null}\n", out);
}

static const char *const gpu_kind_names[] = {
	[SP_GPU_GRAPH] = "graph", [SP_GPU_KERNEL] = "kernel",
	[SP_GPU_MEMCPY] = "memcpy", [SP_GPU_MEMSET] = "memset",
};

const char *dump_fmt__gpu_kind(__u8 kind)
{
	return kind < sizeof(gpu_kind_names) / sizeof(gpu_kind_names[0]) && gpu_kind_names[kind]
		       ? gpu_kind_names[kind]
		       : "unknown";
}

/* CUpti_ActivityMemcpyKind, as CUPTI names them; NULL for one it does not. */
static const char *copy_kind_name(__u8 kind)
{
	static const char *const names[] = {
		[1] = "HtoD", [2] = "DtoH", [3] = "HtoA", [4] = "AtoH", [5] = "AtoA",
		[6] = "AtoD", [7] = "DtoA", [8] = "DtoD", [9] = "HtoH", [10] = "PtoP",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : NULL;
}

static void put_time_text(FILE *out, __u64 ts)
{
	fprintf(out, "%6llu.%09llu", (unsigned long long)(ts / 1000000000ull),
		(unsigned long long)(ts % 1000000000ull));
}

static void gpu_exec_text(FILE *out, const struct sp_gpu_rec *g, const char *kernel)
{
	const char *copy = copy_kind_name(g->copy_kind);

	put_time_text(out, g->start);
	fprintf(out, " %7u/%-7s GPU %s(stream_id=%u, correlation=%u, device=%u, context=%u",
		g->tgid, "-", dump_fmt__gpu_kind(g->kind), g->stream, g->correlation, g->device,
		g->context);
	if (g->kind == SP_GPU_GRAPH)
		fprintf(out, ", graph_id=%u", g->graph);
	if (g->kind == SP_GPU_MEMCPY && copy)
		fprintf(out, ", copy_kind=%s", copy);
	else if (g->kind == SP_GPU_MEMCPY)
		fprintf(out, ", copy_kind=%u", g->copy_kind);
	if (g->kind == SP_GPU_MEMCPY || g->kind == SP_GPU_MEMSET)
		fprintf(out, ", bytes=%llu", (unsigned long long)g->bytes);
	fputc(')', out);
	if (g->kind == SP_GPU_KERNEL && kernel)
		fprintf(out, " \"%s\"", kernel);
	else if (g->kind == SP_GPU_KERNEL)
		fprintf(out, " name#%u", g->name);
	fprintf(out, "  %.3f us, end ", g->end >= g->start ? (g->end - g->start) / 1000.0 : 0.0);
	put_time_text(out, g->end);
	fputc('\n', out);
}

static void gpu_exec_json(FILE *out, const struct sp_gpu_rec *g, const char *kernel)
{
	const char *copy = copy_kind_name(g->copy_kind);

	fprintf(out, "{\"record\":\"gpu\",\"kind\":\"%s\",\"pid\":%u,\"ts_start\":%llu,"
		     "\"ts_end\":%llu,\"stream_id\":%u,\"correlation\":%u,\"device\":%u,"
		     "\"context\":%u,\"graph_id\":", dump_fmt__gpu_kind(g->kind), g->tgid,
		(unsigned long long)g->start, (unsigned long long)g->end, g->stream,
		g->correlation, g->device, g->context);
	if (g->kind == SP_GPU_GRAPH)
		fprintf(out, "%u", g->graph);
	else
		fputs("null", out);
	fputs(",\"kernel\":", out);
	if (g->kind == SP_GPU_KERNEL && kernel)
		json__string(out, kernel, SP_GPU_NAME_MAX);
	else
		fputs("null", out);
	fputs(",\"name_number\":", out);
	if (g->kind == SP_GPU_KERNEL && g->name)
		fprintf(out, "%u", g->name);
	else
		fputs("null", out);
	fputs(",\"copy_kind\":", out);
	if (g->kind == SP_GPU_MEMCPY && copy)
		fprintf(out, "\"%s\"", copy);
	else
		fputs("null", out);
	if (g->kind == SP_GPU_MEMCPY || g->kind == SP_GPU_MEMSET)
		fprintf(out, ",\"bytes\":%llu}\n", (unsigned long long)g->bytes);
	else
		fputs(",\"bytes\":null}\n", out);
}

static void gpu_name(FILE *out, const struct sp_gpu_name_rec *n, size_t size, bool json)
{
	const char *name = (const char *)(n + 1);
	size_t len = strnlen(name, size - sizeof(*n));

	if (json) {
		fprintf(out, "{\"record\":\"gpu_name\",\"pid\":%u,\"name_number\":%u,\"kernel\":",
			n->tgid, n->number);
		json__string(out, name, len);
		fputs("}\n", out);
		return;
	}
	/* no time of its own: it names executions that follow */
	fprintf(out, "%16s %7u/%-7s GPU name#%u = \"%.*s\"\n", "-", n->tgid, "-", n->number,
		(int)len, name);
}

static void gpu_state(FILE *out, const struct sp_gpu_state_rec *s, bool json)
{
	const char *status = report__gpu_status_name(s->status);
	size_t len = strnlen(s->detail, sizeof(s->detail));

	if (json) {
		fprintf(out, "{\"record\":\"gpu_state\",\"pid\":%u,\"ts\":%llu,\"status\":\"%s\","
			     "\"ts_flushed\":", s->tgid, (unsigned long long)s->ts, status);
		if (s->flushed_ns)
			fprintf(out, "%llu", (unsigned long long)s->flushed_ns);
		else
			fputs("null", out);
		fprintf(out, ",\"records\":%llu,\"cupti_dropped\":%llu,\"ring_dropped\":%llu,"
			     "\"overhead_ns\":%llu,\"cupti_version\":%u,\"detail\":",
			(unsigned long long)s->records, (unsigned long long)s->cupti_dropped,
			(unsigned long long)s->ring_dropped, (unsigned long long)s->overhead_ns,
			s->cupti_version);
		json__string(out, s->detail, len);
		fputs("}\n", out);
		return;
	}
	put_time_text(out, s->ts);
	fprintf(out, " %7u/%-7s GPU agent %s: %llu records, %llu dropped by CUPTI, %llu by the "
		     "ring, overhead %llu ns, CUPTI %u", s->tgid, "-", status,
		(unsigned long long)s->records, (unsigned long long)s->cupti_dropped,
		(unsigned long long)s->ring_dropped, (unsigned long long)s->overhead_ns,
		s->cupti_version);
	if (s->flushed_ns) {
		fputs(", flushed to ", out);
		put_time_text(out, s->flushed_ns);
	}
	if (len)
		fprintf(out, " \"%.*s\"", (int)len, s->detail);
	fputc('\n', out);
}

void dump_fmt__gpu(FILE *out, const struct sp_rec_hdr *rec, size_t size, const char *kernel,
		   bool json)
{
	switch (rec->type) {
	case SP_REC_GPU:
		if (json)
			gpu_exec_json(out, (const struct sp_gpu_rec *)rec, kernel);
		else
			gpu_exec_text(out, (const struct sp_gpu_rec *)rec, kernel);
		break;
	case SP_REC_GPU_NAME:
		gpu_name(out, (const struct sp_gpu_name_rec *)rec, size, json);
		break;
	case SP_REC_GPU_STATE:
		gpu_state(out, (const struct sp_gpu_state_rec *)rec, json);
		break;
	default:
		break;
	}
}
