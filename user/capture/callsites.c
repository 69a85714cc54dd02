// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "callsites.h"
#include "callstack.h"
#include "elfnote.h"
#include "hmap.h"
#include "pycode.h"
#include "targets.h"
#include "tracefile.h"

#define REREAD_NS	1000000000ull	/* an address no mapping holds: read the maps again after */

struct cs_map {
	__u64 start, end, pgoff;
	char *path;
	bool sent;		/* its SP_REC_OBJMAP went out */
};

/* Freed at exit: a reused pid starts afresh, and churn leaves nothing behind. */
struct cs_proc {
	__u32 tgid;
	struct cs_map *maps;	/* address order, as /proc/PID/maps lists them */
	size_t nr, cap;
	__u64 read_ns;		/* when maps were last read, 0: never */
	bool before_loader;	/* read at exec: the loader had not mapped the libraries */
	struct hmap codes;	/* (code, 0) -> sent marker */
};

struct callsites {
	struct hmap procs;	/* (tgid, 0) -> struct cs_proc */
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct callsites *callsites__new(void)
{
	return calloc(1, sizeof(struct callsites));
}

static void proc_clear_maps(struct cs_proc *p)
{
	for (size_t i = 0; i < p->nr; i++)
		free(p->maps[i].path);
	p->nr = 0;
}

static struct cs_proc *proc_get(struct callsites *cs, __u32 tgid)
{
	struct cs_proc *p = hmap__get(&cs->procs, tgid, 0);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->tgid = tgid;
	if (hmap__set(&cs->procs, tgid, 0, p)) {
		free(p);
		return NULL;
	}
	return p;
}

/* A mapping read again keeps its sent mark when it is the same one. */
static bool was_sent(const struct cs_map *old, size_t nr, __u64 start, __u64 end, __u64 pgoff,
		     const char *path)
{
	for (size_t i = 0; i < nr; i++)
		if (old[i].start == start && old[i].end == end && old[i].pgoff == pgoff &&
		    old[i].sent && !strcmp(old[i].path, path))
			return true;
	return false;
}

struct map_read {
	struct cs_proc *p;
	const struct cs_map *old;
	size_t nr_old;
};

static int add_map(void *ctx, __u64 start, __u64 end, __u64 pgoff, const char *path)
{
	struct map_read *mr = ctx;
	struct cs_proc *p = mr->p;

	if (!path[0])
		return 0;	/* anonymous code (a JIT): nothing to name it by */
	if (p->nr == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		struct cs_map *grown = realloc(p->maps, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		p->maps = grown;
		p->cap = cap;
	}
	p->maps[p->nr] = (struct cs_map){ start, end, pgoff, strdup(path), false };
	if (!p->maps[p->nr].path)
		return -ENOMEM;
	p->maps[p->nr].sent = was_sent(mr->old, mr->nr_old, start, end, pgoff, path);
	p->nr++;
	return 0;
}

static void proc_read_maps(struct cs_proc *p)
{
	struct map_read mr = { p, p->maps, p->nr };
	struct cs_proc fresh = { .tgid = p->tgid };

	mr.p = &fresh;
	if (targets__exec_mappings(p->tgid, add_map, &mr) || !fresh.nr) {
		proc_clear_maps(&fresh);
		free(fresh.maps);
		p->read_ns = now_ns();
		return;		/* gone, or out of memory: keep what was known */
	}
	proc_clear_maps(p);
	free(p->maps);
	p->maps = fresh.maps;
	p->nr = fresh.nr;
	p->cap = fresh.cap;
	p->read_ns = now_ns();
}

void callsites__note_process(struct callsites *cs, __u32 tgid)
{
	struct cs_proc *p = cs ? proc_get(cs, tgid) : NULL;

	if (p && !p->read_ns)
		proc_read_maps(p);
}

static void proc_free(struct cs_proc *p)
{
	proc_clear_maps(p);
	free(p->maps);
	hmap__free(&p->codes);
	free(p);
}

void callsites__forget(struct callsites *cs, __u32 tgid)
{
	struct cs_proc *p = cs ? hmap__remove(&cs->procs, tgid, 0) : NULL;

	if (p)
		proc_free(p);
}

void callsites__exec(struct callsites *cs, __u32 tgid)
{
	struct cs_proc *p;

	callsites__forget(cs, tgid);
	p = cs ? proc_get(cs, tgid) : NULL;
	if (!p)
		return;
	/* now: a short-lived image may be gone before its stacks are read */
	proc_read_maps(p);
	p->before_loader = true;
}

static struct cs_map *find_map(struct cs_proc *p, __u64 addr)
{
	size_t lo = 0, hi = p->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

static int send_objmap(struct cs_proc *p, struct cs_map *m, session_record_fn emit, void *ctx)
{
	union {
		struct sp_objmap_rec rec;
		unsigned char bytes[TF_MAX_RECORD];
	} u;
	size_t room = TF_MAX_RECORD - sizeof(u.rec) - 8;
	size_t len = strnlen(m->path, room), size = (sizeof(u.rec) + len + 1 + 7) & ~7ul;
	char open_path[PATH_MAX + 64];

	memset(&u, 0, size);
	u.rec.type = SP_REC_OBJMAP;
	u.rec.size = size;
	u.rec.tgid = p->tgid;
	u.rec.start = m->start;
	u.rec.end = m->end;
	u.rec.pgoff = m->pgoff;
	/* map_files reaches the mapped file even in another mount namespace */
	snprintf(open_path, sizeof(open_path), "/proc/%u/map_files/%llx-%llx", p->tgid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	if (m->path[0] == '/' && elfnote__build_id_file(open_path, u.rec.build_id))
		elfnote__build_id_file(m->path, u.rec.build_id);
	memcpy(u.bytes + sizeof(u.rec), m->path, len);
	m->sent = true;
	return emit(ctx, &u, size);
}

static int prepare_native(struct cs_proc *p, const __u64 *ips, __u32 nr, session_record_fn emit,
			  void *ctx)
{
	for (__u32 i = 0; i < nr; i++) {
		struct cs_map *m = find_map(p, ips[i]);
		int ret;

		if (!m && (p->before_loader || now_ns() - p->read_ns >= REREAD_NS)) {
			p->before_loader = false;
			proc_read_maps(p);
			m = find_map(p, ips[i]);
		}
		if (!m || m->sent)
			continue;
		ret = send_objmap(p, m, emit, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

static int prepare_python(struct cs_proc *p, const struct sp_py_frame *py, __u32 nr,
			  session_record_fn emit, void *ctx)
{
	static __u64 buf[TF_MAX_RECORD / 8];

	for (__u32 i = 0; i < nr; i++) {
		int len, ret;

		if (hmap__get(&p->codes, py[i].code, 0))
			continue;
		/* once, named or not: a code object that cannot be read now will not be later */
		if (hmap__set(&p->codes, py[i].code, 0, p))
			return 0;
		len = pycode__record(p->tgid, py[i].code, buf, sizeof(buf));
		if (len <= 0 || !callstack__pycode_ok((const void *)buf, len))
			continue;
		ret = emit(ctx, buf, len);
		if (ret)
			return ret;
	}
	return 0;
}

int callsites__prepare(struct callsites *cs, const void *rec, size_t size,
		       session_record_fn emit, void *ctx)
{
	const struct sp_stack_rec *st = rec;
	struct cs_proc *p;
	int ret;

	if (!callstack__stack_ok(st, size))
		return -EBADMSG;
	p = proc_get(cs, st->tgid);
	if (!p)
		return 0;	/* out of memory: the frames go out unnamed */
	if (!p->read_ns)
		proc_read_maps(p);
	ret = prepare_native(p, callstack__ips(st), st->nr_native, emit, ctx);
	if (!ret)
		ret = prepare_python(p, callstack__py(st), st->nr_py, emit, ctx);
	return ret;
}

void callsites__free(struct callsites *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; i < cs->procs.cap; i++)
		if (cs->procs.slots[i].value)
			proc_free(cs->procs.slots[i].value);
	hmap__free(&cs->procs);
	free(cs);
}
