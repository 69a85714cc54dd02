// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Merging recordings. Each source says where its monotonic clock stood
 * against CLOCK_REALTIME (SP_REC_CLOCK, else the header's pair): that
 * offset, less the first source's, moves its times onto the first source's
 * clock. How well the pair was read is known (the gap between the reads);
 * how far the hosts' realtime clocks disagree is not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "log.h"
#include "merge.h"
#include "ring.h"
#include "tracefile.h"

#define SCAN_RECORDS 64		/* the clock and segment records come this early */

struct source {
	const char *path;
	struct tf_reader *rd;
	struct sp_clock_rec clock;	/* its snapshot; gap_ns 0: only the header's pair */
	struct sp_segment_rec segment;	/* what it lost before its first record (.type 0: none) */
	__s64 shift_ns;
	__u32 tgid_base;		/* added to its tgids and tids: its numbering space */
	int host;			/* sources of one host share its libraries */
	__u32 *tgids, nr_tgids;		/* processes it holds calls of, as it numbers them */
	__u64 last_ns;			/* its last record's time, on its own clock */
	__u32 *libs, nr_libs;		/* its library numbers -> the merge's */
	__u32 *probes, nr_probes;	/* its cookies -> the merge's */
	const void *rec;		/* the next record, NULL when done */
	__u64 at_ns;			/* its time on the merged clock, for interleaving */
	__u64 counters[SP_CNT_NR];	/* its latest counters */
	__u64 unknown_calls;		/* calls and returns of cookies its tables lack */
	bool ended, cut;
};

struct merge {
	struct source src[MERGE_MAX_INPUTS];
	int nr;
	struct tf_header hdr;		/* the merge's tables as they stand */
	struct tf_writer *w;
	__u64 records, last_ns;
};

static __u64 shifted(const struct source *s, __u64 ts)
{
	return ts ? ts + s->shift_ns : 0;
}

static int add_u32(__u32 **table, __u32 *n, __u32 v);

/*
 * A pass of a reader of its own over a source: its clock and segment
 * records (they come early), the processes it holds calls of and when it
 * ends, which tell whether it holds a process another input holds too.
 */
static int scan_source(struct source *s)
{
	struct tf_reader *rd = tf_reader__open(s->path, NULL, 0);
	__u32 last_tgid = 0;
	const void *rec;
	int ret = 0;

	for (__u64 n = 0; rd && !ret && tf_reader__next(rd, &rec) > 0; n++) {
		const struct sp_rec_hdr *h = rec;
		__u64 ts;

		if (h->type == SP_REC_CLOCK && !s->clock.type && n < SCAN_RECORDS &&
		    !(((const struct sp_clock_rec *)rec)->flags & SP_CLOCK_MERGED))
			memcpy(&s->clock, rec, sizeof(s->clock));
		else if (h->type == SP_REC_SEGMENT && !s->segment.type && n < SCAN_RECORDS)
			memcpy(&s->segment, rec, sizeof(s->segment));
		else if (h->type == SP_REC_CALL && ((const struct sp_call_rec *)rec)->tgid != last_tgid)
			ret = add_u32(&s->tgids, &s->nr_tgids,
				      last_tgid = ((const struct sp_call_rec *)rec)->tgid);
		if (tf_record_ts(rec, h->size, &ts) && ts > s->last_ns)
			s->last_ns = ts;
	}
	tf_reader__free(rd);
	if (ret)
		log_error("%s: out of memory", s->path);
	return ret;
}

static int open_source(struct source *s, const char *path)
{
	const struct tf_header *h;
	char err[1024];

	s->path = path;
	s->rd = tf_reader__open(path, err, sizeof(err));
	if (!s->rd) {
		log_error("%s", err);
		return -1;
	}
	h = tf_reader__header(s->rd);
	if (scan_source(s))
		return -1;
	if (!s->clock.type) {
		/* the header's pair: read together, but how closely is not known */
		s->clock = (struct sp_clock_rec){ .mono_ns = h->mono_ns,
						  .realtime_ns = h->realtime_ns };
	}
	snprintf(s->clock.host, sizeof(s->clock.host), "%s", h->host);
	return 0;
}

static bool holds(const struct source *s, __u32 tgid)
{
	for (__u32 i = 0; i < s->nr_tgids; i++)
		if (s->tgids[i] == tgid)
			return true;
	return false;
}

/*
 * The first earlier input of s's numbering space that holds a process s holds
 * too (another window of it), or -1; *tgid: the first such process.
 */
static int shares_process(const struct merge *m, int i, __u32 *tgid)
{
	const struct source *s = &m->src[i];

	for (int j = 0; j < i; j++) {
		if (m->src[j].tgid_base != s->tgid_base)
			continue;
		for (__u32 k = 0; k < s->nr_tgids; k++)
			if (holds(&m->src[j], s->tgids[k])) {
				*tgid = s->tgids[k];
				return j;
			}
	}
	return -1;
}

/* From its attach to its last record, on the merged clock. */
static void window_of(const struct source *s, __u64 *from, __u64 *to)
{
	*from = shifted(s, tf_reader__header(s->rd)->attach_start_ns);
	*to = shifted(s, s->last_ns);
}

/*
 * Input i holds a process input j holds (tgid): its tgids and tids go to a
 * space of their own, so that each window is a process of its own whose
 * cycles count from its own attach mark. Two windows of one process at once
 * cannot be told from each other: that is said.
 */
static void own_space(struct merge *m, int i, int j, __u32 tgid, __u32 base)
{
	struct source *s = &m->src[i];
	__u64 from, to, o_from, o_to;

	window_of(s, &from, &to);
	window_of(&m->src[j], &o_from, &o_to);
	s->tgid_base = base;
	if (from <= o_to && o_from <= to)
		log_warn("input %d: %s recorded pid %u while input %d did too (overlapping "
			 "windows of one process): they cannot be aligned; kept apart as pid %u, "
			 "its calls of that time merged twice", i, s->path, tgid, j, tgid + base);
	else
		log_info("input %d: %s holds pid %u again, a later or earlier window of input "
			 "%d's: kept apart as pid %u, so each window's cycles count from its own "
			 "attach mark", i, s->path, tgid, j, tgid + base);
}

/*
 * Offsets from the first source's clock; tgids of each other host, and of
 * another window of a process, moved into a space of their own.
 */
static int place_sources(struct merge *m)
{
	const struct sp_clock_rec *ref = &m->src[0].clock;
	__s64 ref_off = (__s64)(ref->realtime_ns - ref->mono_ns);
	__u32 host_base[MERGE_MAX_INPUTS], unit = 1, spaces = 0;
	int hosts = 0;

	/* an input that is a merge may use spaces of its own already: each space is as wide */
	for (int i = 0; i < m->nr; i++)
		for (__u32 k = 0; k < m->src[i].nr_tgids; k++)
			if ((m->src[i].tgids[k] >> MERGE_HOST_SHIFT) + 1 > unit)
				unit = (m->src[i].tgids[k] >> MERGE_HOST_SHIFT) + 1;
	for (int i = 0; i < m->nr; i++) {
		struct source *s = &m->src[i];
		__u32 tgid;
		int j;

		s->shift_ns = (__s64)(s->clock.realtime_ns - s->clock.mono_ns) - ref_off;
		s->host = -1;
		for (j = 0; j < i && s->host < 0; j++)
			if (!strcmp(m->src[j].clock.host, s->clock.host))
				s->host = m->src[j].host;
		if (s->host < 0) {
			s->host = hosts++;
			host_base[s->host] = spaces++ * unit << MERGE_HOST_SHIFT;
		}
		s->tgid_base = host_base[s->host];
		j = shares_process(m, i, &tgid);
		if (j >= 0)
			own_space(m, i, j, tgid, spaces++ * unit << MERGE_HOST_SHIFT);
	}
	if (spaces * unit > 1u << (32 - MERGE_HOST_SHIFT)) {
		log_error("the inputs need %u pid spaces of 2^%d; a merge holds at most %u", spaces * unit,
			  MERGE_HOST_SHIFT, 1u << (32 - MERGE_HOST_SHIFT));
		return -E2BIG;
	}
	return 0;
}

static int grow_map(__u32 **map, __u32 *nr, __u32 idx, __u32 to)
{
	if (idx >= *nr) {
		__u32 *grown = realloc(*map, (idx + 1) * sizeof(**map));

		if (!grown)
			return -ENOMEM;
		*map = grown;
		*nr = idx + 1;
	}
	(*map)[idx] = to;
	return 0;
}

static bool same_lib(const struct tf_lib *a, const struct tf_lib *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->kind == b->kind &&
	       !strcmp(a->build_id, b->build_id) && !strcmp(a->path, b->path);
}

/* The merge's number for a library of s (a host's library is listed once). */
static int find_lib(const struct merge *m, const struct source *s, const struct tf_lib *lib)
{
	for (int i = 0; s > m->src && i < s - m->src; i++) {
		const struct source *o = &m->src[i];

		if (o->host != s->host)
			continue;
		for (__u32 k = 0; k < o->nr_libs; k++)
			if (same_lib(&m->hdr.libs[o->libs[k]], lib))
				return o->libs[k];
	}
	return -1;
}

static int find_probe(const struct merge *m, __u32 lib, const struct tf_probe *p)
{
	for (__u32 i = 0; i < m->hdr.nr_probes; i++) {
		const struct tf_probe *q = &m->hdr.probes[i];

		if (q->lib == lib && q->offset == p->offset && q->catalog == p->catalog &&
		    !strcmp(q->symbol, p->symbol))
			return i;
	}
	return -1;
}

static void *append(void *table, __u32 n, size_t elem)
{
	return realloc(table, (n + 1) * elem);
}

static int add_lib(struct tf_header *h, const struct tf_lib *lib)
{
	struct tf_lib *libs = append(h->libs, h->nr_libs, sizeof(*libs));

	if (!libs)
		return -ENOMEM;
	h->libs = libs;
	libs[h->nr_libs] = *lib;
	libs[h->nr_libs].path = strdup(lib->path ? lib->path : "");
	if (!libs[h->nr_libs].path)
		return -ENOMEM;
	h->nr_libs++;
	return 0;
}

static int add_probe(struct tf_header *h, const struct tf_probe *p, __u32 lib)
{
	struct tf_probe *probes = append(h->probes, h->nr_probes, sizeof(*probes));

	if (!probes)
		return -ENOMEM;
	h->probes = probes;
	probes[h->nr_probes] = *p;
	probes[h->nr_probes].lib = lib;
	probes[h->nr_probes].symbol = strdup(p->symbol ? p->symbol : "");
	if (!probes[h->nr_probes].symbol)
		return -ENOMEM;
	h->nr_probes++;
	return 0;
}

static int add_u32(__u32 **table, __u32 *n, __u32 v)
{
	__u32 *grown;

	for (__u32 i = 0; i < *n; i++)
		if ((*table)[i] == v)
			return 0;
	grown = append(*table, *n, sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	*table = grown;
	grown[(*n)++] = v;
	return 0;
}

/* One source's header tables into the merge's, and the number maps that go with them. */
static int join_tables(struct merge *m, struct source *s)
{
	const struct tf_header *h = tf_reader__header(s->rd);
	struct tf_header *mh = &m->hdr;
	int ret = 0;

	for (__u32 i = 0; i < h->nr_targets && !ret; i++)
		ret = add_u32(&mh->targets, &mh->nr_targets, h->targets[i] + s->tgid_base);
	for (__u32 i = 0; i < h->nr_libs && !ret; i++) {
		int lib = find_lib(m, s, &h->libs[i]);

		if (lib < 0) {
			lib = mh->nr_libs;
			ret = add_lib(mh, &h->libs[i]);
		}
		if (!ret)
			ret = grow_map(&s->libs, &s->nr_libs, i, lib);
	}
	for (__u32 i = 0; i < h->nr_probes && !ret; i++) {
		__u32 lib = s->libs[h->probes[i].lib];
		int probe = find_probe(m, lib, &h->probes[i]);

		if (probe < 0) {
			probe = mh->nr_probes;
			ret = add_probe(mh, &h->probes[i], lib);
		}
		if (!ret)
			ret = grow_map(&s->probes, &s->nr_probes, i, probe);
	}
	for (__u32 i = 0; i < h->nr_maps && !ret; i++) {
		struct tf_map *maps = append(mh->maps, mh->nr_maps, sizeof(*maps));

		if (!maps)
			return -ENOMEM;
		mh->maps = maps;
		maps[mh->nr_maps] = h->maps[i];
		maps[mh->nr_maps].tgid += s->tgid_base;
		maps[mh->nr_maps++].lib = s->libs[h->maps[i].lib];
	}
	return ret;
}

/* The first source's clock and identity; the attach mark from which every source was attached. */
static int build_header(struct merge *m)
{
	const struct tf_header *first = tf_reader__header(m->src[0].rd);
	struct tf_header *mh = &m->hdr;
	int ret = 0;

	/* call-site records in any source make the merge a version 2 file too */
	mh->version = TF_VERSION;
	for (int i = 0; i < m->nr; i++)
		if (tf_reader__header(m->src[i].rd)->version > mh->version)
			mh->version = tf_reader__header(m->src[i].rd)->version;
	memcpy(mh->host, first->host, sizeof(mh->host));
	memcpy(mh->kernel, first->kernel, sizeof(mh->kernel));
	mh->mono_ns = first->mono_ns;
	mh->realtime_ns = first->realtime_ns;
	for (int i = 0; i < m->nr && !ret; i++) {
		const struct tf_header *h = tf_reader__header(m->src[i].rd);
		__u64 start = shifted(&m->src[i], h->attach_start_ns);
		__u64 done = shifted(&m->src[i], h->attach_done_ns);

		if (strcmp(mh->host, h->host) && strlen(mh->host) + strlen(h->host) < 64 &&
		    !strstr(mh->host, h->host))
			strcat(strcat(mh->host, "+"), h->host);
		if (!i || start < mh->attach_start_ns)
			mh->attach_start_ns = start;
		if (done > mh->attach_done_ns)
			mh->attach_done_ns = done;
		ret = join_tables(m, &m->src[i]);
	}
	if (!ret && mh->nr_probes >= SP_CALIB_PROBE) {
		log_error("the inputs have %u probes together; a recording holds at most %d",
			  mh->nr_probes, SP_CALIB_PROBE - 1);
		return -E2BIG;
	}
	if (ret)
		log_error("merging the headers: out of memory");
	return ret;
}

union rec_buf {
	__u64 align;
	unsigned char bytes[TF_MAX_RECORD];
	struct sp_rec_hdr h;
	struct sp_call_rec call;
	struct sp_ret_rec ret;
	struct sp_fork_rec fork;
	struct sp_lib_rec lib;
	struct sp_probe_rec probe;
	struct sp_map_rec map;
	struct sp_window_rec window;
	struct sp_stats_rec stats;
	struct sp_libmap_rec libmap;
	struct sp_runq_rec runq;
	struct sp_stack_rec stack;
	struct sp_attach_rec attach;
	struct sp_gpu_rec gpu;
	struct sp_gpu_state_rec gpu_state;
};

static void move_ts(const struct source *s, union rec_buf *b)
{
	__u64 ts;

	memcpy(&ts, b->bytes + 8, sizeof(ts));
	ts = shifted(s, ts);
	memcpy(b->bytes + 8, &ts, sizeof(ts));
}

/* The common layout: tgid at offset 4, time at offset 8. */
static void move_tgid_ts(const struct source *s, union rec_buf *b)
{
	__u32 tgid;

	memcpy(&tgid, b->bytes + 4, sizeof(tgid));
	tgid += s->tgid_base;
	memcpy(b->bytes + 4, &tgid, sizeof(tgid));
	move_ts(s, b);
}

/* A late library: the merge's number for it, announced once per host. 1: write, 0: drop. */
static int late_lib(struct merge *m, struct source *s, union rec_buf *b)
{
	struct tf_lib lib = { .path = (char *)(&b->lib + 1), .dev = b->lib.dev, .ino = b->lib.ino,
			      .kind = b->lib.kind };
	int found;

	memcpy(lib.build_id, b->lib.build_id, sizeof(lib.build_id));
	if (b->lib.index != s->nr_libs)
		return -EBADMSG;
	found = find_lib(m, s, &lib);
	if (found >= 0)
		return grow_map(&s->libs, &s->nr_libs, b->lib.index, found);
	if (grow_map(&s->libs, &s->nr_libs, b->lib.index, m->hdr.nr_libs))
		return -ENOMEM;
	b->lib.index = m->hdr.nr_libs;
	b->lib.tgid += s->tgid_base;
	b->lib.ts = shifted(s, b->lib.ts);
	return 1;
}

static int late_probe(struct merge *m, struct source *s, union rec_buf *b)
{
	struct tf_probe p = { .symbol = (char *)(&b->probe + 1), .offset = b->probe.offset,
			      .catalog = b->probe.catalog, .vaddr = b->probe.vaddr };
	__u32 lib;
	int found;

	if (b->probe.cookie != s->nr_probes || b->probe.lib >= s->nr_libs)
		return -EBADMSG;
	lib = s->libs[b->probe.lib];
	found = find_probe(m, lib, &p);
	if (found >= 0)
		return grow_map(&s->probes, &s->nr_probes, b->probe.cookie, found);
	if (m->hdr.nr_probes + 1 >= SP_CALIB_PROBE ||
	    grow_map(&s->probes, &s->nr_probes, b->probe.cookie, m->hdr.nr_probes))
		return -E2BIG;
	b->probe.cookie = m->hdr.nr_probes;
	b->probe.lib = lib;
	return 1;
}

/* A cookie no table describes: one no merge's table can hold either, so readers count it. */
#define UNKNOWN_PROBE	0xffffffffu

static int move_call(struct source *s, union rec_buf *b)
{
	/* entries and completions share the layout up to tgid */
	if (b->call.probe == SP_CALIB_PROBE) {
		/* the calibration probe is every recording's */
	} else if (b->call.probe >= s->nr_probes) {
		/* kept, as every reader keeps it, and counted */
		s->unknown_calls += b->call.type == SP_REC_CALL;
		b->call.probe = UNKNOWN_PROBE;
	} else {
		b->call.probe = s->probes[b->call.probe];
	}
	b->call.tgid += s->tgid_base;
	b->call.tid += s->tgid_base;
	b->call.ts = shifted(s, b->call.ts);
	return 1;
}

/* The record as the merge writes it: 1 write b, 0 drop it, or -errno. */
static int translate(struct merge *m, struct source *s, union rec_buf *b)
{
	__u32 tgid;

	switch (b->h.type) {
	case SP_REC_CALL:
	case SP_REC_RET:
		return move_call(s, b);
	case SP_REC_FORK:
		b->fork.parent += s->tgid_base;
		move_tgid_ts(s, b);
		return 1;
	case SP_REC_LIBMAP:
		b->libmap.tid += s->tgid_base;
		move_tgid_ts(s, b);
		return 1;
	case SP_REC_RUNQ:
		b->runq.tid += s->tgid_base;
		move_tgid_ts(s, b);
		return 1;
	case SP_REC_ATTACH:
		/* an input that is a merge: its processes' own marks */
		b->attach.done_ns = shifted(s, b->attach.done_ns);
		move_tgid_ts(s, b);
		return 1;
	case SP_REC_GPU:
		b->gpu.end = shifted(s, b->gpu.end);
		move_tgid_ts(s, b);	/* start */
		return 1;
	case SP_REC_GPU_STATE:
		b->gpu_state.flushed_ns = shifted(s, b->gpu_state.flushed_ns);
		move_tgid_ts(s, b);
		return 1;
	case SP_REC_EXEC:
	case SP_REC_EXIT:
	case SP_REC_PROC:
	case SP_REC_CPU:
	case SP_REC_HOSTMEM:
	case SP_REC_RANK:
	case SP_REC_EXIT_STATUS:
		move_tgid_ts(s, b);
		return 1;
	case SP_REC_CALIB:
		move_ts(s, b);
		return 1;
	case SP_REC_SRVMETRIC:
		/* tgid 0: the server was not a traced process */
		if (b->bytes[4] | b->bytes[5] | b->bytes[6] | b->bytes[7])
			move_tgid_ts(s, b);
		else
			move_ts(s, b);
		return 1;
	case SP_REC_STACK:
		b->stack.tid += s->tgid_base;
		/* fall through */
	case SP_REC_PYCODE:
	case SP_REC_OBJMAP:
	case SP_REC_GPU_NAME:
		/* call sites and kernel names: a tgid at offset 4 and no time */
		memcpy(&tgid, b->bytes + 4, sizeof(tgid));
		tgid += s->tgid_base;
		memcpy(b->bytes + 4, &tgid, sizeof(tgid));
		return 1;
	case SP_REC_WINDOW:
		b->window.tgid += s->tgid_base;
		b->window.tid += s->tgid_base;
		b->window.ts = shifted(s, b->window.ts);
		b->window.entry_ts = shifted(s, b->window.entry_ts);
		return 1;
	case SP_REC_LIB:
		return late_lib(m, s, b);
	case SP_REC_PROBE:
		return late_probe(m, s, b);
	case SP_REC_MAP:
		if (b->map.lib >= s->nr_libs)
			return -EBADMSG;
		b->map.lib = s->libs[b->map.lib];
		b->map.tgid += s->tgid_base;
		return 1;
	case SP_REC_SEGMENT:
	case SP_REC_CLOCK:
		return 0;	/* the merge states them once, at its start */
	case SP_REC_SAMPLE:
		/* its windows hold for its own processes, which a merge cannot say */
		return -ENOTSUP;
	default:
		return -EBADMSG;
	}
}

static int put(struct merge *m, const void *rec, size_t size)
{
	int ret = tf_writer__write(m->w, rec, size);

	if (ret) {
		log_error("%s", tf_writer__error(m->w));
		return ret;
	}
	/* the merge's own tables follow its late records, as a reader's do */
	ret = tf_header__apply(&m->hdr, rec, size);
	if (ret) {
		log_error("merging: a late library record does not fit (%s)", strerror(-ret));
		return ret;
	}
	m->records++;
	return 0;
}

static int put_counters(struct merge *m, __u16 type)
{
	struct sp_stats_rec r = { .type = type, .size = sizeof(r), .ts = m->last_ns };

	for (int i = 0; i < m->nr; i++)
		for (int k = 0; k < SP_CNT_NR; k++)
			r.counters[k] += m->src[i].counters[k];
	return put(m, &r, sizeof(r));
}

/*
 * Each process's attach marks as its input had them: a process attached
 * later than another is judged from its own, not from the latest of all.
 */
static int put_marks(struct merge *m)
{
	int ret = 0;

	for (int i = 0; i < m->nr && !ret; i++) {
		const struct source *s = &m->src[i];
		const struct tf_header *h = tf_reader__header(s->rd);

		for (__u32 k = 0; k < s->nr_tgids && !ret; k++) {
			struct sp_attach_rec a = {
				.type = SP_REC_ATTACH, .size = sizeof(a),
				.tgid = s->tgids[k] + s->tgid_base, .ts = shifted(s, h->attach_start_ns),
				.done_ns = shifted(s, h->attach_done_ns), .source = i,
			};

			ret = put(m, &a, sizeof(a));
		}
	}
	return ret;
}

/* One clock record per source, and what the sources had lost before their first records. */
static int put_preamble(struct merge *m)
{
	struct sp_segment_rec seg = { .type = SP_REC_SEGMENT, .size = sizeof(seg) };
	int ret = 0;

	for (int i = 0; i < m->nr && !ret; i++) {
		struct source *s = &m->src[i];
		struct sp_clock_rec c = s->clock;
		const struct sp_segment_rec *g = &s->segment;

		c.type = SP_REC_CLOCK;
		c.size = sizeof(c);
		c.source = i;
		c.ts = shifted(s, c.mono_ns);
		c.shift_ns = s->shift_ns;
		c.tgid_base = s->tgid_base;
		c.flags = SP_CLOCK_MERGED;
		ret = put(m, &c, sizeof(c));
		if (!g->type || !g->prior_records)
			continue;
		seg.prior_calls += g->prior_calls;
		seg.prior_records += g->prior_records;
		seg.prior_bytes += g->prior_bytes;
		seg.max_bytes += g->max_bytes;
		if (!seg.prior_first_ts || shifted(s, g->prior_first_ts) < seg.prior_first_ts)
			seg.prior_first_ts = shifted(s, g->prior_first_ts);
		if (shifted(s, g->prior_last_ts) > seg.prior_last_ts)
			seg.prior_last_ts = shifted(s, g->prior_last_ts);
	}
	if (!ret && seg.prior_records)
		ret = put(m, &seg, sizeof(seg));
	return ret ? ret : put_marks(m);
}

/* At a source's end, what the readers of the merge will find of it too: a line each. */
static void warn_source(const struct source *s)
{
	const struct tf_gaps *g = tf_reader__gaps(s->rd);

	if (g->missing)
		log_warn("%s.%u: %u segment%s missing from the set: the %llu calls held there "
			 "are lost; the segments before and after are merged", s->path,
			 g->first_missing, g->missing, g->missing > 1 ? "s" : "",
			 (unsigned long long)g->lost_calls);
	if (s->unknown_calls)
		log_warn("%s: %llu calls of probes the recording does not describe (cookie out of "
			 "range): merged as unknown entry points", s->path,
			 (unsigned long long)s->unknown_calls);
}

/* The source's next record and its time on the merged clock; a cut ends it with a warning. */
static int advance(struct source *s)
{
	int ret = tf_reader__next(s->rd, &s->rec);

	if (ret > 0) {
		const struct sp_rec_hdr *h = s->rec;
		__u64 ts;

		if (tf_record_ts(h, h->size, &ts) && ts)
			s->at_ns = shifted(s, ts);
		return 0;
	}
	s->rec = NULL;
	if (ret == -ENODATA) {
		log_warn("%s: its readable part is merged", tf_reader__error(s->rd));
		s->cut = true;
		ret = 0;
	}
	if (!ret)
		warn_source(s);
	if (ret)
		log_error("%s", tf_reader__error(s->rd));
	return ret;
}

static struct source *earliest(struct merge *m)
{
	struct source *best = NULL;

	for (int i = 0; i < m->nr; i++)
		if (m->src[i].rec && (!best || m->src[i].at_ns < best->at_ns))
			best = &m->src[i];
	return best;
}

/* Counters are summed over the sources; an end is the merge's only when every source ended. */
static int take_counters(struct merge *m, struct source *s)
{
	const struct sp_stats_rec *st = s->rec;

	memcpy(s->counters, st->counters, sizeof(s->counters));
	if (st->type == SP_REC_END) {
		s->ended = true;
		return 0;
	}
	return put_counters(m, SP_REC_STATS);
}

static int interleave(struct merge *m)
{
	union rec_buf b;
	struct source *s;
	int ret = 0;

	for (int i = 0; i < m->nr && !ret; i++)
		ret = advance(&m->src[i]);
	while (!ret && (s = earliest(m))) {
		const struct sp_rec_hdr *h = s->rec;

		if (s->at_ns > m->last_ns)
			m->last_ns = s->at_ns;
		if (h->type == SP_REC_STATS || h->type == SP_REC_END) {
			ret = take_counters(m, s);
		} else {
			memcpy(b.bytes, s->rec, h->size);
			ret = translate(m, s, &b);
			if (ret == -EBADMSG)
				log_error("%s: record at byte %llu does not fit its tables",
					  s->path,
					  (unsigned long long)tf_reader__offset(s->rd) - h->size);
			else if (ret == -E2BIG)
				log_error("merging: more than %d probes", SP_CALIB_PROBE - 1);
			else if (ret == -ENOTSUP)
				log_error("%s: made with --sample: its windows cannot be merged "
					  "(record the processes in one --sample recording)", s->path);
			else if (ret < 0)
				log_error("merging: %s", strerror(-ret));
			ret = ret > 0 ? put(m, b.bytes, h->size) : ret;
		}
		if (!ret)
			ret = advance(s);
	}
	return ret;
}

/* What is known of how well the sources line up, and what is not. */
static void log_clocks(const struct merge *m)
{
	__u64 worst = 0;
	bool unmeasured = false;

	for (int i = 0; i < m->nr; i++) {
		const struct source *s = &m->src[i];
		__u64 pair = (s->clock.gap_ns + m->src[0].clock.gap_ns + 1) / 2;

		if (s->clock.gap_ns)
			log_info("input %d: %s (host %s): shifted by %lld ns, tgids +%u; its clock "
				 "pair was read within %llu ns", i, s->path, s->clock.host,
				 (long long)s->shift_ns, s->tgid_base,
				 (unsigned long long)s->clock.gap_ns);
		else
			log_info("input %d: %s (host %s): shifted by %lld ns, tgids +%u; its clock "
				 "pair is the header's, how closely it was read is not recorded", i,
				 s->path, s->clock.host, (long long)s->shift_ns, s->tgid_base);
		unmeasured |= !s->clock.gap_ns;
		if (i && pair > worst)
			worst = pair;
	}
	if (m->nr > 1)
		log_info("sources aligned within %llu ns as measured%s; the hosts' realtime clocks "
			 "may disagree by their NTP offsets, which the files do not hold",
			 (unsigned long long)worst,
			 unmeasured ? " (plus the unrecorded read gaps)" : "");
}

static int finish(struct merge *m)
{
	bool all_ended = true;
	int ret;

	for (int i = 0; i < m->nr; i++)
		all_ended &= m->src[i].ended && !m->src[i].cut;
	/* a source that did not end cleanly leaves the merge without an end, as it was */
	ret = put_counters(m, all_ended ? SP_REC_END : SP_REC_STATS);
	if (!all_ended)
		log_warn("not every input ended cleanly: neither does the merge");
	if (!ret) {
		ret = tf_writer__close(m->w);
		if (ret)
			log_error("%s", tf_writer__error(m->w));
	}
	return ret;
}

/*
 * The output, by device and inode, must be none of the files an input is read
 * from, nor a name a reader of an input would take for it or for a segment of
 * it (written there, it would change what the input reads as).
 */
static int output_is_input(const struct merge_request *req, const char *input)
{
	if (!strcmp(input, req->output) || tf_ring__names(input, req->output)) {
		log_error("%s is the input %s or one of its segments: name another output",
			  req->output, input);
		return -EINVAL;
	}
	if (tf_ring__claims(input, req->output)) {
		log_error("%s is a name a reader of the input %s takes for it or a segment of it: "
			  "name another output", req->output, input);
		return -EINVAL;
	}
	return 0;
}

static int merge_into(struct merge *m, const struct merge_request *req)
{
	char err[1024];
	int ret;

	ret = place_sources(m);
	if (!ret)
		ret = build_header(m);
	if (ret)
		return ret;
	/* written aside: the output gets its name only once the merge is whole */
	m->w = tf_writer__create_whole(req->output, req->force, TF_DEFAULT_MODE, &m->hdr, err,
				       sizeof(err));
	if (!m->w) {
		log_error("%s", err);
		return -errno;
	}
	log_clocks(m);
	ret = put_preamble(m);
	if (!ret)
		ret = interleave(m);
	return ret ? ret : finish(m);
}

int merge__run(const struct merge_request *req)
{
	struct merge *m = calloc(1, sizeof(*m));
	int ret = 0;

	if (!m) {
		log_error("out of memory");
		return 1;
	}
	m->nr = req->nr_inputs;
	for (int i = 0; i < m->nr && !ret; i++)
		ret = output_is_input(req, req->inputs[i]);
	for (int i = 0; i < m->nr && !ret; i++)
		ret = open_source(&m->src[i], req->inputs[i]);
	if (!ret)
		ret = merge_into(m, req);
	/* half a merge is no merge: tf_writer__free removes it, the old output stays */
	if (!ret)
		log_info("%d recording(s) merged into %s: %llu records", m->nr, req->output,
			 (unsigned long long)m->records);
	tf_writer__free(m->w);
	for (int i = 0; i < m->nr; i++) {
		tf_reader__free(m->src[i].rd);
		free(m->src[i].libs);
		free(m->src[i].probes);
		free(m->src[i].tgids);
	}
	tf_header__free(&m->hdr);
	free(m);
	return ret ? 1 : 0;
}
