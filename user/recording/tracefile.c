// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Recording files. Layout: TF_MAGIC, u32 version, u32 header_body_len, the
 * header body, then records back to back as the writer was given them.
 *
 * The header body is little-endian: host, kernel, mono_ns, realtime_ns,
 * attach_start_ns, attach_done_ns, then the targets, libs, probes and maps
 * arrays. A string is a u32 length and its bytes (no NUL); an array is a u32
 * count and its elements. The body ends with up to 7 zero bytes so that
 * records start 8-aligned and can be read in place from the mapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "callstack.h"
#include "tracefile.h"
#include "specprobe.h"

#define TF_BUF_SIZE	(1u << 20)
#define TF_PREAMBLE	16	/* magic, version, header_body_len */
#define TF_ALIGN	8	/* records hold __u64 fields */
#define TF_MSG_SIZE	1024

/* Smallest encoding of one array element, to bound counts by the bytes left. */
#define TF_MIN_TARGET	4
#define TF_MIN_LIB	(4 + 4 + 8 + 8 + 4)
#define TF_MIN_PROBE	(4 + 4 + 4 + 8 + 8)
#define TF_MIN_MAP	(4 + 4 + 8 + 8 + 8)

struct tf_writer {
	int fd;			/* -1 once closed */
	int err;		/* first write error; every later call returns it */
	char *path;
	unsigned char *buf;
	size_t used;
	__u64 bytes;		/* accepted so far, header included */
	char msg[TF_MSG_SIZE];
};

struct tf_reader {
	const unsigned char *map;
	size_t size;
	size_t off;		/* next record */
	size_t dropped;		/* pages before it were given back */
	char *path;
	struct tf_header hdr;
	char msg[TF_MSG_SIZE];
	union {
		__u64 align;
		unsigned char bytes[TF_MAX_RECORD];
	} copy;			/* a record found at an unaligned offset */
};

__attribute__((format(printf, 3, 4)))
static void put_msg(char *dst, size_t dst_sz, const char *fmt, ...)
{
	va_list ap;

	if (!dst || !dst_sz)
		return;
	va_start(ap, fmt);
	vsnprintf(dst, dst_sz, fmt, ap);
	va_end(ap);
}

/* Header encoding; with data == NULL only the length is counted. */
struct enc {
	unsigned char *data;
	size_t len;
};

static void enc__bytes(struct enc *e, const void *src, size_t n)
{
	if (e->data && n)
		memcpy(e->data + e->len, src, n);
	e->len += n;
}

static void enc__u32(struct enc *e, __u32 v)
{
	unsigned char b[4];

	for (int i = 0; i < 4; i++)
		b[i] = v >> (8 * i);
	enc__bytes(e, b, sizeof(b));
}

static void enc__u64(struct enc *e, __u64 v)
{
	enc__u32(e, (__u32)v);
	enc__u32(e, (__u32)(v >> 32));
}

static void enc__str(struct enc *e, const char *s, size_t max_len)
{
	size_t len = s ? strnlen(s, max_len) : 0;

	enc__u32(e, len);
	enc__bytes(e, s, len);
}

static void enc__lib(struct enc *e, const struct tf_lib *lib)
{
	enc__str(e, lib->path, UINT32_MAX);
	enc__str(e, lib->build_id, sizeof(lib->build_id) - 1);
	enc__u64(e, lib->dev);
	enc__u64(e, lib->ino);
	enc__u32(e, lib->kind);
}

static void enc__probe(struct enc *e, const struct tf_probe *p)
{
	enc__str(e, p->symbol, UINT32_MAX);
	enc__u32(e, p->lib);
	enc__u32(e, p->catalog);
	enc__u64(e, p->offset);
	enc__u64(e, p->vaddr);
}

static void enc__map(struct enc *e, const struct tf_map *m)
{
	enc__u32(e, m->tgid);
	enc__u32(e, m->lib);
	enc__u64(e, m->start);
	enc__u64(e, m->end);
	enc__u64(e, m->pgoff);
}

