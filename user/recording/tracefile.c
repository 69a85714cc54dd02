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
#include <dirent.h>
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
#include "outfile.h"
#include "safepath.h"
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
	struct outfile out;	/* its name: at once, or at a clean close when whole */
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
	int dirfd;		/* the folder of path, held open: every file is read from it */
	char *name;		/* path's last component there (of the base, for a set) */
	/* a set of segments: base.segs[0], base.segs[1] ...; nr_segs 0 for a plain file */
	char *base;
	__u32 *segs;
	__u32 nr_segs, cur_seg;
	bool skipping;		/* a later segment's repeated state, up to its SP_REC_SEGMENT */
	bool after_gap;		/* the segment being read follows missing ones */
	__u64 calls_read;	/* SP_REC_CALL records read from the files */
	struct tf_gaps gaps;
	/* after a gap: the tables the missing segments added, as late records */
	unsigned char *synth;
	size_t synth_len, synth_off;
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

__u64 tf_header__size(const struct tf_header *hdr)
{
	struct enc e = { 0 };

	enc__header(&e, hdr);
	return TF_PREAMBLE + e.len;
}

static struct tf_writer *writer__alloc(const char *path)
{
	struct tf_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->fd = -1;
	w->out = (struct outfile)OUTFILE_INIT;
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

/*
 * A file on its own name at once (whole false) or only at a clean close (whole
 * true); name in dirfd, or path resolved when dirfd is -1.
 */
static struct tf_writer *writer__create(int dirfd, const char *name, const char *path, bool force,
					mode_t mode, bool whole, const struct tf_header *hdr,
					char *err, size_t err_sz)
{
	struct tf_writer *w = writer__alloc(path);
	int ret;

	/* allocate before creating, so running out of memory leaves no empty file */
	if (!w) {
		put_msg(err, err_sz, "%s: out of memory", path);
		errno = ENOMEM;
		return NULL;
	}
	ret = dirfd < 0 ? outfile__open(&w->out, path, force, mode, err, err_sz) :
			  outfile__openat(&w->out, dirfd, name, path, force, mode, err, err_sz);
	if (!ret && !whole)
		ret = outfile__publish(&w->out, err, err_sz);
	if (ret)
		goto fail;
	w->fd = w->out.fd;
	w->out.fd = -1;	/* the writer's to close */
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

struct tf_writer *tf_writer__create_mode(const char *path, bool force, mode_t mode,
					 const struct tf_header *hdr, char *err, size_t err_sz)
{
	return writer__create(-1, NULL, path, force, mode, false, hdr, err, err_sz);
}

struct tf_writer *tf_writer__create_whole(const char *path, bool force, mode_t mode,
					  const struct tf_header *hdr, char *err, size_t err_sz)
{
	return writer__create(-1, NULL, path, force, mode, true, hdr, err, err_sz);
}

struct tf_writer *tf_writer__create_at(int dirfd, const char *name, const char *path, bool force,
				       mode_t mode, const struct tf_header *hdr, char *err,
				       size_t err_sz)
{
	return writer__create(dirfd, name, path, force, mode, false, hdr, err, err_sz);
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
	if (!ret)
		ret = w->err = outfile__publish(&w->out, w->msg, sizeof(w->msg));
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
	outfile__discard(&w->out);
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

/* Map name (in the held folder) as the current file. */
static int reader__map(struct tf_reader *r, const char *name)
{
	struct stat st;
	void *map;
	int fd, ret = 0;

	/* no link followed, no FIFO opened: what is not a regular file is named and refused */
	fd = safepath__open_regular(r->dirfd, name, r->path, r->msg, sizeof(r->msg));
	if (fd < 0)
		return fd;
	if (fstat(fd, &st))
		ret = reader__fail(r, -errno, "%s: %s", r->path, strerror(errno));
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

static int reader__parse(struct tf_reader *r, struct tf_header *hdr)
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
	ret = dec__header(&d, hdr);
	if (ret == -ENOMEM)
		return reader__fail(r, ret, "%s: out of memory", r->path);
	if (ret)
		goto corrupt;
	hdr->version = version;
	r->off = TF_PREAMBLE + body_len;
	return 0;
corrupt:
	return reader__fail(r, -EBADMSG, "%s: header is truncated or corrupt", r->path);
}

void tf_segment_path(char *dst, size_t dst_sz, const char *base, __u32 n)
{
	snprintf(dst, dst_sz, "%s.%u", base, n);
}

long long tf_segment_number(const char *name, const char *base)
{
	size_t len = strlen(base);
	unsigned long long n = 0;
	const char *p;

	if (strncmp(name, base, len) || name[len] != '.' || !name[len + 1])
		return -1;
	p = name + len + 1;
	if (p[0] == '0' && p[1])
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || n > UINT32_MAX / 10)
			return -1;
		n = n * 10 + (*p - '0');
	}
	return n <= UINT32_MAX ? (long long)n : -1;
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return (x > y) - (x < y);
}

/* Segment numbers of name in the folder dirfd, sorted; -ENOENT when there are none. */
static int list_segments(int dirfd, const char *name, __u32 **out, __u32 *nr)
{
	struct dirent *de;
	__u32 *segs = NULL, n = 0, cap = 0;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	while ((de = readdir(d))) {
		long long num = tf_segment_number(de->d_name, name);

		if (num < 0)
			continue;
		if (n == cap) {
			__u32 *grown = realloc(segs, (cap = cap ? 2 * cap : 16) * sizeof(*segs));

			if (!grown) {
				free(segs);
				closedir(d);
				return -ENOMEM;
			}
			segs = grown;
		}
		segs[n++] = num;
	}
	closedir(d);
	if (!n) {
		free(segs);
		return -ENOENT;
	}
	qsort(segs, n, sizeof(*segs), cmp_u32);
	*out = segs;
	*nr = n;
	return 0;
}

/*
 * A link, FIFO or foreign file among the segments: named with the set it sits
 * in, as damage of the set (-EBADMSG), which is read no further.
 */
static int segment_damage(struct tf_reader *r, int ret)
{
	size_t len = strlen(r->msg);

	if (!ret || ret == -ENOMEM || ret == -EBADMSG)
		return ret;
	snprintf(r->msg + len, sizeof(r->msg) - len, " (among the segments of %s)", r->base);
	return -EBADMSG;
}

/* Map segment i of the set in place of the current file. */
static int reader__map_segment(struct tf_reader *r, __u32 i)
{
	char path[4096], name[NAME_MAX + 1];
	char *copy;

	tf_segment_path(path, sizeof(path), r->base, r->segs[i]);
	tf_segment_path(name, sizeof(name), r->name, r->segs[i]);
	copy = strdup(path);
	if (!copy)
		return reader__fail(r, -ENOMEM, "%s: out of memory", path);
	if (r->map)
		munmap((void *)r->map, r->size);
	r->map = NULL;
	r->size = r->off = r->dropped = 0;
	free(r->path);
	r->path = copy;
	r->cur_seg = i;
	return reader__map(r, name);
}

/*
 * A path that is not there but has segments: the set, every segment there
 * (a gap in the numbers is read across and counted). -ENOENT: not a set,
 * read path itself.
 */
static int reader__open_set(struct tf_reader *r)
{
	struct stat st;
	int ret;

	if (!fstatat(r->dirfd, r->name, &st, AT_SYMLINK_NOFOLLOW) || errno != ENOENT)
		return -ENOENT;
	ret = list_segments(r->dirfd, r->name, &r->segs, &r->nr_segs);
	if (ret)
		return ret == -ENOMEM ? reader__fail(r, ret, "%s: out of memory", r->path) : ret;
	r->base = strdup(r->path);
	if (!r->base)
		return reader__fail(r, -ENOMEM, "%s: out of memory", r->path);
	ret = reader__map_segment(r, 0);
	return segment_damage(r, ret ? ret : reader__parse(r, &r->hdr));
}

/*
 * A later segment continues the same recording: same clock, same tables so
 * far; after a gap, tables that grew in the missing segments. Its mappings are
 * those of the processes alive when it began, so they are no guide.
 */
static bool segment_continues(const struct tf_header *set, const struct tf_header *seg,
			      bool gap)
{
	if (set->mono_ns != seg->mono_ns || set->realtime_ns != seg->realtime_ns ||
	    strcmp(set->host, seg->host))
		return false;
	if (gap)
		return set->nr_libs <= seg->nr_libs && set->nr_probes <= seg->nr_probes;
	return set->nr_libs == seg->nr_libs && set->nr_probes == seg->nr_probes;
}

static bool has_map(const struct tf_header *h, const struct tf_map *m)
{
	for (__u32 i = 0; i < h->nr_maps; i++)
		if (h->maps[i].tgid == m->tgid && h->maps[i].start == m->start &&
		    h->maps[i].end == m->end && h->maps[i].lib == m->lib)
			return true;
	return false;
}

/* Room for one more synthesized record of size bytes (a multiple of 8); NULL: no memory. */
static void *synth_room(struct tf_reader *r, size_t size)
{
	unsigned char *grown = realloc(r->synth, r->synth_len + size);

	if (!grown)
		return NULL;
	r->synth = grown;
	memset(grown + r->synth_len, 0, size);
	r->synth_len += size;
	return grown + r->synth_len - size;
}

static size_t rec_round(size_t size)
{
	return (size + TF_ALIGN - 1) & ~(size_t)(TF_ALIGN - 1);
}

/* The libraries, probes and maps seg's header has beyond the set's: as late records. */
static int synth_tables(struct tf_reader *r, const struct tf_header *seg)
{
	for (__u32 i = r->hdr.nr_libs; i < seg->nr_libs; i++) {
		size_t len = strlen(seg->libs[i].path) + 1;
		size_t size = rec_round(sizeof(struct sp_lib_rec) + len);
		struct sp_lib_rec *l = size <= TF_MAX_RECORD ? synth_room(r, size) : NULL;

		if (!l)
			return size <= TF_MAX_RECORD ? -ENOMEM : -E2BIG;
		*l = (struct sp_lib_rec){ .type = SP_REC_LIB, .size = size, .index = i,
					  .dev = seg->libs[i].dev, .ino = seg->libs[i].ino,
					  .kind = seg->libs[i].kind };
		memcpy(l->build_id, seg->libs[i].build_id, sizeof(l->build_id));
		memcpy(l + 1, seg->libs[i].path, len);
	}
	for (__u32 i = r->hdr.nr_probes; i < seg->nr_probes; i++) {
		size_t len = strlen(seg->probes[i].symbol) + 1;
		size_t size = rec_round(sizeof(struct sp_probe_rec) + len);
		struct sp_probe_rec *p = size <= TF_MAX_RECORD ? synth_room(r, size) : NULL;

		if (!p)
			return size <= TF_MAX_RECORD ? -ENOMEM : -E2BIG;
		*p = (struct sp_probe_rec){ .type = SP_REC_PROBE, .size = size, .cookie = i,
					    .lib = seg->probes[i].lib,
					    .catalog = seg->probes[i].catalog,
					    .offset = seg->probes[i].offset,
					    .vaddr = seg->probes[i].vaddr };
		memcpy(p + 1, seg->probes[i].symbol, len);
	}
	for (__u32 i = 0; i < seg->nr_maps; i++) {
		struct sp_map_rec *m;

		if (has_map(&r->hdr, &seg->maps[i]))
			continue;
		m = synth_room(r, sizeof(*m));
		if (!m)
			return -ENOMEM;
		*m = (struct sp_map_rec){ .type = SP_REC_MAP, .size = sizeof(*m),
					  .tgid = seg->maps[i].tgid, .lib = seg->maps[i].lib,
					  .start = seg->maps[i].start, .end = seg->maps[i].end,
					  .pgoff = seg->maps[i].pgoff };
	}
	return 0;
}

static int reader__next_segment(struct tf_reader *r)
{
	struct tf_header seg = { 0 };
	char prev[4096];
	bool last = r->cur_seg + 2 == r->nr_segs;
	__u32 missing = r->segs[r->cur_seg + 1] - r->segs[r->cur_seg] - 1;
	int ret;

	if (missing && !r->gaps.missing)
		r->gaps.first_missing = r->segs[r->cur_seg] + 1;
	r->gaps.missing += missing;
	snprintf(prev, sizeof(prev), "%s", r->path);
	ret = reader__map_segment(r, r->cur_seg + 1);
	if (!ret)
		ret = reader__parse(r, &seg);
	/* the newest file may hold a part of its header: the recorder stopped as it rotated */
	if (last && (ret == -ENODATA || (ret == -EBADMSG && r->size < TF_BUF_SIZE))) {
		tf_header__free(&seg);
		return reader__fail(r, -ENODATA, "%s: header cut short (the recording stopped as "
				    "it rotated): the recording ends with %s", r->path, prev);
	}
	if (!ret && !segment_continues(&r->hdr, &seg, missing))
		ret = reader__fail(r, -EBADMSG, "%s does not continue %s: another recording's "
				   "segment?", r->path, prev);
	if (ret != -ENODATA)
		ret = segment_damage(r, ret);
	if (!ret && missing)
		ret = synth_tables(r, &seg);
	if (ret == -ENOMEM || ret == -E2BIG)
		ret = reader__fail(r, ret, ret == -ENOMEM ? "%s: out of memory" :
				   "%s: a name in its tables is too long for a record", r->path);
	tf_header__free(&seg);
	if (ret)
		return ret;
	r->after_gap = missing;
	r->skipping = true;
	return 0;
}

struct tf_reader *tf_reader__open(const char *path, char *err, size_t err_sz)
{
	struct tf_reader *r = calloc(1, sizeof(*r));
	struct safepath sp;
	int ret;

