// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The entities and their store: processes, threads, streams, events, names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_int.h"
bool store__grow_array(void **array, __u32 *cap, __u32 need, size_t elem)
{
	__u32 n = *cap ? *cap : 8;
	void *grown;

	if (need <= *cap)
		return true;
	while (n < need)
		n *= 2;
	grown = realloc(*array, (size_t)n * elem);
	if (!grown)
		return false;
	*array = grown;
	*cap = n;
	return true;
}

/* Append p to an array of pointers whose capacity doubles from 16: full at 16, 32, ... */
bool store__push_ptr(void ***array, size_t *len, void *p)
{
	if (!*len || (*len >= 16 && !(*len & (*len - 1)))) {
		size_t cap = *len ? *len * 2 : 16;
		void **grown = realloc(*array, cap * sizeof(*grown));

		if (!grown)
			return false;
		*array = grown;
	}
	(*array)[(*len)++] = p;
	return true;
}

struct model_proc *store__proc_get(struct model *m, __u32 tgid)
{
	struct model_proc *p = hmap__get(&m->procs, tgid, 0);
	struct host_ranges *host;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p || hmap__set(&m->procs, tgid, 0, p) ||
	    !store__push_ptr((void ***)&m->view.procs, &m->view.nr_procs, p)) {
		free(p);
		return NULL;
	}
	p->tgid = tgid;
	p->rank = p->nranks = p->device = -1;
	nccl__rank_adopt(m, p);
	host = hmap__get(&m->hostmaps, tgid, 0);
	if (host) {
		p->host = *host;
		*host = (struct host_ranges){ 0 };
	}
	return p;
}

struct model_thread *store__thread_get(struct model *m, struct model_proc *p, __u32 tid)
{
	/* by process too: a tid another process had, or a damaged record's, is another thread */
	struct model_thread *t = hmap__get(&m->threads, tid, p->tgid);

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t || hmap__set(&m->threads, tid, p->tgid, t) ||
	    !store__push_ptr((void ***)&m->view.threads, &m->view.nr_threads, t)) {
		free(t);
		return NULL;
	}
	t->tid = tid;
	t->tgid = p->tgid;
	t->index = m->view.nr_threads - 1;
	t->late_start_ns = model__late_start(m, tid);
	t->attach_done_ns = model__attach_mark(m, p->tgid);
	p->nr_threads++;
	return t;
}

struct model_stream *store__stream_get(struct model *m, const struct sp_call *c, __u64 handle)
{
	__u64 key = stream_key(c, handle);
	struct model_stream *s = hmap__get(&m->streams, c->entry.tgid, key);

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s || hmap__set(&m->streams, c->entry.tgid, key, s)) {
		free(s);
		return NULL;
	}
	s->tgid = c->entry.tgid;
	s->key = key;
	/* the legacy and per-thread default streams need no creation to be known blocking */
	s->flags_known = key == 1 || (key & 0xffffffff) == 2;
	if (!store__push_ptr((void ***)&m->all_streams, &m->nr_all_streams, s))
		return NULL;	/* the map owns it */
	return s;
}

struct model_event *store__event_get(struct model *m, __u32 tgid, __u64 handle)
{
	struct model_event *e = hmap__get(&m->events, tgid, handle);

	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e || hmap__set(&m->events, tgid, handle, e)) {
		free(e);
		return NULL;
	}
	return e;
}

static const char *intern(struct model *m, const char *s, size_t max_len)
{
	char *copy = strndup(s, max_len);

	if (!copy || !store__push_ptr((void ***)&m->strings, &m->nr_strings, copy)) {
		free(copy);
		return NULL;
	}
	return copy;
}

int store__named(struct model *m, const struct sp_call *c)
{
	const char *name;
	__u64 handle;

	if (!out_value(c, &handle) || (c->entry.faults & (1 << SP_FAULT_DATA)) || !c->data_len)
		return 0;
	name = intern(m, (const char *)c->data, c->data_len);
	if (!name)
		return -ENOMEM;
	return hmap__set(&m->names, c->entry.tgid, handle, (void *)name);
}

int store__kernel_func(struct model *m, const struct sp_call *c)
{
	const char *name = hmap__get(&m->names, c->entry.tgid, c->entry.args[1]);
	__u64 func;

	if (!name || !out_value(c, &func))
		return 0;
	return hmap__set(&m->names, c->entry.tgid, func, (void *)name);
}

int store__stream_create(struct model *m, struct model_proc *p, const struct sp_call *c,
			 const struct probe_info *pi)
{
	struct model_stream *s;
	__u64 handle;

	if (!out_value(c, &handle))
		return 0;
	p->nr_streams++;
	s = store__stream_get(m, c, handle);
	if (!s)
		return -ENOMEM;
	s->non_blocking = arg_or0(c, pi->flags) & STREAM_NON_BLOCKING;
	s->flags_known = true;
	return 0;
}
