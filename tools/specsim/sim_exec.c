// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Running work items on a stream's worker: the simulated GPU starts an item when
 * both it and the previous item's end have arrived and sleeps to an absolute
 * deadline, so wake-up latency does not stretch the simulated GPU time.
 */
#include <stdlib.h>
#include <string.h>
#include "sim.h"

long long sim_copy_ns(size_t bytes, long long gbps)
{
	/* GB/s is bytes per nanosecond */
	return sim_dev.copy.latency_ns + (gbps > 0 ? (long long)(bytes / (size_t)gbps) : 0);
}

static void catch_up(u64 *deadline)
{
	u64 now = sim_now_ns();

	if (now > *deadline)
		*deadline = now;
}

static void fill_row(char *dst, unsigned int value, int elem, size_t count)
{
	unsigned short half = value;

	if (elem == 1)
		memset(dst, (int)value, count);
	for (size_t i = 0; elem == 2 && i < count; i++)
		memcpy(dst + i * 2, &half, 2);
	for (size_t i = 0; elem == 4 && i < count; i++)
		memcpy(dst + i * 4, &value, 4);
}

static void fill(const struct sim_node *n)
{
	size_t rows = n->rows ? n->rows : 1;

	for (size_t r = 0; r < rows; r++)
		fill_row((char *)n->dst + r * n->pitch, n->value, n->elem, n->bytes);
}

static void run_node(const struct sim_node *n, u64 *deadline)
{
	switch (n->kind) {
	case NODE_KERNEL:
		if (n->func && n->func->run) {
			/* a hook (an NCCL rendezvous) runs when the kernel starts */
			sim_sleep_until(*deadline);
			long long extra = n->func->run(n->arg);

			catch_up(deadline);
			*deadline += extra > 0 ? extra : 0;
		}
		*deadline += n->dur_ns;
		break;
	case NODE_HOST:
		sim_sleep_until(*deadline);
		n->host_fn(n->arg);
		catch_up(deadline);
		break;
	case NODE_COPY:
		memmove(n->dst, n->src, n->bytes);
		*deadline += n->dur_ns;
		break;
	case NODE_MEMSET:
		fill(n);
		*deadline += n->dur_ns;
		break;
	case NODE_FREE:
		if (sim_dev_forget((CUdeviceptr)(uintptr_t)n->arg) == 0)
			free(n->arg);
		break;
	case NODE_WAIT:
		break;
	}
}

void sim_run_item(struct specsim_stream *s, struct sim_item *it, bool waited)
{
	u64 start = it->enq_ns > s->last_end_ns ? it->enq_ns : s->last_end_ns;
	u64 deadline;

	if (waited)
		start = sim_now_ns();
	deadline = start;
	if (it->exec) {
		for (size_t i = 0; i < it->nr_exec_nodes; i++)
			run_node(&it->exec_nodes[i], &deadline);
	} else {
		run_node(&it->node, &deadline);
	}
	sim_sleep_until(deadline);
	if (it->node.owns_src)
		free((void *)it->node.src);
	s->last_end_ns = deadline;
	it->start_ns = start;
	it->end_ns = deadline;
}

void sim_exec_put(struct specsim_exec *exec)
{
	if (--exec->refs)
		return;
	exec->magic = 0;
	free(exec->nodes);
	free(exec);
}

static const char *const kind_names[] = {
	[NODE_KERNEL] = "kernel", [NODE_HOST] = "host",	  [NODE_COPY] = "copy",
	[NODE_MEMSET] = "memset", [NODE_FREE] = "free", [NODE_WAIT] = "wait",
};

void sim_log_span_locked(struct specsim_stream *s, const struct sim_item *it)
{
	struct sim_span_log *log = &s->log;
	struct specsim_gpu_span *span;

	if (log->len == log->cap) {
		size_t cap = log->cap ? log->cap * 2 : 1024;
		struct specsim_gpu_span *grown = realloc(log->spans, cap * sizeof(*grown));

		if (!grown)
			return;
		log->spans = grown;
		log->cap = cap;
	}
	span = &log->spans[log->len++];
	*span = (struct specsim_gpu_span){
		.stream = s,
		.kind = it->exec ? "graph" : kind_names[it->node.kind],
		.name = !it->exec && it->node.func ? it->node.func->name : NULL,
		.exec = it->exec,
		.start_ns = it->start_ns,
		.end_ns = it->end_ns,
	};
	sim_activity_fill_span(span, s, it);
}

SIM_EXPORT void specsimGpuLogEnable(int on)
{
	pthread_mutex_lock(&sim_dev.lock);
	sim_dev.log_on = on != 0;
	pthread_mutex_unlock(&sim_dev.lock);
}

/* Hands every logged span to fn and forgets them; call when the GPU is idle. */
SIM_EXPORT size_t specsimGpuLogDrain(specsim_span_fn fn, void *ctx)
{
	size_t total = 0;

	pthread_mutex_lock(&sim_dev.lock);
	for (struct specsim_stream *s = sim_dev.streams; s; s = s->next) {
		for (size_t i = 0; i < s->log.len; i++)
			fn(&s->log.spans[i], ctx);
		total += s->log.len;
		s->log.len = 0;
	}
	pthread_mutex_unlock(&sim_dev.lock);
	return total;
}

SIM_EXPORT void specsimSetCopyModel(long long latency_ns, long long pinned_gbps,
				    long long pageable_gbps, long long device_gbps)
{
	pthread_mutex_lock(&sim_dev.lock);
	if (latency_ns)
		sim_dev.copy.latency_ns = latency_ns;
	if (pinned_gbps)
		sim_dev.copy.pinned_gbps = pinned_gbps;
	if (pageable_gbps)
		sim_dev.copy.pageable_gbps = pageable_gbps;
	if (device_gbps)
		sim_dev.copy.device_gbps = device_gbps;
	pthread_mutex_unlock(&sim_dev.lock);
}