	if (r)
		r->path = strdup(path);
	if (!r || !r->path) {
		if (r)
			free(r);
		put_msg(err, err_sz, "%s: out of memory", path);
		errno = ENOMEM;
		return NULL;
	}
	r->dirfd = -1;
	ret = safepath__resolve(path, true, &sp, r->msg, sizeof(r->msg));
	if (!ret) {
		r->dirfd = sp.dirfd;
		r->name = strdup(sp.name);
		ret = r->name ? 0 : reader__fail(r, -ENOMEM, "%s: out of memory", path);
	}
	if (!ret)
		ret = reader__open_set(r);
	if (ret == -ENOENT)
		ret = reader__map(r, r->name);
	if (!ret && !r->nr_segs)
		ret = reader__parse(r, &r->hdr);
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
	case SP_REC_RANK:
		return size == sizeof(struct sp_rank_rec);

	case SP_REC_PROC:
		return size == sizeof(struct sp_proc_rec);
	case SP_REC_CALIB:
		return size == sizeof(struct sp_calib_rec) || size == SP_CALIB_REC_V1;
	case SP_REC_CPU:
		return size == sizeof(struct sp_cpu_rec);
	case SP_REC_HOSTMEM:
		return size == sizeof(struct sp_hostmem_rec);
	case SP_REC_SEGMENT:
		return size == sizeof(struct sp_segment_rec);
	case SP_REC_WINDOW:
		return size == sizeof(struct sp_window_rec);
	case SP_REC_CLOCK:
		return size == sizeof(struct sp_clock_rec);
	case SP_REC_STACK:
		return size >= sizeof(struct sp_stack_rec) && size % 8 == 0;
	case SP_REC_PYCODE:
		return size >= sizeof(struct sp_pycode_rec) && size % 8 == 0;
	case SP_REC_OBJMAP:
		return size > sizeof(struct sp_objmap_rec) && size % 8 == 0;
	case SP_REC_GPU:
		return size == sizeof(struct sp_gpu_rec);
	case SP_REC_GPU_NAME:
		return size > sizeof(struct sp_gpu_name_rec) && size % 8 == 0 &&
		       size <= sizeof(struct sp_gpu_name_rec) + SP_GPU_NAME_MAX + 8;
	case SP_REC_GPU_STATE:
		return size == sizeof(struct sp_gpu_state_rec);
	case SP_REC_SRVMETRIC:
		return size == sizeof(struct sp_srvmetric_rec);
	case SP_REC_RUNQ:
		return size == sizeof(struct sp_runq_rec);
	case SP_REC_EXIT_STATUS:
		return size == sizeof(struct sp_exit_status_rec);
	case SP_REC_ATTACH:
		return size == sizeof(struct sp_attach_rec);
	case SP_REC_SAMPLE:
		return size == sizeof(struct sp_sample_rec);
	default:
		return false;
	}
}

