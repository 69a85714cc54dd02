// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "callstack.h"
#include "hmap.h"
#include "symtab.h"

#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

bool callstack__stack_ok(const struct sp_stack_rec *rec, size_t size)
{
	if (size < sizeof(*rec) || rec->type != SP_REC_STACK || rec->size != size)
		return false;
	if (rec->nr_native > SP_STACK_NATIVE || rec->nr_py > SP_STACK_PY)
		return false;
	return size == sizeof(*rec) + 8 * rec->nr_native + sizeof(struct sp_py_frame) * rec->nr_py;
}

/* Bytes of the file and name, padded: where the line table starts. */
static size_t pycode_lines_at(const struct sp_pycode_rec *rec)
{
	return ALIGN8(sizeof(*rec) + (size_t)rec->file_len + rec->name_len);
}

bool callstack__pycode_ok(const struct sp_pycode_rec *rec, size_t size)
{
	const char *file = (const char *)(rec + 1);

	if (size < sizeof(*rec) || rec->type != SP_REC_PYCODE || rec->size != size)
		return false;
	if (!rec->file_len || !rec->name_len || pycode_lines_at(rec) > size)
		return false;
	if ((size - pycode_lines_at(rec)) / sizeof(struct sp_pyline) != rec->nr_lines ||
	    (size - pycode_lines_at(rec)) % sizeof(struct sp_pyline))
		return false;
	return file[rec->file_len - 1] == '\0' && file[rec->file_len + rec->name_len - 1] == '\0';
}

bool callstack__objmap_ok(const struct sp_objmap_rec *rec, size_t size)
{
	const char *path = (const char *)(rec + 1);

	if (size <= sizeof(*rec) || rec->type != SP_REC_OBJMAP || rec->size != size)
		return false;
	if (rec->start >= rec->end || rec->build_id[sizeof(rec->build_id) - 1] != '\0')
		return false;
	return memchr(path, '\0', size - sizeof(*rec)) != NULL;
}

const char *callstack__pycode_file(const struct sp_pycode_rec *rec)
{
	return (const char *)(rec + 1);
}

const char *callstack__pycode_name(const struct sp_pycode_rec *rec)
{
	return (const char *)(rec + 1) + rec->file_len;
}

const struct sp_pyline *callstack__pycode_lines(const struct sp_pycode_rec *rec)
{
	return (const struct sp_pyline *)((const char *)rec + pycode_lines_at(rec));
}

