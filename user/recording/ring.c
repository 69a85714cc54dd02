// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Bounded recordings as a ring of whole files. A file is never rewritten in
 * place: the newest is appended to, the oldest unlinked, so a recorder killed
 * at any point leaves files that each read up to their last whole record.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "ring.h"
#include "safepath.h"

#define RING_MSG_SIZE	1024
#define RING_PATH_SIZE	4096

/* What a run of segments held. */
struct seg_totals {
	__u64 calls, records, bytes, first_ts, last_ts;
};

struct tf_ring {
	char *base;
	int dirfd;			/* base's folder, held open: every segment is in it */
	char *name;			/* base's last component there */
	mode_t mode;
	__u64 max_bytes, seg_bytes;
	__u32 index;			/* the segment being written */
	__u32 oldest;			/* the oldest still on disk */
	struct tf_writer *w;
	__u64 seg_records;		/* records in the current segment after its preamble */
	struct tf_header hdr;		/* tables as they stand now: the next segment's header */
	unsigned char *state;		/* records each segment repeats (calibration, hostmem) */
	size_t state_len, state_cap;	/* of live processes only: an exit drops theirs */
	__u64 state_left_out;		/* state records a segment had no room for */
	struct seg_totals before;	/* segments 0 .. index-1 */
	struct seg_totals cur;
	struct seg_totals removed;	/* segments 0 .. oldest-1 */
	struct seg_totals kept[TF_RING_SEGMENTS + 1];	/* closed segments on disk, by index */
	__u64 bytes_closed;
	char msg[RING_MSG_SIZE];
};

__attribute__((format(printf, 2, 3)))
static int ring__fail(struct tf_ring *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	return -EIO;
}

