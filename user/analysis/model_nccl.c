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
		return graphs__loop_event(t, c, pi, LOOP_COLLECTIVE, 0, stream_key(c, stream), 0);
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

	if (!succeeded(c) || p->rank >= 0 || !arg(c, pi->rank, &rank) ||
	    !arg(c, pi->nranks, &nranks))
		return;
	p->rank = (int)rank;
	p->nranks = (int)nranks;
}