int callstack__pycode_line(const struct sp_pycode_rec *rec, __u32 instr)
{
	const struct sp_pyline *lines = callstack__pycode_lines(rec);
	size_t lo = 0, hi = rec->nr_lines;

	/* the last entry starting at or before instr (entries go up by instr) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (lines[mid].instr <= instr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lines[lo - 1].line : -1;
}

/* A mapped object, named once per path and build id. */
struct cs_object {
	char *path;
	char build_id[41];
	struct symtab *syms;	/* NULL: unsymbolised */
};

struct cs_objmap {
	__u64 start, end, pgoff;
	struct cs_object *obj;
};

struct cs_proc {
	struct cs_objmap *maps;	/* by start */
	size_t nr;
	__u32 image;		/* execve calls seen */
};

struct callstacks {
	struct hmap procs;	/* (tgid, 0) -> struct cs_proc */
	struct hmap objects;	/* (hash of path and build id, 0) -> struct cs_object */
	struct hmap codes;	/* (tgid, code) -> a copy of its SP_REC_PYCODE */
	struct hmap by_frames;	/* (tgid, hash of the frames) -> id as a pointer */
	struct hmap by_start;	/* (tid, hash of the innermost frames) -> the newest whole stack */
	struct cs_stack *stacks;
	__u32 nr_stacks, cap_stacks;
	struct cs_site *sites;
	__u32 nr_sites, cap_sites;
	struct hmap site_ids;	/* (hash of the label, 0) -> index + 1 as a pointer */
	void **retired;		/* code records replaced: named frames still point into them */
	size_t nr_retired;
};

static __u64 hash_bytes(__u64 h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

#define HASH_SEED 0xcbf29ce484222325ull

struct callstacks *callstacks__new(void)
{
	return calloc(1, sizeof(struct callstacks));
}

static struct cs_object *object_get(struct callstacks *db, const char *path, const char *build_id)
{
	__u64 key = hash_bytes(hash_bytes(HASH_SEED, path, strlen(path) + 1), build_id,
			       strlen(build_id));
	struct cs_object *o = hmap__get(&db->objects, key, 0);

	if (o)
		return o;
	o = calloc(1, sizeof(*o));
	if (!o || !(o->path = strdup(path)) || hmap__set(&db->objects, key, 0, o)) {
		if (o)
			free(o->path);
		free(o);
		return NULL;
	}
	snprintf(o->build_id, sizeof(o->build_id), "%s", build_id);
	/* by path on this host: named only when it is the same build */
	if (path[0] == '/')
		o->syms = symtab__load(path, build_id);
	return o;
}

static struct cs_proc *proc_get(struct callstacks *db, __u32 tgid)
{
	struct cs_proc *p = hmap__get(&db->procs, tgid, 0);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p || hmap__set(&db->procs, tgid, 0, p)) {
		free(p);
		return NULL;
	}
	return p;
}

static __u32 image_of(const struct callstacks *db, __u32 tgid)
{
	const struct cs_proc *p = hmap__get(&db->procs, tgid, 0);

	return p ? p->image : 0;
}

static int feed_objmap(struct callstacks *db, const struct sp_objmap_rec *rec)
{
	struct cs_proc *p = proc_get(db, rec->tgid);
	struct cs_objmap *grown;
	size_t at;

	if (!p)
		return -ENOMEM;
	grown = realloc(p->maps, (p->nr + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	p->maps = grown;
	for (at = p->nr; at > 0 && p->maps[at - 1].start > rec->start; at--)
		p->maps[at] = p->maps[at - 1];
	p->maps[at] = (struct cs_objmap){ rec->start, rec->end, rec->pgoff, NULL };
	p->nr++;
	p->maps[at].obj = object_get(db, (const char *)(rec + 1), rec->build_id);
	return p->maps[at].obj ? 0 : -ENOMEM;
}

static int feed_pycode(struct callstacks *db, const struct sp_pycode_rec *rec)
{
	void *old = hmap__get(&db->codes, rec->tgid, rec->code), *copy = malloc(rec->size);
	void **retired = realloc(db->retired, (db->nr_retired + 1) * sizeof(*retired));

	if (retired)
		db->retired = retired;
	if (!copy || !retired) {
		free(copy);
		return -ENOMEM;
	}
	memcpy(copy, rec, rec->size);
	/* a later record of the same address is a new code object there: it wins */
	if (hmap__set(&db->codes, rec->tgid, rec->code, copy)) {
		free(copy);
		return -ENOMEM;
	}
	if (old)
		db->retired[db->nr_retired++] = old;
	return 0;
}

int callstacks__feed(struct callstacks *db, const void *rec, size_t size)
{
	const struct sp_rec_hdr *h = rec;

	if (size < sizeof(*h))
		return -EBADMSG;
	if (h->type == SP_REC_OBJMAP)
		return callstack__objmap_ok(rec, size) ? feed_objmap(db, rec) : -EBADMSG;
	if (h->type == SP_REC_PYCODE)
		return callstack__pycode_ok(rec, size) ? feed_pycode(db, rec) : -EBADMSG;
	return 0;
}

/* The code objects of tgid's old program: retired, as frames named earlier point into them. */
static int retire_codes(struct callstacks *db, __u32 tgid)
{
	for (size_t i = 0; i < db->codes.cap;) {
		struct hmap_slot *s = &db->codes.slots[i];
		void **retired;

		if (!s->value || s->a != tgid) {
			i++;
			continue;
		}
		retired = realloc(db->retired, (db->nr_retired + 1) * sizeof(*retired));
		if (!retired)
			return -ENOMEM;
		db->retired = retired;
		/* a removal moves a later entry into slot i: it is looked at next */
		db->retired[db->nr_retired++] = hmap__remove(&db->codes, s->a, s->b);
	}
	return 0;
}

int callstacks__exec(struct callstacks *db, __u32 tgid)
{
	struct cs_proc *p = proc_get(db, tgid);

	if (!p)
		return -ENOMEM;
	/* mappings the old program had, in the new one's addresses, would name them wrong */
	p->nr = 0;
	p->image++;
	return retire_codes(db, tgid);
}

static const struct cs_objmap *find_objmap(const struct cs_proc *p, __u64 addr)
{
	size_t lo = 0, hi = p ? p->nr : 0;

	while (lo < hi) {	/* the last mapping starting at or before addr */
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < p->maps[lo - 1].end ? &p->maps[lo - 1] : NULL;
}

static void name_native(const struct callstacks *db, __u32 tgid, __u64 addr, struct cs_native *f)
{
	const struct cs_objmap *m = find_objmap(hmap__get(&db->procs, tgid, 0), addr);
	__u64 off;

	*f = (struct cs_native){ .addr = addr, .offset = addr };
	if (!m)
		return;
	off = addr - m->start + m->pgoff;
	f->object = m->obj->path;
	f->offset = off;
	f->symbol = symtab__lookup(m->obj->syms, off, &f->offset);
	if (!f->symbol)
		f->offset = off;
}

static void name_python(const struct callstacks *db, __u32 tgid, const struct sp_py_frame *in,
			struct cs_python *f)
{
	const struct sp_pycode_rec *code = hmap__get(&db->codes, tgid, in->code);

	*f = (struct cs_python){ .code = in->code, .instr = in->instr, .line = -1 };
	if (!code)
		return;
	f->file = callstack__pycode_file(code);
	f->function = callstack__pycode_name(code);
	f->line = callstack__pycode_line(code, in->instr);
}

/* libcuda.so* and libnccl.so*: the driver's own frames say nothing of the caller. */
static bool driver_object(const char *path)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	base = base ? base + 1 : path;
	return base && (!strncmp(base, "libcuda.so", 10) || !strncmp(base, "libnccl.so", 10));
}

/*
 * PyTorch's own Python (torch.cuda.synchronize, tensor methods written in
 * Python): the line a user can change is its caller's.
 */
static bool framework_file(const char *file)
{
	return strstr(file, "-packages/torch/") != NULL;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static void site_label(char *buf, size_t size, const struct cs_python *py,
		       const struct cs_native *nat)
{
	int n = 0;

	if (py)
		n = snprintf(buf, size, "%s:%d (%s)", py->file, py->line, py->function);
	if (n < 0 || (size_t)n >= size)
		return;
	if (!nat && !py)
		snprintf(buf, size, "?");
	else if (nat && nat->symbol)
		snprintf(buf + n, size - n, "%s%s+0x%llx (%s)", py ? " · " : "", nat->symbol,
			 (unsigned long long)nat->offset, base_name(nat->object));
	else if (nat && nat->object)
		snprintf(buf + n, size - n, "%s%s+0x%llx", py ? " · " : "", base_name(nat->object),
			 (unsigned long long)nat->offset);
	else if (nat)
		snprintf(buf + n, size - n, "%s0x%llx", py ? " · " : "",
			 (unsigned long long)nat->addr);
}

/* The site of a named stack: its index + 1, 0 when out of memory. */
static __u32 site_of(struct callstacks *db, const struct cs_stack *st)
{
	const struct cs_python *py = NULL;
	const struct cs_native *nat = NULL;
	char label[1024];
	__u64 key;
	void *id;

	for (__u32 i = 0; i < st->nr_py && !py; i++)
		if (st->py[i].file && !framework_file(st->py[i].file))
			py = &st->py[i];
	for (__u32 i = 0; i < st->nr_py && !py; i++)
		if (st->py[i].file)
			py = &st->py[i];
	for (__u32 i = 0; i < st->nr_native && !nat; i++)
		if (!driver_object(st->native[i].object))
			nat = &st->native[i];
	site_label(label, sizeof(label), py, nat);
	key = hash_bytes(HASH_SEED, label, strlen(label));
	id = hmap__get(&db->site_ids, key, 0);
	if (id)
		return (__u32)(unsigned long)id;
	if (db->nr_sites == db->cap_sites) {
		__u32 cap = db->cap_sites ? 2 * db->cap_sites : 64;
		struct cs_site *grown = realloc(db->sites, cap * sizeof(*grown));

		if (!grown)
			return 0;
		db->sites = grown;
		db->cap_sites = cap;
	}
	db->sites[db->nr_sites] = (struct cs_site){ py, nat, strdup(label) };
	if (!db->sites[db->nr_sites].label ||
	    hmap__set(&db->site_ids, key, 0, (void *)(unsigned long)(db->nr_sites + 1))) {
		free(db->sites[db->nr_sites].label);
		return 0;
	}
	return ++db->nr_sites;
}

static int name_stack(struct callstacks *db, const struct sp_stack_rec *rec, struct cs_stack *st)
{
	*st = (struct cs_stack){ .tgid = rec->tgid, .nr_native = rec->nr_native,
				 .nr_py = rec->nr_py, .image = image_of(db, rec->tgid) };
	st->native = calloc(rec->nr_native + 1, sizeof(*st->native));
	st->py = calloc(rec->nr_py + 1, sizeof(*st->py));
	if (!st->native || !st->py)
		return -ENOMEM;
	for (__u32 i = 0; i < rec->nr_native; i++)
		name_native(db, rec->tgid, callstack__ips(rec)[i], &st->native[i]);
	for (__u32 i = 0; i < rec->nr_py; i++)
		name_python(db, rec->tgid, &callstack__py(rec)[i], &st->py[i]);
	st->site = site_of(db, st);
	return st->site ? 0 : -ENOMEM;
}

static bool same_frames(const struct cs_stack *st, const struct sp_stack_rec *rec, __u32 image)
{
	if (st->tgid != rec->tgid || st->image != image || st->nr_native != rec->nr_native ||
	    st->nr_py != rec->nr_py)
		return false;
	for (__u32 i = 0; i < rec->nr_native; i++)
		if (st->native[i].addr != callstack__ips(rec)[i])
			return false;
	for (__u32 i = 0; i < rec->nr_py; i++)
		if (st->py[i].code != callstack__py(rec)[i].code ||
		    st->py[i].instr != callstack__py(rec)[i].instr)
			return false;
	return true;
}

/* Frames of one program: the same addresses after an execve are other code. */
static __u64 frames_hash(const struct sp_stack_rec *rec, __u32 image)
{
	return hash_bytes(hash_bytes(HASH_SEED, &image, sizeof(image)), rec + 1,
			  rec->size - sizeof(*rec));
}

/* The frames BPF knows a repeated call site by (struct stack_key), hashed. */
static __u64 start_hash(const struct sp_stack_rec *rec, __u32 image)
{
	__u32 nr = rec->nr_native < SP_STACK_KEY_NATIVE ? rec->nr_native : SP_STACK_KEY_NATIVE;
	__u32 nr_py = rec->nr_py < SP_STACK_KEY_PY ? rec->nr_py : SP_STACK_KEY_PY;
	__u64 h = hash_bytes(hash_bytes(HASH_SEED, &image, sizeof(image)), callstack__ips(rec),
			     8 * (size_t)nr);

	h = hash_bytes(h, &nr, sizeof(nr));
	h = hash_bytes(h, callstack__py(rec), sizeof(struct sp_py_frame) * nr_py);
	return hash_bytes(h, &nr_py, sizeof(nr_py));
}

static __u32 intern_frames(struct callstacks *db, const struct sp_stack_rec *rec, __u32 image);

/*
 * A repeated site (SP_STACK_SAME) gets the thread's newest whole stack that
 * starts with its frames; without one (lost, or rotated out of a bounded
 * recording) it keeps the frames it has.
 */
__u32 callstacks__intern(struct callstacks *db, const struct sp_stack_rec *rec)
{
	__u32 image = image_of(db, rec->tgid), id;
	__u64 start = start_hash(rec, image);

	if (rec->flags & SP_STACK_SAME) {
		id = (__u32)(unsigned long)hmap__get(&db->by_start, rec->tid, start);
		if (id && db->stacks[id - 1].tgid == rec->tgid && db->stacks[id - 1].image == image)
			return id;
		return intern_frames(db, rec, image);
	}
	id = intern_frames(db, rec, image);
	if (id && hmap__set(&db->by_start, rec->tid, start, (void *)(unsigned long)id))
		return 0;
	return id;
}

static __u32 intern_frames(struct callstacks *db, const struct sp_stack_rec *rec, __u32 image)
{
	__u64 key = frames_hash(rec, image);
	__u32 id = (__u32)(unsigned long)hmap__get(&db->by_frames, rec->tgid, key);
	struct cs_stack *st;

	if (id && same_frames(&db->stacks[id - 1], rec, image))
		return id;
	if (db->nr_stacks == db->cap_stacks) {
		__u32 cap = db->cap_stacks ? 2 * db->cap_stacks : 256;
		struct cs_stack *grown = realloc(db->stacks, cap * sizeof(*grown));

		if (!grown)
			return 0;
		db->stacks = grown;
		db->cap_stacks = cap;
	}
	st = &db->stacks[db->nr_stacks];
	if (name_stack(db, rec, st)) {
		free(st->native);
		free(st->py);
		return 0;
	}
	id = ++db->nr_stacks;
	/* a hash shared by other frames keeps the first: the later are only not shared */
	if (!hmap__get(&db->by_frames, rec->tgid, key))
		hmap__set(&db->by_frames, rec->tgid, key, (void *)(unsigned long)id);
	return id;
}

const struct cs_stack *callstacks__stack(const struct callstacks *db, __u32 id)
{
	return db && id && id <= db->nr_stacks ? &db->stacks[id - 1] : NULL;
}

const struct cs_site *callstacks__site(const struct callstacks *db, __u32 site)
{
	return db && site && site <= db->nr_sites ? &db->sites[site - 1] : NULL;
}

__u32 callstacks__nr_sites(const struct callstacks *db)
{
	return db ? db->nr_sites : 0;
}

static void free_values(struct hmap *m, void (*fn)(void *))
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].value)
			fn(m->slots[i].value);
	hmap__free(m);
}

static void free_proc(void *value)
{
	free(((struct cs_proc *)value)->maps);
	free(value);
}

static void free_object(void *value)
{
	struct cs_object *o = value;

	symtab__free(o->syms);
	free(o->path);
	free(o);
}

void callstacks__free(struct callstacks *db)
{
	if (!db)
		return;
	for (__u32 i = 0; i < db->nr_stacks; i++) {
		free(db->stacks[i].native);
		free(db->stacks[i].py);
	}
	for (__u32 i = 0; i < db->nr_sites; i++)
		free(db->sites[i].label);
	for (size_t i = 0; i < db->nr_retired; i++)
		free(db->retired[i]);
	free(db->retired);
	free(db->stacks);
	free(db->sites);
	free_values(&db->procs, free_proc);
	free_values(&db->objects, free_object);
	free_values(&db->codes, free);
	hmap__free(&db->by_frames);
	hmap__free(&db->by_start);
	hmap__free(&db->site_ids);
	free(db);
}
