// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Python code objects of a traced process: names and line tables, read from outside. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pycode.h"
#include "pyprocs.h"

#define LINETABLE_MAX	(256 * 1024)	/* bytes of a line table read */

/* Line entries as they are decoded: empty ranges dropped, equal neighbours merged. */
struct line_out {
	struct sp_pyline *lines;
	size_t nr, max;
	bool full;
};

/* When the table fills, its last entry becomes "no line from here on". */
/* A line number that left int's range: only a malformed table gets there. */
static bool line_overflows(__s64 line)
{
	return line < INT32_MIN || line > INT32_MAX;
}

static void line_out__range(struct line_out *out, __u32 start, __u32 end, __s32 line)
{
	if (end <= start || out->full || !out->max)
		return;
	if (out->nr && out->lines[out->nr - 1].line == line)
		return;
	if (out->nr == out->max) {
		/* merged into an unknown neighbour, or made unknown itself */
		if (out->nr > 1 && out->lines[out->nr - 2].line == -1)
			out->nr--;
		else
			out->lines[out->nr - 1].line = -1;
		out->full = true;
		return;
	}
	out->lines[out->nr].instr = start;
	out->lines[out->nr].line = line;
	out->nr++;
}

/* 3.10: (bytecode bytes, signed line delta) pairs; a delta of -128 means no line. */
static int decode_310(const __u8 *t, size_t len, int firstlineno, struct line_out *out)
{
	__u32 start = 0, end;
	__s64 line = firstlineno;
	size_t i;

	if (len % 2)
		return -EINVAL;
	for (i = 0; i < len; i += 2) {
		__s8 ldelta = (__s8)t[i + 1];

		end = start + t[i];
		if (ldelta == -128) {
			line_out__range(out, start, end, -1);
		} else {
			line += ldelta;
			if (line_overflows(line))
				return -EINVAL;
			line_out__range(out, start, end, line);
		}
		start = end;
	}
	return 0;
}

/* 6-bit groups, least significant first, 0x40 marking that another follows. */
static int read_varint(const __u8 *t, size_t len, size_t *pos, __u32 *val)
{
	unsigned int shift = 0;
	__u32 v = 0;

	do {
		if (*pos >= len || shift > 30)
			return -EINVAL;
		v |= (__u32)(t[*pos] & 0x3f) << shift;
		shift += 6;
	} while (t[(*pos)++] & 0x40);
	*val = v;
	return 0;
}

static int read_svarint(const __u8 *t, size_t len, size_t *pos, __s32 *val)
{
	__u32 u;

	if (read_varint(t, len, pos, &u))
		return -EINVAL;
	*val = u & 1 ? -(__s32)(u >> 1) : (__s32)(u >> 1);
	return 0;
}

/* The line delta of one 3.11+ location entry of kind code, its operands skipped. */
static int location_delta(unsigned int code, const __u8 *t, size_t len, size_t *pos,
			  __s32 *delta)
{
	__u32 skip;
	int i;

	*delta = 0;
	if (code == 15)
		return 0;			/* no location */
	if (code == 14) {			/* long form: line, end line, columns */
		if (read_svarint(t, len, pos, delta))
			return -EINVAL;
		for (i = 0; i < 3; i++)
			if (read_varint(t, len, pos, &skip))
				return -EINVAL;
		return 0;
	}
	if (code == 13)				/* no columns */
		return read_svarint(t, len, pos, delta);
	if (code >= 10) {			/* one line: delta code - 10, two column bytes */
		*delta = code - 10;
		*pos += 2;
	} else {				/* short form: same line, one column byte */
		*pos += 1;
	}
	return *pos <= len ? 0 : -EINVAL;
}

/* 3.11+: entries of 1..8 code units, each opening with a byte whose top bit is set. */
static int decode_311(const __u8 *t, size_t len, int firstlineno, struct line_out *out)
{
	__u32 start = 0, end;
	__s64 line = firstlineno;
	__s32 delta;
	size_t pos = 0;

	while (pos < len) {
		__u8 head = t[pos++];
		unsigned int code = (head >> 3) & 15;

		if (!(head & 0x80))
			return -EINVAL;
		end = start + ((head & 7) + 1) * 2;
		if (location_delta(code, t, len, &pos, &delta))
			return -EINVAL;
		line += delta;
		if (line_overflows(line))
			return -EINVAL;
		line_out__range(out, start, end, code == 15 ? -1 : line);
		start = end;
	}
	return 0;
}

