// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * --exercise, NCCL part: every rank makes the same calls in the same order,
 * eagerly on the side stream, so the ranks really meet for each of them.
 */
#include <stdio.h>
#include "rank.h"

#define BF16 ncclBfloat16

static int collectives(struct rank_state *st, ncclComm_t c, void *buf)
{
	CUstream s = st->side;

	CU(ncclAllReduce, (buf, buf, 1024, BF16, ncclSum, c, s), A("send", buf), A("recv", buf),
	   A("count", 1024), A("datatype", BF16), A("op", ncclSum), A("comm", c), A("stream", s));
	CU(ncclAllGather, (buf, buf, 256, BF16, c, s), A("send", buf), A("recv", buf),
	   A("count", 256), A("datatype", BF16), A("comm", c), A("stream", s));
	CU(ncclReduceScatter, (buf, buf, 256, BF16, ncclSum, c, s), A("send", buf),
	   A("recv", buf), A("count", 256), A("datatype", BF16), A("op", ncclSum), A("comm", c),
	   A("stream", s));
	CU(ncclBroadcast, (buf, buf, 512, BF16, 0, c, s), A("send", buf), A("recv", buf),
	   A("count", 512), A("datatype", BF16), A("root", 0), A("comm", c), A("stream", s));
	CU(ncclReduce, (buf, buf, 512, BF16, ncclSum, 0, c, s), A("send", buf), A("recv", buf),
	   A("count", 512), A("datatype", BF16), A("op", ncclSum), A("root", 0), A("comm", c),
	   A("stream", s));
	CU(ncclAlltoAll, (buf, buf, 64, BF16, c, s), A("send", buf), A("recv", buf),
	   A("count", 64), A("datatype", BF16), A("comm", c), A("stream", s));
	CU(ncclGather, (buf, buf, 64, BF16, 0, c, s), A("send", buf), A("recv", buf),
	   A("count", 64), A("datatype", BF16), A("root", 0), A("comm", c), A("stream", s));
	CU(ncclScatter, (buf, buf, 64, BF16, 0, c, s), A("send", buf), A("recv", buf),
	   A("count", 64), A("datatype", BF16), A("root", 0), A("comm", c), A("stream", s));
	return 0;
}

/* A ring: send to the next rank, receive from the previous, in one group. */
static int ring(struct rank_state *st, ncclComm_t c, void *buf)
{
	int next = (st->rank + 1) % env.ranks, prev = (st->rank + env.ranks - 1) % env.ranks;
	CUstream s = st->side;

	CU(ncclGroupStart, ());
	CU(ncclSend, (buf, 128, BF16, next, c, s), A("send", buf), A("count", 128),
	   A("datatype", BF16), A("peer", next), A("comm", c), A("stream", s));
	CU(ncclRecv, (buf, 128, BF16, prev, c, s), A("recv", buf), A("count", 128),
	   A("datatype", BF16), A("peer", prev), A("comm", c), A("stream", s));
	CU(ncclGroupEnd, ());
	CU(cuStreamSynchronize, (s), A("stream", s));
	return 0;
}

static int split(struct rank_state *st, void *buf)
{
	ncclComm_t sub = NULL;
	int color = st->rank % 2;

	CU(ncclCommSplit, (st->comm, color, st->rank, &sub, NULL), A("comm", st->comm),
	   A("color", color), A("key", st->rank), A("new_comm_out", &sub), A("config", 0),
	   A("comm_new", sub));
	CU(ncclAllReduce, (buf, buf, 256, BF16, ncclSum, sub, st->side), A("send", buf),
	   A("recv", buf), A("count", 256), A("datatype", BF16), A("op", ncclSum), A("comm", sub),
	   A("stream", st->side));
	CU(cuStreamSynchronize, (st->side), A("stream", st->side));
	CU(ncclCommAbort, (sub), A("comm", sub));
	return 0;
}

/* Rank 0 makes an id and passes it through FILE.N, as with the first one. */
static int shared_id(struct rank_state *st, int n, ncclUniqueId *id)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s.%d", env.uid_file ? env.uid_file : "", n);
	if (st->rank == 0) {
		CU(ncclGetUniqueId, (id), A("id_out", id));
		return env.uid_file ? publish_uid(path, id) : 0;
	}
	return fetch_uid(path, id);
}

/* Two more communicators over the same ranks: InitRankConfig and InitRankScalable. */
static int more_comms(struct rank_state *st)
{
	ncclUniqueId id;
	ncclComm_t c = NULL;

	if (shared_id(st, 2, &id))
		return -1;
	CU(ncclCommInitRankConfig, (&c, env.ranks, id, st->rank, NULL), A("comm_out", &c),
	   A("nranks", env.ranks), A("rank", st->rank), A("config", 0), A("comm", c));
	CU(ncclCommFinalize, (c), A("comm", c));
	CU(ncclCommDestroy, (c), A("comm", c));
	if (shared_id(st, 3, &id))
		return -1;
	CU(ncclCommInitRankScalable, (&c, env.ranks, st->rank, 1, &id, NULL), A("comm_out", &c),
	   A("nranks", env.ranks), A("rank", st->rank), A("num_ids", 1), A("ids", &id),
	   A("config", 0), A("comm", c));
	CU(ncclCommDestroy, (c), A("comm", c));
	return 0;
}

/* One process driving two devices: a group over both comms, two streams. */
static int init_all(struct rank_state *st, void *buf)
{
	ncclComm_t comms[2] = { NULL, NULL };

	CU(ncclCommInitAll, (comms, 2, NULL), A("comms_out", comms), A("ndev", 2),
	   A("devlist", 0), A("comm", comms[0]), A("comm_1", comms[1]));
	CU(ncclGroupStart, ());
	CU(ncclAllReduce, (buf, buf, 128, BF16, ncclSum, comms[0], st->main), A("send", buf),
	   A("recv", buf), A("count", 128), A("datatype", BF16), A("op", ncclSum),
	   A("comm", comms[0]), A("stream", st->main));
	CU(ncclAllReduce, (buf, buf, 128, BF16, ncclSum, comms[1], st->side), A("send", buf),
	   A("recv", buf), A("count", 128), A("datatype", BF16), A("op", ncclSum),
	   A("comm", comms[1]), A("stream", st->side));
	CU(ncclGroupEnd, ());
	CU(cuStreamSynchronize, (st->main), A("stream", st->main));
	CU(cuStreamSynchronize, (st->side), A("stream", st->side));
	CU(ncclCommDestroy, (comms[0]), A("comm", comms[0]));
	CU(ncclCommDestroy, (comms[1]), A("comm", comms[1]));
	return 0;
}

int exercise__nccl(struct rank_state *st)
{
	void *buf = (void *)(uintptr_t)st->hidden;
	int count = 0, me = -1;

	CU(ncclCommCount, (st->comm, &count), A("comm", st->comm), A("count_out", &count),
	   A("count", count));
	CU(ncclCommUserRank, (st->comm, &me), A("comm", st->comm), A("rank_out", &me),
	   A("rank", me));
	if (collectives(st, st->comm, buf))
		return -1;
	CU(cuStreamSynchronize, (st->side), A("stream", st->side));
	if (ring(st, st->comm, buf) || split(st, buf) || more_comms(st) || init_all(st, buf))
		return -1;
	return 0;
}