#define TS_AT_8(type) _Static_assert(offsetof(type, ts) == 8, #type "'s time is not at 8")
TS_AT_8(struct sp_call_rec);
TS_AT_8(struct sp_call_pkt);
TS_AT_8(struct sp_ret_rec);
TS_AT_8(struct sp_fork_rec);
TS_AT_8(struct sp_libmap_rec);
TS_AT_8(struct sp_exec_rec);
TS_AT_8(struct sp_stats_rec);
TS_AT_8(struct sp_exit_rec);
TS_AT_8(struct sp_lib_rec);
TS_AT_8(struct sp_proc_rec);
TS_AT_8(struct sp_calib_rec);
TS_AT_8(struct sp_cpu_rec);
TS_AT_8(struct sp_hostmem_rec);
TS_AT_8(struct sp_segment_rec);
TS_AT_8(struct sp_window_rec);
TS_AT_8(struct sp_clock_rec);
TS_AT_8(struct sp_rank_rec);
TS_AT_8(struct sp_runq_rec);
TS_AT_8(struct sp_exit_status_rec);
TS_AT_8(struct sp_gpu_state_rec);
TS_AT_8(struct sp_srvmetric_rec);
TS_AT_8(struct sp_attach_rec);
TS_AT_8(struct sp_sample_rec);

