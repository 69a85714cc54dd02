/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Recording files: a versioned header, then the records exactly as the ring buffer gave them. */
#ifndef __TRACEFILE_H
#define __TRACEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "specprobe.h"

#define TF_MAGIC	"SPECPRB\n"	/* 8 bytes */
#define TF_VERSION	1
#define TF_VERSION_STACKS 2	/* version 1 plus call-site records (SP_REC_STACK..OBJMAP) */
/* Version 2 on: kinds a reader does not know in this range are skipped, not corruption. */
#define TF_OPTIONAL_FIRST 64
#define TF_OPTIONAL_LAST 127
#define TF_MAX_RECORD	4096		/* larger record sizes mean corruption */
#define TF_DEFAULT_MODE	0600		/* recordings hold what the traced processes did */

struct tf_lib {
	char *path;		/* as the target maps it */
	char build_id[41];	/* hex, "" if none */
	__u64 dev;
	__u64 ino;
	__u32 kind;		/* enum sp_lib */
};

struct tf_probe {
	char *symbol;		/* exported name attached to, e.g. cuMemcpyDtoHAsync_v2 */
	__u32 lib;		/* index into libs */
	__u32 catalog;		/* index into catalog[] */
	__u64 offset;		/* file offset in the library */
	__u64 vaddr;		/* st_value */
};

/* Where a traced process mapped a probed library (to turn pointers into offsets). */
struct tf_map {
	__u32 tgid;
	__u32 lib;
	__u64 start;
	__u64 end;
	__u64 pgoff;
};

/* A traced process in another pid namespace, from SP_REC_PROC. */
struct tf_proc {
	__u32 tgid;
	__u32 ns_pid;
};

struct tf_header {
	__u32 version;
	char host[65];
	char kernel[65];
	__u64 mono_ns;		/* CLOCK_MONOTONIC and CLOCK_REALTIME read together */
	__u64 realtime_ns;
	__u64 attach_start_ns;	/* CLOCK_MONOTONIC */
	__u64 attach_done_ns;	/* every probe attached from here on */
	__u32 nr_targets;
	__u32 *targets;		/* tgids traced at the start */
	__u32 nr_libs;
	struct tf_lib *libs;
	__u32 nr_probes;
	struct tf_probe *probes;	/* index = cookie */
	__u32 nr_maps;
	struct tf_map *maps;
	__u32 nr_procs;		/* only from records, never in the header body */
	struct tf_proc *procs;
	/* from records too: SP_REC_SEGMENT (the first), SP_REC_WINDOW (the last), SP_REC_CLOCK */
	struct sp_segment_rec segment;	/* .type 0: the file holds its recording from the start */
	struct sp_window_rec window;	/* .type 0: no dump was triggered */
	__u32 nr_clocks;
	struct sp_clock_rec *clocks;
};

/* What the reader missed before the first segment it read (none: all 0). */
static inline bool tf_header__rotated(const struct tf_header *hdr)
{
	return hdr->segment.type && hdr->segment.prior_records;
}

/* Bytes the header takes in a file, magic and length included. */
__u64 tf_header__size(const struct tf_header *hdr);
/* Drop the mappings and namespace pid of a process that exited (a ring's next header). */
void tf_header__forget_tgid(struct tf_header *hdr, __u32 tgid);
/* The pid tgid has in its own pid namespace, or 0 when it is the host's. */
__u32 tf_header__ns_pid(const struct tf_header *hdr, __u32 tgid);

/* Segments missing in the middle of a set (removed by hand, lost): read across, counted. */
struct tf_gaps {
	__u32 missing;		/* segment files missing between the first and the last */
	__u32 first_missing;	/* the number of the first of them */
	__u64 lost_calls;	/* the calls they held, as the segments after them count */
};

struct tf_writer;
struct tf_reader;

/*
 * Create path and write the header. The file is made under a temporary name
 * in the same folder (O_EXCL, never through a symlink) and renamed onto path
 * at once: an existing file is an error unless force, and even then it is
 * replaced by the rename, never truncated or written. A symlink or any other
 * non-regular file at path is refused. Returns NULL with errno set and a
 * message in err.
 */
struct tf_writer *tf_writer__create(const char *path, bool force, const struct tf_header *hdr,
				    char *err, size_t err_sz);
