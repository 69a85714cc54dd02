// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "log.h"
#include "session.h"
#include "specprobe.skel.h"

struct session {
	struct specprobe_bpf *skel;
	struct ring_buffer *ring;
	struct bpf_link **links;
	int nr_links;
	int cap_links;
	struct bpf_link *exit_link;
	session_record_fn on_record;
	void *ctx;
};

static int ring_cb(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;

	return s->on_record(s->ctx, data, size);
}

static int fill_specs(struct session *s, const struct probe_set *ps)
{
	int fd = bpf_map__fd(s->skel->maps.specs);

	for (__u32 i = 0; i < (__u32)ps->nr_probes; i++) {
		struct sp_probe_spec spec;

		catalog__spec(ps->probes[i].entry, &spec);
		if (bpf_map_update_elem(fd, &i, &spec, BPF_ANY))
			return -errno;
	}
	return 0;
}

struct session *session__open(const struct session_opts *opts, const struct probe_set *ps,
			      char *err, size_t err_sz)
{
	struct session *s = calloc(1, sizeof(*s));
	int ret;

	if (!s) {
		snprintf(err, err_sz, "out of memory");
		return NULL;
	}
	s->on_record = opts->on_record;
	s->ctx = opts->ctx;
	s->skel = specprobe_bpf__open();
	if (!s->skel) {
		snprintf(err, err_sz, "opening the BPF object: %s", strerror(errno));
		goto fail;
	}
	s->skel->rodata->wake_bytes = opts->wake_bytes;
	bpf_map__set_max_entries(s->skel->maps.events, opts->ring_bytes);
	bpf_map__set_max_entries(s->skel->maps.specs, ps->nr_probes ? ps->nr_probes : 1);
	ret = specprobe_bpf__load(s->skel);
	if (ret) {
		snprintf(err, err_sz, "loading the BPF programs: %s (run with -v for the verifier log)",
			 strerror(-ret));
		goto fail;
	}
	ret = fill_specs(s, ps);
	if (ret) {
		snprintf(err, err_sz, "filling the probe specs: %s", strerror(-ret));
		goto fail;
	}
	s->ring = ring_buffer__new(bpf_map__fd(s->skel->maps.events), ring_cb, s, NULL);
	if (!s->ring) {
		snprintf(err, err_sz, "opening the ring buffer: %s", strerror(errno));
		goto fail;
	}
	s->exit_link = bpf_program__attach(s->skel->progs.on_exit);
	if (!s->exit_link) {
		snprintf(err, err_sz, "attaching the exit tracepoint: %s", strerror(errno));
		goto fail;
	}
	return s;
fail:
	session__free(s);
	return NULL;
}

int session__trace_tgid(struct session *s, __u32 tgid)
{
	__u8 one = 1;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.traced), &tgid, &one, BPF_ANY))
		return -errno;
	return 0;
}

static int keep_link(struct session *s, struct bpf_link *link)
{
	if (s->nr_links == s->cap_links) {
		int cap = s->cap_links ? s->cap_links * 2 : 256;
		struct bpf_link **grown = realloc(s->links, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->links = grown;
		s->cap_links = cap;
	}
	s->links[s->nr_links++] = link;
	return 0;
}

static int attach_one(struct session *s, const char *path, __u64 offset, __u32 cookie,
		      bool retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = retprobe);
	struct bpf_program *prog = retprobe ? s->skel->progs.on_return : s->skel->progs.on_entry;
	struct bpf_link *link;

	/* pid -1: one probe per file offset; the tgid map decides who is recorded */
	link = bpf_program__attach_uprobe_opts(prog, -1, path, offset, &opts);
	if (!link)
		return -errno;
	return keep_link(s, link);
}

int session__attach(struct session *s, const struct targets *t, struct probe_set *ps)
{
	int attached = 0, last_err = 0;

	for (int i = 0; i < ps->nr_probes; i++) {
		struct probe *p = &ps->probes[i];
		const char *path = t->libs[p->lib].open_path;
		int ret = attach_one(s, path, p->offset, i, false);

		if (!ret && p->entry->completion)
			ret = attach_one(s, path, p->offset, i, true);
		if (ret) {
			log_warn("attaching %s in %s: %s", p->symbol, t->libs[p->lib].path,
				 strerror(-ret));
			last_err = ret;
			continue;
		}
		p->attached = true;
		attached++;
	}
	return attached || !ps->nr_probes ? attached : last_err;
}

int session__poll(struct session *s, int timeout_ms)
{
	int ret = ring_buffer__poll(s->ring, timeout_ms);

	if (ret < 0)
		return ret;
	/* submits without wakeup raise no epoll event: consume anyway */
	return session__drain(s);
}

int session__drain(struct session *s)
{
	return ring_buffer__consume(s->ring);
}

int session__counters(struct session *s, __u64 totals[SP_CNT_NR])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(s->skel->maps.counters);
	__u64 *per_cpu;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	per_cpu = calloc(ncpu, sizeof(*per_cpu));
	if (!per_cpu)
		return -ENOMEM;
	for (__u32 k = 0; k < SP_CNT_NR; k++) {
		totals[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, per_cpu))
			continue;
		for (int c = 0; c < ncpu; c++)
			totals[k] += per_cpu[c];
	}
	free(per_cpu);
	return 0;
}

int session__nr_links(const struct session *s)
{
	return s->nr_links;
}

void session__free(struct session *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nr_links; i++)
		bpf_link__destroy(s->links[i]);
	free(s->links);
	bpf_link__destroy(s->exit_link);
	ring_buffer__free(s->ring);
	specprobe_bpf__destroy(s->skel);
	free(s);
}