static int ring__oom(struct tf_ring *r)
{
	ring__fail(r, "%s: out of memory", r->base);
	return -ENOMEM;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Records a segment cannot be read without, beyond the header's tables. */
static bool is_state(__u16 type)
{
	/*
	 * the code objects and mappings that stacks name, and the kernel names
	 * that GPU executions name, are described once, before use; an agent's
	 * state (the latest kept) says it is on, so calls after it are matched
	 */
	return type == SP_REC_CALIB || type == SP_REC_HOSTMEM || type == SP_REC_CLOCK ||
	       type == SP_REC_PYCODE || type == SP_REC_OBJMAP || type == SP_REC_RANK ||
	       type == SP_REC_GPU_NAME || type == SP_REC_GPU_STATE;
}

static int keep_state(struct tf_ring *r, const void *rec, size_t size)
{
	if (r->state_len + size > r->state_cap) {
		size_t cap = r->state_cap ? 2 * r->state_cap : 4096;
		unsigned char *grown;

		while (cap < r->state_len + size)
			cap *= 2;
		grown = realloc(r->state, cap);
		if (!grown)
			return -ENOMEM;
		r->state = grown;
		r->state_cap = cap;
	}
	memcpy(r->state + r->state_len, rec, size);
	r->state_len += size;
	return 0;
}

_Static_assert(offsetof(struct sp_gpu_name_rec, tgid) == offsetof(struct sp_hostmem_rec, tgid) &&
	       offsetof(struct sp_gpu_state_rec, tgid) == offsetof(struct sp_hostmem_rec, tgid),
	       "a GPU record's tgid is not where state_tgid reads it");

/* State that belongs to one process (its tgid follows type and size), 0 for the rest. */
static __u32 state_tgid(const struct sp_rec_hdr *h)
{
	if (h->type != SP_REC_HOSTMEM && h->type != SP_REC_PYCODE && h->type != SP_REC_OBJMAP &&
	    h->type != SP_REC_RANK && h->type != SP_REC_GPU_NAME && h->type != SP_REC_GPU_STATE)
		return 0;
	return ((const struct sp_hostmem_rec *)h)->tgid;
}

/* Which of a process's state records drop_state drops. */
enum state_part {
	STATE_ALL,		/* the process exited */
	STATE_PROGRAM,		/* it exec'd: what names its old program's code and kernels */
	STATE_GPU_STATE,	/* its agent's state: a newer one came */
};

static bool in_part(__u16 type, enum state_part part)
{
	switch (part) {
	case STATE_PROGRAM:
		return type == SP_REC_OBJMAP || type == SP_REC_PYCODE || type == SP_REC_GPU_NAME ||
		       type == SP_REC_GPU_STATE;
	case STATE_GPU_STATE:
		return type == SP_REC_GPU_STATE;
	default:
		return true;
	}
}

static void drop_state(struct tf_ring *r, __u32 tgid, enum state_part part)
{
	size_t kept = 0;

	for (size_t off = 0; off < r->state_len;) {
		const struct sp_rec_hdr *h = (const void *)(r->state + off);
		size_t size = h->size;

		if (state_tgid(h) != tgid || !in_part(h->type, part)) {
			memmove(r->state + kept, h, size);
			kept += size;
		}
		off += size;
	}
	r->state_len = kept;
}

/* A process exited: later segments need none of its state, tables or pid. */
static void forget_process(struct tf_ring *r, __u32 tgid)
{
	drop_state(r, tgid, STATE_ALL);
	tf_header__forget_tgid(&r->hdr, tgid);
	/* give back what churn left behind, keeping room to grow */
	if (r->state_cap > 4096 && r->state_len < r->state_cap / 4) {
		unsigned char *smaller = realloc(r->state, r->state_cap / 2);

		if (smaller) {
			r->state = smaller;
			r->state_cap /= 2;
		}
	}
}

static void count(struct seg_totals *t, const void *rec, size_t size)
{
	const struct sp_call_rec *c = rec;

	t->records++;
	if (c->type != SP_REC_CALL || size < sizeof(*c))
		return;
	t->calls++;
	if (!t->first_ts || c->ts < t->first_ts)
		t->first_ts = c->ts;
	if (c->ts > t->last_ts)
		t->last_ts = c->ts;
}

static void add_totals(struct seg_totals *sum, const struct seg_totals *t)
{
	sum->calls += t->calls;
	sum->records += t->records;
	sum->bytes += t->bytes;
	if (t->first_ts && (!sum->first_ts || t->first_ts < sum->first_ts))
		sum->first_ts = t->first_ts;
	if (t->last_ts > sum->last_ts)
		sum->last_ts = t->last_ts;
}

static int put(struct tf_ring *r, const void *rec, size_t size)
{
	int ret = tf_writer__write(r->w, rec, size);

	if (ret) {
		ring__fail(r, "%s", tf_writer__error(r->w));
		return ret;
	}
	count(&r->cur, rec, size);
	return 0;
}

/* What a segment's header and preamble take with state_len bytes of state. */
static __u64 preamble_bytes(const struct tf_ring *r, size_t state_len)
{
	return tf_header__size(&r->hdr) + (__u64)r->hdr.nr_procs * sizeof(struct sp_proc_rec) +
	       state_len + sizeof(struct sp_segment_rec);
}

/* Process state (oldest first) left out so the preamble takes half a segment at most. */
static int plan_preamble(struct tf_ring *r, __u64 *excess)
{
	__u64 room = r->seg_bytes / 2, need = preamble_bytes(r, r->state_len), fixed = need;

	for (size_t off = 0; off < r->state_len;) {
		const struct sp_rec_hdr *h = (const void *)(r->state + off);

		if (state_tgid(h))
			fixed -= h->size;
		off += h->size;
	}
	if (fixed > room)
		return ring__fail(r, "--max-size %llu is too small: the header of segment %u "
				  "takes %llu bytes, more than half of its %llu (%u mappings of live processes)",
				  (unsigned long long)r->max_bytes, r->index,
				  (unsigned long long)fixed, (unsigned long long)r->seg_bytes,
				  r->hdr.nr_maps);
	*excess = need > room ? need - room : 0;
	return 0;
}

/*
 * The pids of processes in other namespaces, then the kept state (less the
 * oldest process state when excess says so, counted), then the segment record.
 */
static int put_preamble(struct tf_ring *r, __u64 excess)
{
	struct sp_segment_rec seg = {
		.type = SP_REC_SEGMENT, .size = sizeof(seg), .index = r->index, .ts = now_ns(),
		.prior_calls = r->before.calls, .prior_records = r->before.records,
		.prior_bytes = r->before.bytes, .prior_first_ts = r->before.first_ts,
		.prior_last_ts = r->before.last_ts, .max_bytes = r->max_bytes,
	};
	int ret = 0;

	for (__u32 i = 0; i < r->hdr.nr_procs && !ret; i++) {
		struct sp_proc_rec p = { .type = SP_REC_PROC, .size = sizeof(p),
					 .tgid = r->hdr.procs[i].tgid, .ts = seg.ts,
					 .ns_pid = r->hdr.procs[i].ns_pid };

		ret = put(r, &p, sizeof(p));
	}
	for (size_t off = 0; off < r->state_len && !ret;) {
		const struct sp_rec_hdr *h = (const void *)(r->state + off);

		off += h->size;
		if (excess && state_tgid(h)) {
			excess = excess > h->size ? excess - h->size : 0;
			r->state_left_out++;
			continue;
		}
		ret = put(r, h, h->size);
	}
	return ret ? ret : put(r, &seg, sizeof(seg));
}

static int open_segment(struct tf_ring *r, bool force)
{
	char path[RING_PATH_SIZE], name[NAME_MAX + 1], err[RING_MSG_SIZE];
	__u64 excess = 0;
	int ret;

	/* never a file past its share: what cannot fit is left out before it is created */
	ret = plan_preamble(r, &excess);
	if (ret)
		return ret;
	tf_segment_path(path, sizeof(path), r->base, r->index);
	tf_segment_path(name, sizeof(name), r->name, r->index);
	r->w = tf_writer__create_at(r->dirfd, name, path, force, r->mode, &r->hdr, err,
				    sizeof(err));
	if (!r->w)
		return ring__fail(r, "%s", err);
	r->cur = (struct seg_totals){ 0 };
	ret = put_preamble(r, excess);
	r->seg_records = 0;
	/* on disk at once: a recorder killed now leaves a segment that reads */
	if (!ret && tf_writer__flush(r->w))
		ret = ring__fail(r, "%s", tf_writer__error(r->w));
	return ret;
}

static int remove_oldest(struct tf_ring *r)
{
	char path[RING_PATH_SIZE], name[NAME_MAX + 1];

	while (r->index - r->oldest >= TF_RING_SEGMENTS) {
		tf_segment_path(path, sizeof(path), r->base, r->oldest);
		tf_segment_path(name, sizeof(name), r->name, r->oldest);
		if (unlinkat(r->dirfd, name, 0) && errno != ENOENT)
			return ring__fail(r, "removing %s: %s", path, strerror(errno));
		add_totals(&r->removed, &r->kept[r->oldest % (TF_RING_SEGMENTS + 1)]);
		r->oldest++;
	}
	return 0;
}

/*
 * Close the segment being written and start the next one. The oldest goes
 * first, so the files never hold more than the budget, not even for a moment.
 */
static int rotate(struct tf_ring *r)
{
	int ret = tf_writer__close(r->w);

	if (ret)
		return ring__fail(r, "%s", tf_writer__error(r->w));
	r->cur.bytes = tf_writer__bytes(r->w);
	r->bytes_closed += r->cur.bytes;
	add_totals(&r->before, &r->cur);
	r->kept[r->index % (TF_RING_SEGMENTS + 1)] = r->cur;
	tf_writer__free(r->w);
	r->w = NULL;
	r->index++;
	ret = remove_oldest(r);
	return ret ? ret : open_segment(r, false);
}

/* Remove name in dirfd when it is a regular file (never through a symlink); 0 or -errno. */
static int remove_old(int dirfd, const char *name)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISREG(st.st_mode))
		return -EEXIST;
	return unlinkat(dirfd, name, 0) ? -errno : 0;
}