/* The same with the file's mode (TF_DEFAULT_MODE above), set whatever the umask. */
struct tf_writer *tf_writer__create_mode(const char *path, bool force, mode_t mode,
					 const struct tf_header *hdr, char *err, size_t err_sz);
/*
 * The same, but path gets the file only at a clean tf_writer__close: until
 * then, and for good on any failure, what was at path stays as it was, and
 * tf_writer__free removes the temporary file.
 */
struct tf_writer *tf_writer__create_whole(const char *path, bool force, mode_t mode,
					  const struct tf_header *hdr, char *err, size_t err_sz);
/* As tf_writer__create_mode, for name in the folder dirfd (the caller's), shown as path. */
struct tf_writer *tf_writer__create_at(int dirfd, const char *name, const char *path, bool force,
				       mode_t mode, const struct tf_header *hdr, char *err,
				       size_t err_sz);
/* Buffered; returns 0 or -errno (e.g. -ENOSPC), the message in the writer. */
int tf_writer__write(struct tf_writer *w, const void *rec, size_t size);
/* What is buffered to the file now (fsync-free); 0 or -errno. */
int tf_writer__flush(struct tf_writer *w);
/* Flush, fsync-free close (and the rename of a whole file); 0 or -errno. */
int tf_writer__close(struct tf_writer *w);
const char *tf_writer__error(const struct tf_writer *w);
void tf_writer__free(struct tf_writer *w);
__u64 tf_writer__bytes(const struct tf_writer *w);

/* "BASE.N": the name of segment n of a ring written to base. */
void tf_segment_path(char *dst, size_t dst_sz, const char *base, __u32 n);
/* The number N of a file name "BASE.N" (digits only, no leading zero), or -1. */
long long tf_segment_number(const char *name, const char *base);

/*
 * Open and validate the header. NULL with a one-line reason in err. The path
 * is resolved through no link another user could plant (safepath.h) and its
 * folder held open; a segment that is a link, a FIFO or no recording is
 * named with the reason. A path
 * that does not exist but has segments (path.0, path.1 ...) is read as one
 * recording: every segment there, oldest first, each later one's header and
 * repeated state skipped. A gap in their numbers is read across: the tables
 * the missing segments added come as late records (SP_REC_LIB, _PROBE, _MAP),
 * their processes' SP_REC_PROC again, and tf_reader__gaps counts what was
 * lost. A newest segment whose header was cut short (killed as it rotated)
 * ends the set as a cut does.
 */
struct tf_reader *tf_reader__open(const char *path, char *err, size_t err_sz);
const struct tf_header *tf_reader__header(const struct tf_reader *r);
/*
 * Next record: 1 and *rec points to it (valid until the next call), 0 at a
 * clean end of file, -EBADMSG for a corrupt record, -ENODATA when the file
 * stops inside a record (truncated). Details via tf_reader__error.
 */
int tf_reader__next(struct tf_reader *r, const void **rec);
/*
 * The time a record carries (CLOCK_MONOTONIC ns), by its kind: true and *ts
 * set when it has one; false (*ts 0) for kinds without (probe and map tables,
 * call sites, kinds this reader does not know) or a record too short to hold it.
 */
bool tf_record_ts(const void *rec, size_t size, __u64 *ts);
/* Byte offset of the next record (where a cut or corruption was found). */
__u64 tf_reader__offset(const struct tf_reader *r);
const char *tf_reader__error(const struct tf_reader *r);
/* Segments missing inside the set so far (all 0 for a plain file or a whole set). */
const struct tf_gaps *tf_reader__gaps(const struct tf_reader *r);
/* Segments of a set: how many are read (1 for a plain file), the number of the first. */
__u32 tf_reader__segments(const struct tf_reader *r, __u32 *first);
void tf_reader__free(struct tf_reader *r);

void tf_header__free(struct tf_header *hdr);
/* A deep copy that dst owns (free it with tf_header__free); 0 or -ENOMEM. */
int tf_header__copy(struct tf_header *dst, const struct tf_header *src);
/*
 * Extend the tables with a late record (SP_REC_LIB, _PROBE, _MAP, _PROC;
 * other types are left alone). The reader does this itself; live consumers
 * call it. 0, -EBADMSG or -ENOMEM.
 */
int tf_header__apply(struct tf_header *hdr, const void *rec, __u16 size);

#endif /* __TRACEFILE_H */