static void enc__header(struct enc *e, const struct tf_header *h)
{
	static const unsigned char zero;

	enc__str(e, h->host, sizeof(h->host) - 1);
	enc__str(e, h->kernel, sizeof(h->kernel) - 1);
	enc__u64(e, h->mono_ns);
	enc__u64(e, h->realtime_ns);
	enc__u64(e, h->attach_start_ns);
	enc__u64(e, h->attach_done_ns);
	enc__u32(e, h->nr_targets);
	for (__u32 i = 0; i < h->nr_targets; i++)
		enc__u32(e, h->targets[i]);
	enc__u32(e, h->nr_libs);
	for (__u32 i = 0; i < h->nr_libs; i++)
		enc__lib(e, &h->libs[i]);
	enc__u32(e, h->nr_probes);
	for (__u32 i = 0; i < h->nr_probes; i++)
		enc__probe(e, &h->probes[i]);
	enc__u32(e, h->nr_maps);
	for (__u32 i = 0; i < h->nr_maps; i++)
		enc__map(e, &h->maps[i]);
	while (e->len % TF_ALIGN)
		enc__bytes(e, &zero, 1);
}

static int writer__fail(struct tf_writer *w, int err, const char *what)
{
	w->err = err;
	put_msg(w->msg, sizeof(w->msg), "%s %s: %s", what, w->path, strerror(-err));
	return err;
}

static int writer__flush(struct tf_writer *w)
{
	size_t done = 0;

	while (done < w->used) {
		ssize_t n = write(w->fd, w->buf + done, w->used - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return writer__fail(w, n < 0 ? -errno : -EIO, "writing");
		done += n;
	}
	w->used = 0;
	return 0;
}

static int writer__put(struct tf_writer *w, const void *src, size_t size)
{
	const unsigned char *p = src;

	while (size) {
		size_t n = TF_BUF_SIZE - w->used;

		if (n > size)
			n = size;
		memcpy(w->buf + w->used, p, n);
		w->used += n;
		w->bytes += n;
		p += n;
		size -= n;
		if (w->used == TF_BUF_SIZE && writer__flush(w))
			return w->err;
	}
	return 0;
}

/* Buffered like the records, so a full disk shows up at the first flush. */
static int writer__put_header(struct tf_writer *w, const struct tf_header *hdr)
{
	struct enc e = { 0 };
	__u32 body_len;
	int ret;

	enc__header(&e, hdr);
	if (e.len > UINT32_MAX)
		return writer__fail(w, -EOVERFLOW, "writing the header of");
	body_len = e.len;
	e.data = malloc(TF_PREAMBLE + e.len);
	if (!e.data)
		return writer__fail(w, -ENOMEM, "writing the header of");
	e.len = 0;
	enc__bytes(&e, TF_MAGIC, 8);
	enc__u32(&e, hdr->version == TF_VERSION_STACKS ? TF_VERSION_STACKS : TF_VERSION);
	enc__u32(&e, body_len);
	enc__header(&e, hdr);
	ret = writer__put(w, e.data, e.len);
	free(e.data);
	return ret;
}

/* Can anyone but the owner create and remove names in the folder that holds path? */
static bool dir_shared(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	struct stat st;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return stat(dir, &st) || (st.st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * Never through a symlink. In a folder others can write, a name that is there
 * may be theirs (a hard link to some file of ours, say): --force removes it and
 * creates anew with O_EXCL instead of truncating whatever it is.
 */
static int open_output(const char *path, bool force, mode_t mode, char *err, size_t err_sz)
{
	bool excl = !force || dir_shared(path);
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (excl ? O_EXCL : O_TRUNC);
	struct stat st;
	int fd, saved;

	if (force && excl && !lstat(path, &st) && S_ISREG(st.st_mode))
		unlink(path);
	fd = open(path, flags, mode);
	/* the mode asked for, whatever the umask or an old file's mode (not a device's) */
	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode) || !fchmod(fd, mode)))
		return fd;
	saved = errno;
	if (fd >= 0) {
		close(fd);
		put_msg(err, err_sz, "setting the mode of %s: %s", path, strerror(saved));
		return -saved;
	}
	/* a symlink gives EEXIST under O_EXCL and ELOOP under O_NOFOLLOW */
	if ((saved == EEXIST || saved == ELOOP) && !lstat(path, &st) && S_ISLNK(st.st_mode))
		put_msg(err, err_sz, "%s is a symbolic link: refusing to write through it", path);
	else if (saved == EEXIST && force)
		put_msg(err, err_sz, "%s came back while it was replaced: refusing to write it",
			path);
	else if (saved == EEXIST)
		put_msg(err, err_sz, "%s exists: use --force to overwrite", path);
	else
		put_msg(err, err_sz, "creating %s: %s", path, strerror(saved));
	return -saved;
}

