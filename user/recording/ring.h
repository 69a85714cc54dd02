/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A bounded recording: a ring of segment files BASE.0, BASE.1 ... each a
 * whole recording of its own (the header as the tables stood when it began,
 * then the state it needs repeated, then an SP_REC_SEGMENT saying what the
 * segments before it held). The oldest is removed before the next is
 * created, so the files together never pass the budget. Only processes
 * still alive carry their tables and state into the next segment.
 */
#ifndef __RING_H
#define __RING_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "tracefile.h"

#define TF_RING_SEGMENTS	4		/* the budget is split in this many files */
#define TF_RING_MIN_BYTES	(256u << 10)	/* smallest --max-size */

struct tf_ring;

/*
 * Start segment 0 of base. Without force, base or any BASE.N there is an
 * error; with force they (and dumps BASE.hung-K.N) are removed first.
 * The folder of base is resolved once through no link another user could
 * plant (safepath.h) and held open: every segment is made, linked and removed
 * in it, whatever is renamed or planted along its path later.
 * NULL with a one-line reason in err.
 */
struct tf_ring *tf_ring__create(const char *base, bool force, mode_t mode,
				const struct tf_header *hdr, __u64 max_bytes, char *err,
				size_t err_sz);
/* As tf_writer__write; rotates first when the record would take the segment past its share. */
int tf_ring__write(struct tf_ring *r, const void *rec, size_t size);
int tf_ring__flush(struct tf_ring *r);
int tf_ring__close(struct tf_ring *r);
/*
 * Close the segment being written, start the next, and hard-link every
 * segment kept before it as BASE<suffix>.N beside them (a set that reads
 * alone). The number of segments linked, or -errno with the reason in the
 * ring's error.
 */
int tf_ring__dump(struct tf_ring *r, const char *suffix);
const char *tf_ring__error(const struct tf_ring *r);
/* Bytes written over all segments, those removed included. */
__u64 tf_ring__bytes(const struct tf_ring *r);
/*
 * Records of process state (host memory, code objects, mappings a stack names)
 * left out of segment preambles that had no room for them (half a segment).
 */
__u64 tf_ring__left_out(const struct tf_ring *r);
/* Segments removed so far, and the calls they held. */
__u32 tf_ring__rotated(const struct tf_ring *r, __u64 *calls);
void tf_ring__free(struct tf_ring *r);
/*
 * Is path, by device and inode, the recording base or one of its segments
 * BASE.N (what a reader of base may read)? False when path does not exist.
 */
bool tf_ring__names(const char *base, const char *path);
/*
 * Would a reader of base take path for base itself or for one of its segments,
 * whether or not it exists (same folder by device and inode, name BASE or
 * BASE.N)? A file written there changes what base reads as.
 */
bool tf_ring__claims(const char *base, const char *path);

#endif /* __RING_H */