int pycode__decode_lines(unsigned int minor, const __u8 *table, size_t len, int firstlineno,
			 struct sp_pyline *lines, size_t max, bool *complete)
{
	struct line_out out = { .lines = lines, .max = max };
	int ret;

	ret = minor >= 11 ? decode_311(table, len, firstlineno, &out)
			  : decode_310(table, len, firstlineno, &out);
	if (ret)
		return ret;
	*complete = !out.full;
	return (int)out.nr;
}

static int read_ptr(pid_t tgid, __u64 addr, __u64 *val)
{
	return pyprocs__read(tgid, addr, val, sizeof(*val));
}

/* Code point cp as UTF-8 into out (room for 4): the bytes written. */
static size_t utf8_put(__u32 cp, char *out)
{
	if (cp < 0x80) {
		out[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = 0xc0 | cp >> 6;
		out[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = 0xe0 | cp >> 12;
		out[1] = 0x80 | (cp >> 6 & 0x3f);
		out[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	out[0] = 0xf0 | cp >> 18;
	out[1] = 0x80 | (cp >> 12 & 0x3f);
	out[2] = 0x80 | (cp >> 6 & 0x3f);
	out[3] = 0x80 | (cp & 0x3f);
	return 4;
}

/* nr characters of kind bytes each (1, 2 or 4) as UTF-8, cut to fit out[cap]. */
static void chars_to_utf8(const __u8 *data, size_t nr, unsigned int kind, char *out, size_t cap)
{
	size_t i, len = 0;
	char enc[4];

	for (i = 0; i < nr; i++) {
		__u32 cp = kind == 1 ? data[i] : kind == 2 ? ((const __u16 *)data)[i]
							    : ((const __u32 *)data)[i];
		size_t n = utf8_put(cp, enc);

		if (len + n >= cap)
			break;
		memcpy(out + len, enc, n);
		len += n;
	}
	out[len] = '\0';
}

/*
 * A str object as UTF-8 (compact strings: ASCII, and 1-, 2- or 4-byte kinds),
 * cut to cap - 1 bytes: 0, -EFAULT, or -EINVAL for a legacy (non-compact) string.
 */
static int read_str(pid_t tgid, const struct py_offsets *off, __u64 obj, char *out, size_t cap)
{
	__u32 state, kind;
	__s64 length;
	__u8 *data;
	size_t bytes;
	int ret;

	if (pyprocs__read(tgid, obj + off->unicode_length, &length, sizeof(length)) ||
	    pyprocs__read(tgid, obj + off->unicode_state, &state, sizeof(state)))
		return -EFAULT;
	kind = state >> off->unicode_kind_shift & 7;
	if (!(state >> off->unicode_compact_bit & 1) || length < 0 ||
	    (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	if ((size_t)length > cap - 1)
		length = cap - 1;	/* UTF-8 is never shorter than the characters */
	if (state >> off->unicode_ascii_bit & 1) {
		ret = pyprocs__read(tgid, obj + off->unicode_ascii_size, out, length);
		out[ret ? 0 : length] = '\0';
		return ret;
	}
	bytes = (size_t)length * kind;
	data = malloc(bytes ? bytes : 1);
	if (!data)
		return -ENOMEM;
	ret = pyprocs__read(tgid, obj + off->unicode_compact_size, data, bytes);
	if (!ret)
		chars_to_utf8(data, length, kind, out, cap);
	free(data);
	return ret;
}

/* Is obj's type named "code"? Guards against a stale or misread pointer. */
static int check_code_type(pid_t tgid, const struct py_offsets *off, __u64 obj)
{
	__u64 type, name;
	char tp_name[8];

	if (read_ptr(tgid, obj + off->object_type, &type) ||
	    read_ptr(tgid, type + off->type_name, &name) ||
	    pyprocs__read(tgid, name, tp_name, 5))
		return -EFAULT;
	return memcmp(tp_name, "code", 5) ? -EINVAL : 0;
}

/* co_linetable's bytes, malloc'd: 0 or -errno. */
static int read_linetable(pid_t tgid, const struct py_offsets *off, __u64 code, __u8 **table,
			  size_t *len)
{
	__u64 bytes_obj;
	__s64 size;
	int ret;

	*table = NULL;
	*len = 0;
	if (read_ptr(tgid, code + off->code_linetable, &bytes_obj) ||
	    pyprocs__read(tgid, bytes_obj + off->bytes_size, &size, sizeof(size)))
		return -EFAULT;
	if (size < 0 || size > LINETABLE_MAX)
		return -EINVAL;
	*table = malloc(size ? size : 1);
	if (!*table)
		return -ENOMEM;
	ret = pyprocs__read(tgid, bytes_obj + off->bytes_data, *table, size);
	if (ret) {
		free(*table);
		*table = NULL;
		return ret;
	}
	*len = size;
	return 0;
}

/* A name field: a string the reader cannot decode is named "?" rather than dropped. */
static int read_name(pid_t tgid, const struct py_offsets *off, __u64 code, unsigned int field,
		     char *out, size_t cap)
{
	__u64 obj;
	int ret;

	if (read_ptr(tgid, code + field, &obj))
		return -EFAULT;
	ret = read_str(tgid, off, obj, out, cap);
	if (ret == -EINVAL)
		strcpy(out, "?");
	return ret == -EINVAL ? 0 : ret;
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Header, names and padding into buf; the lines go after: their offset, or -ENOSPC. */
static int write_head(struct sp_pycode_rec *rec, size_t cap, const char *file, const char *name)
{
	size_t file_len = strlen(file) + 1, name_len = strlen(name) + 1;
	size_t lines_at = align8(sizeof(*rec) + file_len + name_len);

	if (lines_at + sizeof(struct sp_pyline) > cap)
		return -ENOSPC;
	rec->file_len = file_len;
	rec->name_len = name_len;
	memcpy((char *)(rec + 1), file, file_len);
	memcpy((char *)(rec + 1) + file_len, name, name_len);
	memset((char *)(rec + 1) + file_len + name_len, 0,
	       lines_at - sizeof(*rec) - file_len - name_len);
	return (int)lines_at;
}

int pycode__record(pid_t tgid, __u64 code, void *buf, size_t cap)
{
	const struct py_proc *proc = pyprocs__find(tgid);
	char file[PYCODE_STR_MAX], name[PYCODE_STR_MAX];
	struct sp_pycode_rec *rec = buf;
	const struct py_offsets *off;
	struct sp_pyline *lines;
	size_t table_len, max_lines;
	__u8 *table;
	bool complete;
	int lines_at, nr, ret;

	if (!proc)
		return -ENOENT;
	off = &proc->off;
	if (cap > 0xfff8)
		cap = 0xfff8;		/* the record's size is 16 bits */
	memset(rec, 0, cap < sizeof(*rec) ? cap : sizeof(*rec));
	if (cap < sizeof(*rec))
		return -ENOSPC;
	ret = check_code_type(tgid, off, code);
	if (!ret)
		ret = read_name(tgid, off, code, off->code_filename, file, sizeof(file));
	if (!ret)
		ret = read_name(tgid, off, code, off->code_qualname != PYOFF_NONE ?
				off->code_qualname : off->code_name, name, sizeof(name));
	if (!ret && pyprocs__read(tgid, code + off->code_firstlineno, &rec->firstlineno, 4))
		ret = -EFAULT;
	if (ret)
		return ret;
	lines_at = write_head(rec, cap, file, name);
	if (lines_at < 0)
		return lines_at;
	ret = read_linetable(tgid, off, code, &table, &table_len);
	if (ret)
		return ret;
	max_lines = (cap - lines_at) / sizeof(struct sp_pyline);
	lines = (struct sp_pyline *)((char *)buf + lines_at);
	nr = pycode__decode_lines(off->minor, table, table_len, rec->firstlineno, lines, max_lines,
				  &complete);
	free(table);
	if (nr < 0)
		return nr;
	rec->type = SP_REC_PYCODE;
	rec->tgid = tgid;
	rec->code = code;
	rec->nr_lines = nr;
	rec->size = lines_at + nr * sizeof(struct sp_pyline);
	return rec->size;
}