static struct tf_writer *writer__alloc(const char *path)
{
	struct tf_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->fd = -1;
	w->path = strdup(path);
	w->buf = malloc(TF_BUF_SIZE);
	if (!w->path || !w->buf) {
		tf_writer__free(w);
		return NULL;
	}
	return w;
}

struct tf_writer *tf_writer__create(const char *path, bool force, const struct tf_header *hdr,
				    char *err, size_t err_sz)
{
	return tf_writer__create_mode(path, force, TF_DEFAULT_MODE, hdr, err, err_sz);
}

struct tf_writer *tf_writer__create_mode(const char *path, bool force, mode_t mode,
					 const struct tf_header *hdr, char *err, size_t err_sz)
{
	struct tf_writer *w = writer__alloc(path);
	int ret;

	/* allocate before creating, so running out of memory leaves no empty file */
	if (!w) {
		put_msg(err, err_sz, "%s: out of memory", path);
		errno = ENOMEM;
		return NULL;
	}
	ret = open_output(path, force, mode, err, err_sz);
	if (ret < 0)
		goto fail;
	w->fd = ret;
	ret = writer__put_header(w, hdr);
	if (ret) {
		put_msg(err, err_sz, "%s", w->msg);
		goto fail;
	}
	return w;
fail:
	tf_writer__free(w);
	errno = -ret;
	return NULL;
}

int tf_writer__write(struct tf_writer *w, const void *rec, size_t size)
{
	struct sp_rec_hdr h;

	if (w->err)
		return w->err;
	if (w->fd < 0) {
		put_msg(w->msg, sizeof(w->msg), "writing %s: already closed", w->path);
		return -EBADF;
	}
	/* a record the reader would reject is a caller bug: refuse it, write nothing */
	if (size < sizeof(h) || size > TF_MAX_RECORD) {
		put_msg(w->msg, sizeof(w->msg), "writing %s: record of %zu bytes", w->path, size);
		return -EINVAL;
	}
	memcpy(&h, rec, sizeof(h));
	if (h.size != size) {
		put_msg(w->msg, sizeof(w->msg), "writing %s: record of %zu bytes says %u",
			w->path, size, h.size);
		return -EINVAL;
	}
	return writer__put(w, rec, size);
}

int tf_writer__flush(struct tf_writer *w)
{
	if (w->err || w->fd < 0)
		return w->err ? w->err : -EBADF;
	return writer__flush(w);
}

int tf_writer__close(struct tf_writer *w)
{
	int ret;

	if (w->fd < 0)
		return w->err;
	ret = w->err ? w->err : writer__flush(w);
	/* Linux frees the descriptor even when close fails: never retry */
	if (close(w->fd) && !ret)
		ret = writer__fail(w, -errno, "closing");
	w->fd = -1;
	return ret;
}

const char *tf_writer__error(const struct tf_writer *w)
{
	return w ? w->msg : "";
}

/* Without tf_writer__close, whatever is still buffered is dropped. */
void tf_writer__free(struct tf_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	free(w->buf);
	free(w->path);
	free(w);
}

__u64 tf_writer__bytes(const struct tf_writer *w)
{
	return w ? w->bytes : 0;
}

/* Header decoding: every read is bounded by the bytes left in the body. */
struct dec {
	const unsigned char *p;
	size_t left;
};

static __u32 le32(const unsigned char *b)
{
	return (__u32)b[0] | (__u32)b[1] << 8 | (__u32)b[2] << 16 | (__u32)b[3] << 24;
}

static int dec__take(struct dec *d, size_t n, const unsigned char **out)
{
	if (n > d->left)
		return -EBADMSG;
	*out = d->p;
	d->p += n;
	d->left -= n;
	return 0;
}

