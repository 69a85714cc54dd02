/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The evidence of a loop's roles, each piece and how it voted (report-json:
 * loops[].role_evidence): the kernels (roles.c: captured kernels, sync waits,
 * eager bursts' sizes and repeats, call sites of syncs) and the Python frames
 * recorded at syncs (frames.c). The next decoder adds a piece here.
 */
#ifndef __ROLES_H
#define __ROLES_H

#include <stdbool.h>
#include <linux/types.h>
#include "model.h"

/* Outermost frames kept of what every sync of a thread shares. */
#define FRAME_PREFIX_MAX 32
/* Loop statements kept that draft, and that read the verify's result. */
#define FRAME_STMTS 8
/* Sync sites kept of the nested generation's model code, and the frames that make one. */
#define FRAME_SITES 32
#define FRAME_SITE_DEPTH 3

/* The frames every sync shared, outermost first (code objects). */
struct frame_prefix {
	__u64 code[FRAME_PREFIX_MAX];
	__u32 nr;
	bool known;
};

/* What the Python frames told of a thread's generation loop (frames.c). */
struct frame_loop {
	struct frame_prefix prefix;
	__u64 loop_code;		/* the loop's function: first frame past the prefix */
	__u64 draft_stmts[FRAME_STMTS];	/* its statements a nested generation ran under */
	__u32 nr_draft_stmts;
	__u64 model_sites[FRAME_SITES];	/* where its nested syncs were made (code, line) */
	__u32 nr_model_sites;
	bool nested;			/* some sync ran a generation inside the loop's */
};

struct role_evidence {
	/* the kernels' reading (roles.c), what it would say alone */
	enum role_source kernels_from;
	__u32 kernels_verify;		/* exec id it took as verify, if kernels_said */
	bool kernels_said;
	/* the Python frames: eager bursts voted draft, verify and extend */
	__u32 frame_draft, frame_verify, frame_extend;
	/* ... and the sampled first launches of bursts, by their own frames */
	__u32 launch_draft, launch_verify, launch_extend;
	/* forwards both voted on: the launches' role the syncs' or not */
	__u32 launch_agreed, launch_disagreed;
	struct frame_loop frames;
	enum role_source decided_by;	/* the piece that chose the verify */
};

struct cs_stack;
/* Does the stack run a generation inside the loop's (a frame of the prefix again)? */
bool frames__nested(const struct frame_prefix *fp, const struct cs_stack *st);
/*
 * Was a sync of this stack, made between a round's extend and its verify,
 * the draft's own: nested, under the statement that drafts, or not under
 * the loop's function at all (its walk lost frames)?
 */
bool frames__in_draft(const struct frame_loop *fl, const struct cs_stack *st);
/* Was it a loop sync made in model code the nested generation ran too (a forward's own)? */
bool frames__in_forward(const struct frame_loop *fl, const struct cs_stack *st);

#endif /* __ROLES_H */