bool tf_record_ts(const void *rec, size_t size, __u64 *ts)
{
	const struct sp_rec_hdr *h = rec;

	*ts = 0;
	if (size < sizeof(*h))
		return false;
	switch (h->type) {
	case SP_REC_CALL:
	case SP_REC_CALL_PACKED:
	case SP_REC_RET:
	case SP_REC_FORK:
	case SP_REC_LIBMAP:
	case SP_REC_EXEC:
	case SP_REC_STATS:
	case SP_REC_END:
	case SP_REC_EXIT:
	case SP_REC_LIB:
	case SP_REC_PROC:
	case SP_REC_CALIB:
	case SP_REC_CPU:
	case SP_REC_HOSTMEM:
	case SP_REC_SEGMENT:
	case SP_REC_WINDOW:
	case SP_REC_CLOCK:
	case SP_REC_RANK:
	case SP_REC_GPU_STATE:
	case SP_REC_SRVMETRIC:
	case SP_REC_RUNQ:
	case SP_REC_EXIT_STATUS:
	case SP_REC_ATTACH:
	case SP_REC_SAMPLE:
		/* all of these keep it at offset 8 (TS_AT_8 above) */
		if (size < 8 + sizeof(*ts))
			return false;
		memcpy(ts, (const char *)rec + 8, sizeof(*ts));
		return true;
	case SP_REC_GPU:
		/* an execution is placed by its end: it is known complete from then on */
		if (size < sizeof(struct sp_gpu_rec))
			return false;
		memcpy(ts, (const char *)rec + offsetof(struct sp_gpu_rec, end), sizeof(*ts));
		return true;
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

/* Rings, dumps and merges: what the file holds of its recording, and its clocks. */
static int header__apply_flight(struct tf_header *hdr, const void *rec, __u16 size)
{
	const struct sp_rec_hdr *h = rec;
	struct sp_clock_rec *clocks;

	if (h->type == SP_REC_SEGMENT && size == sizeof(hdr->segment)) {
		/* the first says what is missing before this file; later ones continue it */
		if (!hdr->segment.type)
			memcpy(&hdr->segment, rec, sizeof(hdr->segment));
	} else if (h->type == SP_REC_WINDOW && size == sizeof(hdr->window)) {
		memcpy(&hdr->window, rec, sizeof(hdr->window));
	} else if (h->type == SP_REC_CLOCK && size == sizeof(*clocks)) {
		clocks = grow(hdr->clocks, hdr->nr_clocks, sizeof(*clocks));
		if (!clocks)
			return -ENOMEM;
		hdr->clocks = clocks;
		memcpy(&clocks[hdr->nr_clocks], rec, sizeof(*clocks));
		clocks[hdr->nr_clocks++].host[sizeof(clocks->host) - 1] = '\0';
	} else {
		return -EBADMSG;
	}
	return 0;
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
	} else if (h->type >= SP_REC_SEGMENT && h->type <= SP_REC_CLOCK) {
		return header__apply_flight(hdr, rec, size);
	}
	return 0;
}

void tf_header__forget_tgid(struct tf_header *hdr, __u32 tgid)
{
	__u32 n = 0;

	for (__u32 i = 0; i < hdr->nr_maps; i++)
		if (hdr->maps[i].tgid != tgid)
			hdr->maps[n++] = hdr->maps[i];
	hdr->nr_maps = n;
	n = 0;
	for (__u32 i = 0; i < hdr->nr_procs; i++)
		if (hdr->procs[i].tgid != tgid)
			hdr->procs[n++] = hdr->procs[i];
	hdr->nr_procs = n;
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

static int reader__next_in_file(struct tf_reader *r, const void **rec)
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
	if (!r->skipping && ((h.type >= SP_REC_LIB && h.type <= SP_REC_PROC) ||
			     (h.type >= SP_REC_SEGMENT && h.type <= SP_REC_CLOCK))) {
		int ret = tf_header__apply(&r->hdr, p, h.size);

		if (ret)
			return reader__fail(r, ret == -ENOMEM ? ret : -EBADMSG,
					    ret == -ENOMEM ? "%s: out of memory at byte %llu"
							   : "%s: corrupt library record at byte %llu",
					    r->path, (unsigned long long)r->off);
	}
	r->off += h.size;
	r->calls_read += h.type == SP_REC_CALL;
	*rec = p;
	drop_behind(r);
	return 1;
}

/* A later segment repeats state up to its SP_REC_SEGMENT, which must name it. */
static int reader__skip_state(struct tf_reader *r, const void *rec)
{
	const struct sp_segment_rec *seg = rec;
	__u64 before;

	if (seg->type != SP_REC_SEGMENT)
		return 0;
	if (seg->index != r->segs[r->cur_seg])
		return reader__fail(r, -EBADMSG, "%s: segment record says %u", r->path,
				    seg->index);
	r->skipping = false;
	/* what the missing segments held: all before this one, less what was read or rotated */
	before = r->hdr.segment.prior_calls + r->calls_read;
	if (r->after_gap && seg->prior_calls > before)
		r->gaps.lost_calls += seg->prior_calls - before;
	r->after_gap = false;
	return 0;
}

/* After a gap: the tables the missing segments added, each applied as it is handed on. */
static int reader__next_synth(struct tf_reader *r, const void **rec)
{
	const struct sp_rec_hdr *h = (const void *)(r->synth + r->synth_off);
	int ret = tf_header__apply(&r->hdr, h, h->size);

	if (ret)
		return reader__fail(r, ret == -ENOMEM ? ret : -EBADMSG,
				    "%s: the tables before it do not fit its own", r->path);
	r->synth_off += h->size;
	if (r->synth_off == r->synth_len)
		r->synth_off = r->synth_len = 0;
	*rec = h;
	return 1;
}

/* After a gap, the pids of the processes of the missing segments come with the repeated state. */
static bool passes_skip(const struct tf_reader *r, const void *rec)
{
	return r->after_gap && ((const struct sp_rec_hdr *)rec)->type == SP_REC_PROC;
}

int tf_reader__next(struct tf_reader *r, const void **rec)
{
	for (;;) {
		int ret;

		if (r->synth_len)
			return reader__next_synth(r, rec);
		ret = reader__next_in_file(r, rec);
		if (ret == SKIPPED)
			continue;
		if (ret == 0 && r->cur_seg + 1 < r->nr_segs) {
			ret = reader__next_segment(r);
			if (ret)
				return ret;
			continue;
		}
		if (ret <= 0 || !r->skipping)
			return ret;
		if (passes_skip(r, *rec))
			return tf_header__apply(&r->hdr, *rec, sizeof(struct sp_proc_rec)) ?
				reader__fail(r, -ENOMEM, "%s: out of memory", r->path) : 1;
		ret = reader__skip_state(r, *rec);
		if (ret)
			return ret;
	}
}

__u32 tf_reader__segments(const struct tf_reader *r, __u32 *first)
{
	if (first)
		*first = r->nr_segs ? r->segs[0] : 0;
	return r->nr_segs ? r->nr_segs : 1;
}

const struct tf_gaps *tf_reader__gaps(const struct tf_reader *r)
{
	return &r->gaps;
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
	if (r->dirfd >= 0)
		close(r->dirfd);
	free(r->name);
	free(r->path);
	free(r->base);
	free(r->segs);
	free(r->synth);
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
	dst->clocks = dup_table(src->clocks, src->nr_clocks, sizeof(*src->clocks));
	if (!dst->targets || !dst->libs || !dst->probes || !dst->maps || !dst->procs ||
	    !dst->clocks) {
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
	free(hdr->clocks);
	hdr->clocks = NULL;
	hdr->nr_clocks = 0;
	hdr->procs = NULL;
	hdr->nr_procs = 0;
	hdr->targets = NULL;
	hdr->libs = NULL;
	hdr->probes = NULL;
	hdr->maps = NULL;
	hdr->nr_targets = hdr->nr_libs = hdr->nr_probes = hdr->nr_maps = 0;
}