static int dec__u32(struct dec *d, __u32 *v)
{
	const unsigned char *b;

	if (dec__take(d, 4, &b))
		return -EBADMSG;
	*v = le32(b);
	return 0;
}

static int dec__u64(struct dec *d, __u64 *v)
{
	const unsigned char *b;

	if (dec__take(d, 8, &b))
		return -EBADMSG;
	*v = le32(b) | (__u64)le32(b + 4) << 32;
	return 0;
}

/* Into a char[max_len + 1]. */
static int dec__str_fixed(struct dec *d, char *dst, size_t max_len)
{
	const unsigned char *b;
	__u32 len;

	if (dec__u32(d, &len) || len > max_len || dec__take(d, len, &b))
		return -EBADMSG;
	memcpy(dst, b, len);
	dst[len] = '\0';
	return 0;
}

static int dec__str_dup(struct dec *d, char **dst)
{
	const unsigned char *b;
	__u32 len;

	if (dec__u32(d, &len) || dec__take(d, len, &b))
		return -EBADMSG;
	*dst = malloc((size_t)len + 1);
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, b, len);
	(*dst)[len] = '\0';
	return 0;
}

/* A corrupt count must fail here, not in a huge allocation. */
static int dec__count(struct dec *d, size_t min_elem, __u32 *count)
{
	if (dec__u32(d, count) || *count > d->left / min_elem)
		return -EBADMSG;
	return 0;
}

static void *array_alloc(__u32 count, size_t elem)
{
	return calloc(count ? count : 1, elem);
}

static int dec__targets(struct dec *d, struct tf_header *h)
{
	__u32 n;

	if (dec__count(d, TF_MIN_TARGET, &n))
		return -EBADMSG;
	h->targets = array_alloc(n, sizeof(*h->targets));
	if (!h->targets)
		return -ENOMEM;
	h->nr_targets = n;
	for (__u32 i = 0; i < n; i++)
		if (dec__u32(d, &h->targets[i]))
			return -EBADMSG;
	return 0;
}

static int dec__lib(struct dec *d, struct tf_lib *lib)
{
	int ret = dec__str_dup(d, &lib->path);

	if (ret)
		return ret;
	if (dec__str_fixed(d, lib->build_id, sizeof(lib->build_id) - 1) ||
	    dec__u64(d, &lib->dev) || dec__u64(d, &lib->ino) || dec__u32(d, &lib->kind))
		return -EBADMSG;
	return 0;
}

