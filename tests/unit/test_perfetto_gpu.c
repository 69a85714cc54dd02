// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * export's GPU executions (--gpu): a track per process and CUPTI stream, one
 * slice per execution, and the flow from its launching call, read back from
 * the protobuf bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "catalog.h"
#include "perfetto_view.h"

#define MS 1000000ull
#define MAX_ITEMS 64

struct pb_field {
	__u32 num;
	__u64 v;		/* varint or fixed64 */
	const __u8 *data;	/* length-delimited */
	size_t len;
};

static __u64 pb_varint(const __u8 *buf, size_t *at)
{
	__u64 v = 0;

	for (int shift = 0;; shift += 7) {
		__u8 byte = buf[(*at)++];

		v |= (__u64)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return v;
	}
}

/* The next field of buf[*at..end); false at the end. */
static bool pb_next(const __u8 *buf, size_t end, size_t *at, struct pb_field *f)
{
	__u64 tag, v;

	if (*at >= end)
		return false;
	tag = pb_varint(buf, at);
	f->num = tag >> 3;
	f->data = NULL;
	if ((tag & 7) == 1) {
		memcpy(&f->v, buf + *at, 8);	/* little endian, as x86-64 */
		*at += 8;
		return true;
	}
	assert_true((tag & 7) == 0 || (tag & 7) == 2);
	v = pb_varint(buf, at);
	f->v = v;
	if ((tag & 7) == 2) {
		f->data = buf + *at;
		f->len = v;
		*at += v;
		assert_true(*at <= end);
	}
	return true;
}

struct track {
	__u64 uuid, parent;
	char name[96];
};

struct event {
	__u64 ts, track;
	int type;
	char name[96];
	__u64 flows[2];
	int nr_flows;
	__u64 ann_iid[12], ann_val[12];
	int nr_ann;
};

struct trace {
	struct track tracks[MAX_ITEMS];
	int nr_tracks;
	struct event events[MAX_ITEMS];
	int nr_events;
	char ann_names[256][24];
};

static void copy_str(char *dst, size_t size, const struct pb_field *f)
{
	size_t n = f->len < size - 1 ? f->len : size - 1;

	memcpy(dst, f->data, n);
	dst[n] = '\0';
}

static void read_descriptor(struct trace *t, const __u8 *buf, size_t len)
{
	struct track *tr = &t->tracks[t->nr_tracks++];
	struct pb_field f;
	size_t at = 0;

	memset(tr, 0, sizeof(*tr));
	while (pb_next(buf, len, &at, &f))
		if (f.num == 1)
			tr->uuid = f.v;
		else if (f.num == 5)
			tr->parent = f.v;
		else if (f.num == 2)
			copy_str(tr->name, sizeof(tr->name), &f);
}

static void read_event(struct trace *t, __u64 ts, const __u8 *buf, size_t len)
{
	struct event *e = &t->events[t->nr_events++];
	struct pb_field f, a;
	size_t at = 0;

	memset(e, 0, sizeof(*e));
	e->ts = ts;
	while (pb_next(buf, len, &at, &f)) {
		size_t in = 0;

		if (f.num == 9)
			e->type = f.v;
		else if (f.num == 11)
			e->track = f.v;
		else if (f.num == 23)
			copy_str(e->name, sizeof(e->name), &f);
		else if (f.num == 47)
			e->flows[e->nr_flows++] = f.v;
		if (f.num != 4)
			continue;
		while (pb_next(f.data, f.len, &in, &a))
			if (a.num == 1)
				e->ann_iid[e->nr_ann] = a.v;
			else
				e->ann_val[e->nr_ann] = a.v;
		e->nr_ann++;
	}
}

static void read_interned(struct trace *t, const __u8 *buf, size_t len)
{
	struct pb_field f, g;
	size_t at = 0;

	while (pb_next(buf, len, &at, &f)) {
		size_t in = 0;
		__u64 iid = 0;

		if (f.num != 3)
			continue;
		while (pb_next(f.data, f.len, &in, &g))
			if (g.num == 1)
				iid = g.v;
			else if (g.num == 2 && iid < 256)
				copy_str(t->ann_names[iid], sizeof(t->ann_names[0]), &g);
	}
}

static void read_trace(struct trace *t, const __u8 *buf, size_t len)
{
	struct pb_field pkt, f;
	size_t at = 0;

	memset(t, 0, sizeof(*t));
	while (pb_next(buf, len, &at, &pkt)) {
		__u64 ts = 0;
		size_t in = 0;

		assert_int_equal(pkt.num, 1);
		while (pb_next(pkt.data, pkt.len, &in, &f))
			if (f.num == 8)
				ts = f.v;
		in = 0;
		while (pb_next(pkt.data, pkt.len, &in, &f))
			if (f.num == 60 && t->nr_tracks < MAX_ITEMS)
				read_descriptor(t, f.data, f.len);
			else if (f.num == 11 && t->nr_events < MAX_ITEMS)
				read_event(t, ts, f.data, f.len);
			else if (f.num == 12)
				read_interned(t, f.data, f.len);
	}
}

