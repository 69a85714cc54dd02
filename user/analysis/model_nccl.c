// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Collectives and communicators. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_int.h"

int nccl__collective(struct model *m, struct model_proc *p, struct model_thread *t,
		     const struct sp_call *c, const struct probe_info *pi)
{
	/* ncclDataType_t 0..11: int8, uint8, (u)int32, (u)int64, half, float, double, bf16, fp8 */
	static const __u8 type_bytes[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
	__u64 stream, count = arg_or0(c, pi->count), type = arg_or0(c, pi->datatype);
	struct model_capture *cap;
	struct model_collective *coll = NULL;

	if (!arg(c, pi->stream, &stream))
		return 0;
	cap = graphs__capturing(m, c, stream);
	if (!cap) {
		inflight__launched(m, p, c, stream, WORK_KERNEL);
		return graphs__loop_event(m, t, c, pi, LOOP_COLLECTIVE, 0, stream_key(c, stream), 0);
	}
	for (__u32 i = 0; i < cap->nr_colls; i++)
		if (cap->colls[i].name == pi->catalog)
			coll = &cap->colls[i];
	if (!coll) {
		if (!store__grow_array((void **)&cap->colls, &cap->cap_colls, cap->nr_colls + 1,
				       sizeof(*cap->colls)))
			return -ENOMEM;
		coll = &cap->colls[cap->nr_colls++];
		memset(coll, 0, sizeof(*coll));
		coll->name = pi->catalog;
	}
	coll->count++;
	coll->bytes += count * (type < sizeof(type_bytes) ? type_bytes[(__u32)type] : 1);
	return 0;
}

void nccl__comm_init(struct model_proc *p, const struct sp_call *c, const struct probe_info *pi)
{
	__u64 rank, nranks;

	/* the first communicator made while traced wins over all that the process showed */
	if (!succeeded(c) || p->rank_from == RANK_FROM_NCCL_INIT || !arg(c, pi->rank, &rank) ||
	    !arg(c, pi->nranks, &nranks))
		return;
	p->rank = (int)rank;
	p->nranks = (int)nranks;
	p->rank_from = RANK_FROM_NCCL_INIT;
	p->rank_what[0] = '\0';
}

const char *rank_from__name(enum rank_from from)
{
	static const char *const names[] = {
		[RANK_FROM_NCCL_INIT] = "nccl-init", [RANK_FROM_NCCL_COMM] = "nccl-comm",
		[RANK_FROM_ENVIRON] = "environ",     [RANK_FROM_TITLE] = "title",
		[RANK_FROM_DEVICE] = "device",
	};

	return from < sizeof(names) / sizeof(names[0]) ? names[from] : NULL;
}

/* A record's source as the model ranks it; RANK_FROM_NONE for one it does not know. */
static enum rank_from record_from(__u32 from)
{
	switch (from) {
	case SP_RANK_NCCL_COMM:
		return RANK_FROM_NCCL_COMM;
	case SP_RANK_ENVIRON:
		return RANK_FROM_ENVIRON;
	case SP_RANK_TITLE:
		return RANK_FROM_TITLE;
	case SP_RANK_DEVICE:
		return RANK_FROM_DEVICE;
	default:
		return RANK_FROM_NONE;
	}
}

/* Only a more trusted source replaces what is known; NCCL init seen is the most trusted. */
static void take_rank(struct model_proc *p, const struct sp_rank_rec *r)
{
	enum rank_from from = record_from(r->from);

	if (from == RANK_FROM_NONE || r->rank < 0 ||
	    (p->rank_from != RANK_FROM_NONE && p->rank_from <= from))
		return;
	p->rank = r->rank;
	p->nranks = r->nranks > r->rank ? r->nranks : -1;
	p->rank_from = from;
	/* the recording's bytes, made a string whatever they hold */
	for (size_t i = 0; i < sizeof(p->rank_what) - 1; i++) {
		unsigned char ch = r->what[i];

		p->rank_what[i] = ch >= 0x20 && ch < 0x7f ? ch : ch ? '?' : '\0';
	}
	p->rank_what[sizeof(p->rank_what) - 1] = '\0';
}

void nccl__rank_record(struct model *m, const void *rec, size_t size)
{
	const struct sp_rank_rec *r = rec;
	struct model_proc *p;
	struct sp_rank_rec *kept;

	if (size < sizeof(*r))
		return;
	p = hmap__get(&m->procs, r->tgid, 0);
	if (p) {
		take_rank(p, r);
		return;
	}
	kept = hmap__get(&m->ranks, r->tgid, 0);
	if (kept) {
		/* the better of the two waits for the process's first call */
		struct model_proc probe = { .rank = -1, .nranks = -1 };

		take_rank(&probe, kept);
		take_rank(&probe, r);
		if (probe.rank_from == record_from(kept->from))
			return;
	} else {
		kept = malloc(sizeof(*kept));
		if (!kept || hmap__set(&m->ranks, r->tgid, 0, kept)) {
			free(kept);
			m->view.out_of_memory = true;
			return;
		}
	}
	memcpy(kept, r, sizeof(*kept));
}

void nccl__rank_adopt(struct model *m, struct model_proc *p)
{
	const struct sp_rank_rec *kept = hmap__get(&m->ranks, p->tgid, 0);

	if (kept)
		take_rank(p, kept);
}