static int dec__libs(struct dec *d, struct tf_header *h)
{
	__u32 n;
	int ret;

	if (dec__count(d, TF_MIN_LIB, &n))
		return -EBADMSG;
	h->libs = array_alloc(n, sizeof(*h->libs));
	if (!h->libs)
		return -ENOMEM;
	h->nr_libs = n;
	for (__u32 i = 0; i < n; i++) {
		ret = dec__lib(d, &h->libs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static int dec__probe(struct dec *d, struct tf_probe *p, __u32 nr_libs)
{
	int ret = dec__str_dup(d, &p->symbol);

	if (ret)
		return ret;
	if (dec__u32(d, &p->lib) || dec__u32(d, &p->catalog) || dec__u64(d, &p->offset) ||
	    dec__u64(d, &p->vaddr))
		return -EBADMSG;
	/* readers index libs[] with it */
	return p->lib < nr_libs ? 0 : -EBADMSG;
}

static int dec__probes(struct dec *d, struct tf_header *h)
{
	__u32 n;
	int ret;

	if (dec__count(d, TF_MIN_PROBE, &n))
		return -EBADMSG;
	h->probes = array_alloc(n, sizeof(*h->probes));
	if (!h->probes)
		return -ENOMEM;
	h->nr_probes = n;
	for (__u32 i = 0; i < n; i++) {
		ret = dec__probe(d, &h->probes[i], h->nr_libs);
		if (ret)
			return ret;
	}
	return 0;
}

static int dec__maps(struct dec *d, struct tf_header *h)
{
	__u32 n;

	if (dec__count(d, TF_MIN_MAP, &n))
		return -EBADMSG;
	h->maps = array_alloc(n, sizeof(*h->maps));
	if (!h->maps)
		return -ENOMEM;
	h->nr_maps = n;
	for (__u32 i = 0; i < n; i++) {
		struct tf_map *m = &h->maps[i];

		if (dec__u32(d, &m->tgid) || dec__u32(d, &m->lib) || dec__u64(d, &m->start) ||
		    dec__u64(d, &m->end) || dec__u64(d, &m->pgoff) || m->lib >= h->nr_libs)
			return -EBADMSG;
	}
	return 0;
}

/* What follows the last array may only be the zero padding. */
static int dec__padding(struct dec *d)
{
	if (d->left >= TF_ALIGN)
		return -EBADMSG;
	for (size_t i = 0; i < d->left; i++)
		if (d->p[i])
			return -EBADMSG;
	return 0;
}

static int dec__header(struct dec *d, struct tf_header *h)
{
	int ret;

	if (dec__str_fixed(d, h->host, sizeof(h->host) - 1) ||
	    dec__str_fixed(d, h->kernel, sizeof(h->kernel) - 1) || dec__u64(d, &h->mono_ns) ||
	    dec__u64(d, &h->realtime_ns) || dec__u64(d, &h->attach_start_ns) ||
	    dec__u64(d, &h->attach_done_ns))
		return -EBADMSG;
	ret = dec__targets(d, h);
	if (!ret)
		ret = dec__libs(d, h);
	if (!ret)
		ret = dec__probes(d, h);
	if (!ret)
		ret = dec__maps(d, h);
	if (!ret)
		ret = dec__padding(d);
	return ret;
}

__attribute__((format(printf, 3, 4)))
static int reader__fail(struct tf_reader *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	return err;
}

static int reader__map(struct tf_reader *r)
{
	struct stat st;
	void *map;
	int fd, ret = 0;

	fd = open(r->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return reader__fail(r, -errno, "%s: %s", r->path, strerror(errno));
	if (fstat(fd, &st))
		ret = reader__fail(r, -errno, "%s: %s", r->path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		ret = reader__fail(r, -EINVAL, "%s is not a regular file", r->path);
	else if (st.st_size == 0)
		ret = reader__fail(r, -ENODATA, "%s is empty: not a specprobe recording", r->path);
	else if ((__u64)st.st_size > SIZE_MAX)
		ret = reader__fail(r, -EFBIG, "%s: too large to map", r->path);
	if (ret)
		goto out;
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		ret = reader__fail(r, -errno, "mapping %s: %s", r->path, strerror(errno));
		goto out;
	}
	madvise(map, st.st_size, MADV_SEQUENTIAL);	/* only a hint */
	r->map = map;
	r->size = st.st_size;
out:
	close(fd);
	return ret;
}

static int reader__parse(struct tf_reader *r)
{
	size_t magic_len = r->size < 8 ? r->size : 8;
	struct dec d;
	__u32 version, body_len;
	int ret;

	/* a cut inside the magic is still our file, only truncated */
	if (memcmp(r->map, TF_MAGIC, magic_len))
		return reader__fail(r, -EINVAL, "%s is not a specprobe recording", r->path);
	if (r->size < TF_PREAMBLE)
		goto corrupt;
	version = le32(r->map + 8);
	if (version != TF_VERSION && version != TF_VERSION_STACKS)
		return reader__fail(r, -EPROTONOSUPPORT,
				    "%s is recording version %u; this specprobe reads versions %d "
				    "and %d", r->path, version, TF_VERSION, TF_VERSION_STACKS);
	body_len = le32(r->map + 12);
	if (body_len > r->size - TF_PREAMBLE)
		goto corrupt;
	d = (struct dec){ r->map + TF_PREAMBLE, body_len };
	ret = dec__header(&d, &r->hdr);
	if (ret == -ENOMEM)
		return reader__fail(r, ret, "%s: out of memory", r->path);
	if (ret)
		goto corrupt;
	r->hdr.version = version;
	r->off = TF_PREAMBLE + body_len;
	return 0;
corrupt:
	return reader__fail(r, -EBADMSG, "%s: header is truncated or corrupt", r->path);
}

struct tf_reader *tf_reader__open(const char *path, char *err, size_t err_sz)
{
	struct tf_reader *r = calloc(1, sizeof(*r));
	int ret;

	if (r)
		r->path = strdup(path);
	if (!r || !r->path) {
		free(r);
		put_msg(err, err_sz, "%s: out of memory", path);
		errno = ENOMEM;
		return NULL;
	}
	ret = reader__map(r);
	if (!ret)
		ret = reader__parse(r);
	if (ret) {
		put_msg(err, err_sz, "%s", r->msg);
		tf_reader__free(r);
		errno = -ret;
		return NULL;
	}
	return r;
}

const struct tf_header *tf_reader__header(const struct tf_reader *r)
{
	return &r->hdr;
}

/* The exact sizes each type is written with; anything else is corruption. */
static bool rec_size_ok(__u16 type, __u16 size)
{
	switch (type) {
	case SP_REC_CALL:
		return size == sizeof(struct sp_call_rec) ||
		       size == sizeof(struct sp_call_rec) + SP_DATA_SMALL ||
		       size == sizeof(struct sp_call_rec) + SP_DATA_LARGE;
	case SP_REC_RET:
		return size == sizeof(struct sp_ret_rec);
	case SP_REC_STATS:
	case SP_REC_END:
		return size == sizeof(struct sp_stats_rec);
	case SP_REC_EXIT:
		return size == sizeof(struct sp_exit_rec);
	case SP_REC_FORK:
		return size == sizeof(struct sp_fork_rec);
	case SP_REC_LIBMAP:
		return size == sizeof(struct sp_libmap_rec);
	case SP_REC_EXEC:
		return size == sizeof(struct sp_exec_rec);
	case SP_REC_LIB:
		return size > sizeof(struct sp_lib_rec);
	case SP_REC_PROBE:
		return size > sizeof(struct sp_probe_rec);
	case SP_REC_MAP:
		return size == sizeof(struct sp_map_rec);
	case SP_REC_PROC:
		return size == sizeof(struct sp_proc_rec);
	case SP_REC_CALIB:
		return size == sizeof(struct sp_calib_rec);
	case SP_REC_CPU:
		return size == sizeof(struct sp_cpu_rec);
	case SP_REC_HOSTMEM:
		return size == sizeof(struct sp_hostmem_rec);
	case SP_REC_STACK:
		return size >= sizeof(struct sp_stack_rec) && size % 8 == 0;
	case SP_REC_PYCODE:
		return size >= sizeof(struct sp_pycode_rec) && size % 8 == 0;
	case SP_REC_OBJMAP:
		return size > sizeof(struct sp_objmap_rec) && size % 8 == 0;
	default:
		return false;
	}
}

/* The layout inside a call-site record: counts and lengths that agree with its size. */
static bool site_rec_ok(const void *rec, __u16 type, __u16 size)
{
	switch (type) {
	case SP_REC_STACK:
		return callstack__stack_ok(rec, size);
	case SP_REC_PYCODE:
		return callstack__pycode_ok(rec, size);
	case SP_REC_OBJMAP:
		return callstack__objmap_ok(rec, size);
	default:
		return true;
	}
}

/* Version 2 on, a kind this reader does not know in the optional range is passed over. */
static bool optional_kind(const struct tf_reader *r, __u16 type, __u16 size)
{
	return r->hdr.version >= TF_VERSION_STACKS && type >= TF_OPTIONAL_FIRST &&
	       type <= TF_OPTIONAL_LAST && size >= sizeof(struct sp_rec_hdr) && size % 8 == 0;
}

static void *grow(void *table, __u32 n, size_t elem)
{
	return realloc(table, (n + 1) * elem);
}

/*
 * A library attached after the header was written: extend the header's
 * tables, so a call of a late probe finds its description like any other.
 */
int tf_header__apply(struct tf_header *hdr, const void *rec, __u16 size)
{
	const struct sp_rec_hdr *h = rec;
	const char *tail;

	if (h->type == SP_REC_LIB) {
		const struct sp_lib_rec *l = rec;
		struct tf_lib *libs;

		tail = (const char *)(l + 1);
		if (l->index != hdr->nr_libs || tail[size - sizeof(*l) - 1] != '\0' ||
		    l->build_id[sizeof(l->build_id) - 1] != '\0')
			return -EBADMSG;
		libs = grow(hdr->libs, hdr->nr_libs, sizeof(*libs));
		if (!libs)
			return -ENOMEM;
		hdr->libs = libs;
		libs[hdr->nr_libs] = (struct tf_lib){ .dev = l->dev, .ino = l->ino, .kind = l->kind };
		memcpy(libs[hdr->nr_libs].build_id, l->build_id, sizeof(l->build_id));
		libs[hdr->nr_libs].path = strdup(tail);
		if (!libs[hdr->nr_libs].path)
			return -ENOMEM;
		hdr->nr_libs++;
	} else if (h->type == SP_REC_PROBE) {
		const struct sp_probe_rec *p = rec;
		struct tf_probe *probes;

		tail = (const char *)(p + 1);
		if (p->cookie != hdr->nr_probes || p->lib >= hdr->nr_libs ||
		    tail[size - sizeof(*p) - 1] != '\0')
			return -EBADMSG;
		probes = grow(hdr->probes, hdr->nr_probes, sizeof(*probes));
		if (!probes)
			return -ENOMEM;
		hdr->probes = probes;
		probes[hdr->nr_probes] = (struct tf_probe){
			.lib = p->lib,
			.catalog = p->catalog,
			.offset = p->offset,
			.vaddr = p->vaddr,
			.symbol = strdup(tail),
		};
		if (!probes[hdr->nr_probes].symbol)
			return -ENOMEM;
		hdr->nr_probes++;
	} else if (h->type == SP_REC_MAP) {
		const struct sp_map_rec *m = rec;
		struct tf_map *maps;

		if (m->lib >= hdr->nr_libs)
			return -EBADMSG;
		maps = grow(hdr->maps, hdr->nr_maps, sizeof(*maps));
		if (!maps)
			return -ENOMEM;
		hdr->maps = maps;
		maps[hdr->nr_maps++] = (struct tf_map){ m->tgid, m->lib, m->start, m->end, m->pgoff };
	} else if (h->type == SP_REC_PROC) {
		const struct sp_proc_rec *pr = rec;
		struct tf_proc *procs = grow(hdr->procs, hdr->nr_procs, sizeof(*procs));

		if (!procs)
			return -ENOMEM;
		hdr->procs = procs;
		procs[hdr->nr_procs++] = (struct tf_proc){ pr->tgid, pr->ns_pid };
	}
	return 0;
}

__u32 tf_header__ns_pid(const struct tf_header *hdr, __u32 tgid)
{
	/* the latest wins: a host pid may be reused */
	for (__u32 i = hdr->nr_procs; i-- > 0;)
		if (hdr->procs[i].tgid == tgid)
			return hdr->procs[i].ns_pid;
	return 0;
}

static int reader__truncated(struct tf_reader *r)
{
	return reader__fail(r, -ENODATA, "%s: truncated at byte %llu, inside a record", r->path,
			    (unsigned long long)r->off);
}

/* Read pages far behind give their memory back, so reading a recording stays flat in its size. */
static void drop_behind(struct tf_reader *r)
{
	const size_t behind = 1u << 20, page = 4096;
	size_t upto;

	if (r->off - r->dropped < 2 * behind)
		return;
	upto = (r->off - behind) & ~(page - 1);
	/* a private file mapping refaults dropped pages from the file: only a hint */
	madvise((void *)(r->map + r->dropped), upto - r->dropped, MADV_DONTNEED);
	r->dropped = upto;
}

#define SKIPPED 2	/* an optional record passed over */

static int reader__next_one(struct tf_reader *r, const void **rec)
{
	const unsigned char *p = r->map + r->off;
	size_t left = r->size - r->off;
	struct sp_rec_hdr h;

	if (!left)
		return 0;
	if (left < sizeof(h))
		return reader__truncated(r);
	memcpy(&h, p, sizeof(h));
	if (h.size <= TF_MAX_RECORD && !rec_size_ok(h.type, h.size) &&
	    optional_kind(r, h.type, h.size)) {
		if (h.size > left)
			return reader__truncated(r);
		r->off += h.size;
		return SKIPPED;
	}
	if (h.size > TF_MAX_RECORD || !rec_size_ok(h.type, h.size))
		return reader__fail(r, -EBADMSG, "%s: corrupt record at byte %llu", r->path,
				    (unsigned long long)r->off);
	if (h.size > left)
		return reader__truncated(r);
	if ((uintptr_t)p % TF_ALIGN) {
		memcpy(r->copy.bytes, p, h.size);
		p = r->copy.bytes;
	}
	if (!site_rec_ok(p, h.type, h.size))
		return reader__fail(r, -EBADMSG, "%s: corrupt call-site record at byte %llu",
				    r->path, (unsigned long long)r->off);
	if (h.type >= SP_REC_LIB && h.type <= SP_REC_PROC) {
		int ret = tf_header__apply(&r->hdr, p, h.size);

		if (ret)
			return reader__fail(r, ret == -ENOMEM ? ret : -EBADMSG,
					    ret == -ENOMEM ? "%s: out of memory at byte %llu"
							   : "%s: corrupt library record at byte %llu",
					    r->path, (unsigned long long)r->off);
	}
	r->off += h.size;
	*rec = p;
	drop_behind(r);
	return 1;
}

int tf_reader__next(struct tf_reader *r, const void **rec)
{
	int ret;

	while ((ret = reader__next_one(r, rec)) == SKIPPED)
		;
	return ret;
}

__u64 tf_reader__offset(const struct tf_reader *r)
{
	return r->off;
}

const char *tf_reader__error(const struct tf_reader *r)
{
	return r ? r->msg : "";
}

void tf_reader__free(struct tf_reader *r)
{
	if (!r)
		return;
	if (r->map)
		munmap((void *)r->map, r->size);
	tf_header__free(&r->hdr);
	free(r->path);
	free(r);
}

static void *dup_table(const void *table, __u32 n, size_t elem)
{
	void *copy = malloc((n ? n : 1) * elem);

	if (copy && n)
		memcpy(copy, table, n * elem);
	return copy;
}

int tf_header__copy(struct tf_header *dst, const struct tf_header *src)
{
	*dst = *src;
	dst->targets = dup_table(src->targets, src->nr_targets, sizeof(*src->targets));
	dst->libs = dup_table(src->libs, src->nr_libs, sizeof(*src->libs));
	dst->probes = dup_table(src->probes, src->nr_probes, sizeof(*src->probes));
	dst->maps = dup_table(src->maps, src->nr_maps, sizeof(*src->maps));
	dst->procs = dup_table(src->procs, src->nr_procs, sizeof(*src->procs));
	if (!dst->targets || !dst->libs || !dst->probes || !dst->maps || !dst->procs) {
		/* the strings are still the source's: free none of them */
		dst->nr_libs = dst->nr_probes = 0;
		tf_header__free(dst);
		return -ENOMEM;
	}
	for (__u32 i = 0; i < dst->nr_libs; i++)
		dst->libs[i].path = NULL;
	for (__u32 i = 0; i < dst->nr_probes; i++)
		dst->probes[i].symbol = NULL;
	for (__u32 i = 0; i < dst->nr_libs; i++)
		if (src->libs[i].path && !(dst->libs[i].path = strdup(src->libs[i].path)))
			goto nomem;
	for (__u32 i = 0; i < dst->nr_probes; i++)
		if (src->probes[i].symbol &&
		    !(dst->probes[i].symbol = strdup(src->probes[i].symbol)))
			goto nomem;
	return 0;
nomem:
	tf_header__free(dst);
	return -ENOMEM;
}

void tf_header__free(struct tf_header *hdr)
{
	if (!hdr)
		return;
	for (__u32 i = 0; hdr->libs && i < hdr->nr_libs; i++)
		free(hdr->libs[i].path);
	for (__u32 i = 0; hdr->probes && i < hdr->nr_probes; i++)
		free(hdr->probes[i].symbol);
	free(hdr->targets);
	free(hdr->libs);
	free(hdr->probes);
	free(hdr->maps);
	free(hdr->procs);
	hdr->procs = NULL;
	hdr->nr_procs = 0;
	hdr->targets = NULL;
	hdr->libs = NULL;
	hdr->probes = NULL;
	hdr->maps = NULL;
	hdr->nr_targets = hdr->nr_libs = hdr->nr_probes = hdr->nr_maps = 0;
}