static const struct track *track_of(const struct trace *t, __u64 uuid)
{
	const struct track *found = NULL;

	/* a track described again (a name learnt later): the last description holds */
	for (int i = 0; i < t->nr_tracks; i++)
		if (t->tracks[i].uuid == uuid)
			found = &t->tracks[i];
	return found;
}

static const struct event *event_named(const struct trace *t, const char *name)
{
	for (int i = 0; i < t->nr_events; i++)
		if (!strcmp(t->events[i].name, name))
			return &t->events[i];
	return NULL;
}

/* The value of annotation name on e; false when it has none. */
static bool ann(const struct trace *t, const struct event *e, const char *name, __u64 *v)
{
	for (int i = 0; i < e->nr_ann; i++)
		if (e->ann_iid[i] < 256 && !strcmp(t->ann_names[e->ann_iid[i]], name)) {
			*v = e->ann_val[i];
			return true;
		}
	return false;
}

/* The END after e on its track, in file order: the slice's end. */
static __u64 end_of(const struct trace *t, const struct event *e)
{
	for (const struct event *x = e + 1; x < t->events + t->nr_events; x++)
		if (x->track == e->track && x->type == 2)
			return x->ts;
	fail_msg("slice %s never ends", e->name);
	return 0;
}

static struct sp_call call_of(const char *name, __u64 ts, __u32 seq)
{
	struct sp_call c;

	memset(&c, 0, sizeof(c));
	c.entry.probe = catalog__find(name) - catalog;
	c.entry.ts = ts;
	c.entry.tgid = 10;
	c.entry.tid = 11;
	c.entry.seq = seq;
	return c;
}

static void test_gpu_tracks(void **state)
{
	const struct pipeline_opts opts = { .analyse = false };
	struct tf_header hdr = { .version = 1, .nr_probes = catalog_len };
	struct sp_call launch = call_of("cuGraphLaunch", 100 * MS, 1);
	struct sp_call copy_before = call_of("cuMemcpyHtoDAsync", 101 * MS, 2);
	struct sp_call copy_after = call_of("cuMemcpyHtoDAsync", 110 * MS, 3);
	const struct gpu_exec graph = {
		.start_ns = 102 * MS, .end_ns = 108 * MS, .tgid = 10, .kind = SP_GPU_GRAPH,
		.stream_id = 7, .device = 0, .graph = 3, .call_ts = 100 * MS, .call_tid = 11,
		.stream = 0x5000, .exec = 0xabc0,
	};
	/* starts before the graph ended (programmatic launch): a lane of its own */
	const struct gpu_exec copy = {
		.start_ns = 107 * MS, .end_ns = 109 * MS, .tgid = 10, .kind = SP_GPU_MEMCPY,
		.copy_kind = 1, .bytes = 4096, .stream_id = 7, .call_ts = 101 * MS,
		.call_tid = 11, .stream = 0x5000,
	};
	const struct gpu_exec kernel = {
		.start_ns = 111 * MS, .end_ns = 112 * MS, .tgid = 10, .kind = SP_GPU_KERNEL,
		.stream_id = 9, .device = 1, .name = "gemm_kernel",
	};
	struct pipeline *p;
	struct perfetto_out *o;
	struct pipeline_consumer c;
	static struct trace t;
	const struct event *g, *m, *k, *l, *cb, *ca;
	__u64 v;
	FILE *f = tmpfile();
	__u8 *buf;
	long len;

	hdr.probes = calloc(catalog_len, sizeof(*hdr.probes));
	assert_non_null(hdr.probes);
	for (int i = 0; i < catalog_len; i++)
		hdr.probes[i].catalog = i;
	p = pipeline__new(&hdr, &opts);
	assert_non_null(p);
	assert_non_null(f);
	o = perfetto__new(fileno(f), p);
	assert_non_null(o);
	perfetto__consumer(o, &c);
	assert_int_equal(c.call(c.ctx, &hdr, &launch), 0);
	assert_int_equal(c.call(c.ctx, &hdr, &copy_before), 0);
	assert_int_equal(c.gpu(c.ctx, &graph), 0);
	assert_int_equal(c.gpu(c.ctx, &copy), 0);
	assert_int_equal(c.gpu(c.ctx, &kernel), 0);
	assert_int_equal(c.call(c.ctx, &hdr, &copy_after), 0);
	assert_int_equal(perfetto__close(o), 0);

	len = lseek(fileno(f), 0, SEEK_END);
	buf = malloc(len);
	assert_non_null(buf);
	assert_int_equal(pread(fileno(f), buf, len, 0), len);
	read_trace(&t, buf, len);

	g = event_named(&t, "graph 0xabc0");
	m = event_named(&t, "memcpy HtoD 4096 B");
	k = event_named(&t, "gemm_kernel");
	assert_non_null(g);
	assert_non_null(m);
	assert_non_null(k);
	assert_int_equal(g->type, 1);
	assert_int_equal(g->ts, 102 * MS);
	assert_int_equal(end_of(&t, g), 108 * MS);
	assert_int_equal(m->ts, 107 * MS);
	assert_int_equal(end_of(&t, m), 109 * MS);
	assert_int_equal(k->ts, 111 * MS);
	assert_int_equal(end_of(&t, k), 112 * MS);
	/* stream 7's two lanes share its name, under the process's track (pid 10: 10 << 3 | 1) */
	assert_true(g->track != m->track);
	assert_string_equal(track_of(&t, g->track)->name, "GPU stream 7 (0x5000)");
	assert_string_equal(track_of(&t, m->track)->name, "GPU stream 7 (0x5000)");
	assert_int_equal(track_of(&t, g->track)->parent, 10 << 3 | 1);
	assert_string_equal(track_of(&t, k->track)->name, "GPU stream 9");
	assert_int_equal(track_of(&t, k->track)->parent, 10 << 3 | 1);

	/* the graph's flow is the one its launch call carries */
	l = &t.events[0];
	while (l < t.events + t.nr_events && l->track != (11 << 3 | 2))
		l++;
	assert_true(l < t.events + t.nr_events);
	assert_int_equal(l->ts, 100 * MS);
	assert_int_equal(l->nr_flows, 1);
	assert_int_equal(g->nr_flows, 1);
	assert_int_equal(g->flows[0], l->flows[0]);
	/* a copy made before any execution came has no flow: its execution's flow starts none */
	cb = l + 1;
	assert_int_equal(cb->ts, 101 * MS);
	assert_int_equal(cb->nr_flows, 0);
	assert_int_equal(m->nr_flows, 1);
	/* once they come, copies start one */
	ca = &t.events[t.nr_events - 1];
	assert_int_equal(ca->ts, 110 * MS);
	assert_int_equal(ca->nr_flows, 1);
	assert_true(ca->flows[0] != g->flows[0]);
	/* the unmatched kernel: a slice, no flow */
	assert_int_equal(k->nr_flows, 0);
	assert_true(ann(&t, k, "unmatched", &v) && v == 1);
	assert_true(ann(&t, k, "device", &v) && v == 1);
	assert_false(ann(&t, g, "unmatched", &v));
	assert_true(ann(&t, g, "graph_exec", &v) && v == 0xabc0);
	assert_true(ann(&t, g, "stream", &v) && v == 0x5000);
	assert_true(ann(&t, g, "cupti_stream", &v) && v == 7);
	assert_true(ann(&t, m, "bytes", &v) && v == 4096);

	free(buf);
	fclose(f);
	perfetto__free(o);
	pipeline__free(p);
	free(hdr.probes);
}