/* A BASE.N or BASE.hung-K.N name: a segment or a dump of an earlier ring. */
static bool old_ring_name(const char *name, const char *base)
{
	size_t len = strlen(base);
	const char *p = name + len + 1;

	if (strncmp(name, base, len) || name[len] != '.')
		return false;
	if (!strncmp(p, "hung-", 5)) {
		p += 5;
		p += strspn(p, "0123456789");
		if (*p++ != '.')
			return false;
	}
	return *p && strspn(p, "0123456789") == strlen(p);
}

/* "BASE.N": name with base's folder as the user gave it. */
static void shown_path(char *dst, size_t dst_sz, const struct tf_ring *r, const char *name)
{
	const char *slash = strrchr(r->base, '/');

	snprintf(dst, dst_sz, "%.*s%s", slash ? (int)(slash - r->base) + 1 : 0, r->base, name);
}

/* Without force, any earlier ring of base is an error; with it, its files go. */
static int clear_old(struct tf_ring *r, bool force)
{
	char path[RING_PATH_SIZE + 256];
	int fd = openat(r->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;

	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return ring__fail(r, "opening the folder of %s: %s", r->base, strerror(-ret));
	}
	while (!ret && (de = readdir(d))) {
		if (strcmp(de->d_name, r->name) && !old_ring_name(de->d_name, r->name))
			continue;
		shown_path(path, sizeof(path), r, de->d_name);
		if (!force)
			ret = ring__fail(r, "%s exists: use --force to overwrite", path);
		else if ((ret = remove_old(r->dirfd, de->d_name)) == -EEXIST)
			ring__fail(r, "%s is not a regular file: refusing to replace it", path);
		else if (ret)
			ring__fail(r, "removing %s: %s", path, strerror(-ret));
	}
	closedir(d);
	return ret ? -EEXIST : 0;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The folder a path's last component is in. */
static void folder_name(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');

	snprintf(dir, size, "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
}

bool tf_ring__names(const char *base, const char *path)
{
	const char *slash = strrchr(base, '/');
	const char *name = slash ? slash + 1 : base;
	char dir[RING_PATH_SIZE];
	struct stat out, st;
	struct dirent *de;
	bool found;
	DIR *d;

	if (stat(path, &out))
		return false;
	found = !stat(base, &st) && same_file(&st, &out);
	folder_name(base, dir, sizeof(dir));
	d = opendir(dir);
	while (!found && d && (de = readdir(d))) {
		if (tf_segment_number(de->d_name, name) < 0)
			continue;
		found = !fstatat(dirfd(d), de->d_name, &st, 0) && same_file(&st, &out);
	}
	if (d)
		closedir(d);
	return found;
}

static int folder_of(const char *path, struct stat *st)
{
	char dir[RING_PATH_SIZE];

	folder_name(path, dir, sizeof(dir));
	return stat(dir, st);
}

bool tf_ring__claims(const char *base, const char *path)
{
	const char *b = strrchr(base, '/'), *p = strrchr(path, '/');
	struct stat bdir, pdir;

	b = b ? b + 1 : base;
	p = p ? p + 1 : path;
	if (strcmp(p, b) && tf_segment_number(p, b) < 0)
		return false;
	return !folder_of(base, &bdir) && !folder_of(path, &pdir) && same_file(&bdir, &pdir);
}

struct tf_ring *tf_ring__create(const char *base, bool force, mode_t mode,
				const struct tf_header *hdr, __u64 max_bytes, char *err,
				size_t err_sz)
{
	struct tf_ring *r = calloc(1, sizeof(*r));
	struct safepath sp;

	if (!r || !(r->base = strdup(base)) || tf_header__copy(&r->hdr, hdr)) {
		snprintf(err, err_sz, "%s: out of memory", base);
		free(r ? r->base : NULL);
		free(r);
		return NULL;
	}
	r->dirfd = -1;
	if (safepath__resolve(base, false, &sp, r->msg, sizeof(r->msg)))
		goto fail;
	r->dirfd = sp.dirfd;
	r->name = strdup(sp.name);
	if (!r->name) {
		ring__oom(r);
		goto fail;
	}
	r->mode = mode;
	r->max_bytes = max_bytes;
	r->seg_bytes = max_bytes / TF_RING_SEGMENTS;
	/* the header and state come again in every segment: they must leave room for calls */
	if (clear_old(r, force) || open_segment(r, false))
		goto fail;
	return r;
fail:
	snprintf(err, err_sz, "%s", r->msg);
	tf_ring__free(r);
	return NULL;
}

int tf_ring__write(struct tf_ring *r, const void *rec, size_t size)
{
	const struct sp_rec_hdr *h = rec;
	int ret;

	if (!r->w)
		return -EBADF;
	if (tf_writer__bytes(r->w) + size > r->seg_bytes) {
		/* a preamble takes half a segment at most, a record TF_MAX_RECORD: it fits */
		ret = r->seg_records ? rotate(r) : -EFBIG;
		if (ret == -EFBIG)
			return ring__fail(r, "%s: a record of %zu bytes after a preamble of %llu "
					  "would pass the segment's %llu", r->base, size,
					  (unsigned long long)tf_writer__bytes(r->w),
					  (unsigned long long)r->seg_bytes);
		if (ret)
			return ret;
	}
	if (size >= sizeof(*h) && h->type >= SP_REC_LIB && h->type <= SP_REC_PROC &&
	    tf_header__apply(&r->hdr, rec, size) == -ENOMEM)
		return ring__oom(r);
	if (size >= sizeof(struct sp_gpu_state_rec) && h->type == SP_REC_GPU_STATE)
		drop_state(r, ((const struct sp_gpu_state_rec *)rec)->tgid, STATE_GPU_STATE);
	if (size >= sizeof(*h) && is_state(h->type) && keep_state(r, rec, size))
		return ring__oom(r);
	ret = put(r, rec, size);
	if (!ret)
		r->seg_records++;
	if (!ret && size >= sizeof(struct sp_exit_rec) && h->type == SP_REC_EXIT)
		forget_process(r, ((const struct sp_exit_rec *)rec)->tgid);
	/* the new program's mappings, code objects and kernel names follow: the old would misname */
	if (!ret && size >= sizeof(struct sp_exec_rec) && h->type == SP_REC_EXEC)
		drop_state(r, ((const struct sp_exec_rec *)rec)->tgid, STATE_PROGRAM);
	return ret;
}

int tf_ring__flush(struct tf_ring *r)
{
	int ret = r->w ? tf_writer__flush(r->w) : -EBADF;

	if (ret && r->w)
		ring__fail(r, "%s", tf_writer__error(r->w));
	return ret;
}

int tf_ring__close(struct tf_ring *r)
{
	int ret;

	if (!r->w)
		return 0;
	ret = tf_writer__close(r->w);
	if (ret)
		ring__fail(r, "%s", tf_writer__error(r->w));
	r->bytes_closed += tf_writer__bytes(r->w);
	tf_writer__free(r->w);
	r->w = NULL;
	return ret;
}

int tf_ring__dump(struct tf_ring *r, const char *suffix)
{
	char from[NAME_MAX + 1], to[NAME_MAX + 1], dump[NAME_MAX + 1], path[RING_PATH_SIZE];
	__u32 last = r->index;
	int ret = r->w ? rotate(r) : -EBADF;

	if (ret)
		return ret;
	snprintf(dump, sizeof(dump), "%s%s", r->name, suffix);
	for (__u32 i = r->oldest; i <= last; i++) {
		tf_segment_path(from, sizeof(from), r->name, i);
		tf_segment_path(to, sizeof(to), dump, i);
		if (linkat(r->dirfd, from, r->dirfd, to, 0)) {
			ret = -errno;
			shown_path(path, sizeof(path), r, to);
			ring__fail(r, "linking %s to %s.%u: %s", path, r->base, i,
				   strerror(-ret));
			return ret;
		}
	}
	return last - r->oldest + 1;
}

const char *tf_ring__error(const struct tf_ring *r)
{
	return r ? r->msg : "";
}

__u64 tf_ring__bytes(const struct tf_ring *r)
{
	return r->bytes_closed + (r->w ? tf_writer__bytes(r->w) : 0);
}

__u64 tf_ring__left_out(const struct tf_ring *r)
{
	return r->state_left_out;
}

__u32 tf_ring__rotated(const struct tf_ring *r, __u64 *calls)
{
	if (calls)
		*calls = r->removed.calls;
	return r->oldest;
}

void tf_ring__free(struct tf_ring *r)
{
	if (!r)
		return;
	tf_writer__free(r->w);
	tf_header__free(&r->hdr);
	if (r->dirfd >= 0)
		close(r->dirfd);
	free(r->state);
	free(r->name);
	free(r->base);
	free(r);
}