/* A track first met unmatched is named again once its handle is known. */
static void test_gpu_track_renamed(void **state)
{
	const struct pipeline_opts opts = { .analyse = false };
	struct tf_header hdr = { .version = 1 };
	const struct gpu_exec first = { .start_ns = 5 * MS, .end_ns = 6 * MS, .tgid = 20,
					 .kind = SP_GPU_MEMSET, .bytes = 64, .stream_id = 3 };
	const struct gpu_exec second = { .start_ns = 7 * MS, .end_ns = 8 * MS, .tgid = 20,
					 .kind = SP_GPU_MEMSET, .bytes = 64, .stream_id = 3,
					 .call_ts = 4 * MS, .call_tid = 21, .stream = 0x1 };
	struct pipeline *p = pipeline__new(&hdr, &opts);
	struct pipeline_consumer c;
	struct perfetto_out *o;
	static struct trace t;
	FILE *f = tmpfile();
	__u8 *buf;
	long len;

	assert_non_null(p);
	o = perfetto__new(fileno(f), p);
	assert_non_null(o);
	perfetto__consumer(o, &c);
	assert_int_equal(c.gpu(c.ctx, &first), 0);
	assert_int_equal(c.gpu(c.ctx, &second), 0);
	assert_int_equal(perfetto__close(o), 0);
	len = lseek(fileno(f), 0, SEEK_END);
	buf = malloc(len);
	assert_int_equal(pread(fileno(f), buf, len, 0), len);
	read_trace(&t, buf, len);
	/* the process's track, then stream 3 unnamed, then named: legacy handle 0x1 */
	assert_int_equal(t.nr_tracks, 3);
	assert_string_equal(t.tracks[1].name, "GPU stream 3");
	assert_int_equal(t.tracks[2].uuid, t.tracks[1].uuid);
	assert_string_equal(t.tracks[2].name, "GPU stream 3 (legacy)");
	assert_int_equal(t.nr_events, 4);
	assert_string_equal(t.events[0].name, "memset");
	assert_int_equal(t.events[2].track, t.events[0].track);
	free(buf);
	fclose(f);
	perfetto__free(o);
	pipeline__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_tracks),
		cmocka_unit_test(test_gpu_track_renamed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
