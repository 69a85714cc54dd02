// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <limits.h>
#include "calibrate.h"
#include "log.h"
#include "multilink.h"
#include "pyprocs.h"
#include "session.h"
#include "specprobe.skel.h"

struct session {
	struct specprobe_bpf *skel;
	struct ring_buffer *ring;
	struct bpf_link **links;
	int nr_links;
	int cap_links;
	int *multi_fds;		/* uprobe_multi links: one per library and direction */
	int nr_multi;
	bool multi;		/* the kernel takes uprobe_multi links */
	bool sessions;		/* ... and uprobe sessions: one program for entry and return */
	struct bpf_link *exit_link;
	struct bpf_link *fork_link;
	struct bpf_link *exec_link;	/* NULL: exec'd images' loaders are not hooked */
	bool loads_hooked;	/* some loader's _dl_debug_state is probed */
	session_record_fn on_record;
	void *ctx;
	bool discard;		/* calibrating: records of our own calls are dropped */
	enum trace_stacks stacks;	/* which probes record their call sites */
	bool windowed;		/* launch probes go in and out in windows (--sample) */
	bool window_open;
	struct launch_link *launch;	/* per library, its launch probes' entry link */
	int nr_launch;
};

/* A library's launch probes, in one entry link while a window is open. */
struct launch_link {
	int fd;			/* -1: out */
	__u32 probes;
};

/* A call record as recordings hold it: the widest form, with room for any data. */
struct wide_call {
	struct sp_call_rec rec;
	__u8 data[SP_DATA_LARGE];
};

/* The ring's packed entry, widened to struct sp_call_rec; 0, or -EINVAL if malformed. */
int session__widen_call(const struct sp_call_pkt *pkt, size_t size, struct sp_call_rec *rec,
			size_t room)
{
	const __u64 *words = (const __u64 *)(pkt + 1);
	size_t data_len = 0, nr_words;

	if (size < sizeof(*pkt) || pkt->size != size)
		return -EINVAL;
	if (pkt->flags & SP_PKT_DATA_SMALL)
		data_len = SP_DATA_SMALL;
	else if (pkt->flags & SP_PKT_DATA_LARGE)
		data_len = SP_DATA_LARGE;
	if (size - sizeof(*pkt) < data_len || (size - sizeof(*pkt) - data_len) % 8 ||
	    room < sizeof(*rec) + data_len)
		return -EINVAL;
	nr_words = (size - sizeof(*pkt) - data_len) / 8;
	if (nr_words > SP_MAX_ARGS || ((pkt->flags & SP_PKT_DIMS) && nr_words != 6))
		return -EINVAL;
	memset(rec, 0, sizeof(*rec));
	rec->type = SP_REC_CALL;
	rec->size = sizeof(*rec) + data_len;
	rec->probe = pkt->probe;
	rec->ts = pkt->ts;
	rec->tgid = pkt->tgid;
	rec->tid = pkt->tid;
	rec->seq = pkt->seq;
	rec->parent_seq = pkt->parent_seq;
	rec->depth = pkt->depth;
	rec->flags = pkt->flags & SP_PKT_HAS_RET ? SP_CALL_HAS_RET : 0;
	if (pkt->flags & SP_PKT_HAS_STACK)
		rec->flags |= SP_CALL_HAS_STACK;
	rec->faults = (pkt->flags >> SP_PKT_FAULT_SHIFT) & ((1 << SP_FAULT_NR) - 1);
	if (pkt->flags & SP_PKT_DIMS) {
		const __u32 *dims = (const __u32 *)&words[1];

		rec->args[0] = words[0];
		for (int i = 0; i < 7; i++)
			rec->args[1 + i] = dims[i];
		rec->args[8] = words[5];
	} else {
		memcpy(rec->args, words, nr_words * 8);
	}
	memcpy(rec + 1, words + nr_words, data_len);
	return 0;
}

static int ring_cb(void *ctx, void *data, size_t size)
{
	const struct sp_rec_hdr *hdr = data;
	struct session *s = ctx;
	struct wide_call wide;

	if (s->discard)
		return 0;
	if (size >= sizeof(*hdr) && hdr->type == SP_REC_CALL_PACKED) {
		if (session__widen_call(data, size, &wide.rec, sizeof(wide)))
			return 0;	/* cannot come from our programs: not recorded */
		return s->on_record(s->ctx, &wide, wide.rec.size);
	}
	return s->on_record(s->ctx, data, size);
}

static bool windowed_probe(const struct session *s, const struct probe *p)
{
	return s->windowed && p->entry->cls == SP_CLASS_LAUNCH;
}

static int fill_specs(struct session *s, const struct probe_set *ps, int first)
{
	int fd = bpf_map__fd(s->skel->maps.specs);

	if (ps->nr_probes > SP_CALIB_PROBE)
		return -E2BIG;
	for (__u32 i = first; i < (__u32)ps->nr_probes; i++) {
		struct sp_probe_spec spec;

		catalog__spec(ps->probes[i].entry, &spec);
		if (windowed_probe(s, &ps->probes[i]))
			spec.flags |= SP_SPEC_WINDOWED;
		if (s->stacks == STACKS_ALL ||
		    (s->stacks == STACKS_SYNCS && catalog__stack_default(ps->probes[i].entry)))
			spec.flags |= SP_SPEC_STACK;
		else if (s->stacks == STACKS_SYNCS)
			spec.stack_pick = catalog__stack_pick(ps->probes[i].entry);
		if (bpf_map_update_elem(fd, &i, &spec, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* How the probes are attached, from the newest kernels' way down. */
enum attach_mode {
	ATTACH_SESSIONS,	/* uprobe_multi links, sessions for the calls with a return */
	ATTACH_MULTI,		/* uprobe_multi links, entry and return apart (6.6+) */
	ATTACH_SINGLE,		/* one perf-event uprobe per probe and direction */
};

/* Open and load the object for one way of attaching. */
static int load_skel(struct session *s, const struct session_opts *opts, enum attach_mode mode)
{
	struct specprobe_bpf *skel = specprobe_bpf__open();

	s->skel = skel;
	if (!skel)
		return -errno;
	skel->rodata->wake_bytes = opts->wake_bytes;
	bpf_map__set_max_entries(skel->maps.events, opts->ring_bytes);
	bpf_program__set_autoload(skel->progs.on_session, mode == ATTACH_SESSIONS);
	bpf_program__set_autoload(skel->progs.on_return, mode != ATTACH_SESSIONS);
	if (mode != ATTACH_SINGLE) {
		bpf_program__set_expected_attach_type(skel->progs.on_entry,
						      (enum bpf_attach_type)UPROBE_MULTI_ATTACH);
		bpf_program__set_expected_attach_type(skel->progs.on_return,
						      (enum bpf_attach_type)UPROBE_MULTI_ATTACH);
		bpf_program__set_expected_attach_type(skel->progs.on_session,
						      (enum bpf_attach_type)UPROBE_SESSION_ATTACH);
		bpf_program__set_expected_attach_type(skel->progs.on_dl_state,
						      (enum bpf_attach_type)UPROBE_MULTI_ATTACH);
	}
	return specprobe_bpf__load(skel);
}

/*
 * Load for the best way the kernel takes; SPECPROBE_NO_SESSIONS=1 and
 * SPECPROBE_SINGLE_PROBES=1 take the paths of older kernels.
 */
static int load_best(struct session *s, const struct session_opts *opts)
{
	enum attach_mode mode = ATTACH_SESSIONS;
	int ret;

	if (getenv("SPECPROBE_SINGLE_PROBES"))
		mode = ATTACH_SINGLE;
	else if (getenv("SPECPROBE_NO_SESSIONS"))
		mode = ATTACH_MULTI;
	for (;; mode++) {
		ret = load_skel(s, opts, mode);
		if (!ret || mode == ATTACH_SINGLE)
			break;
		/* sessions came in 6.13, uprobe_multi in 6.6 */
		log_debug("no %s (%s): trying an older way",
			  mode == ATTACH_SESSIONS ? "uprobe sessions" : "uprobe_multi links",
			  strerror(-ret));
		specprobe_bpf__destroy(s->skel);
		s->skel = NULL;
	}
	s->multi = mode != ATTACH_SINGLE;
	s->sessions = mode == ATTACH_SESSIONS;
	if (!ret && s->sessions)
		s->skel->bss->quiet_pinned = 1;
	return ret;
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
	s->stacks = opts->stacks;
	ret = load_best(s, opts);
	if (ret) {
		snprintf(err, err_sz, "loading the BPF programs: %s (run with -v for the verifier log)",
			 strerror(-ret));
		goto fail;
	}
	ret = fill_specs(s, ps, 0);
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
	s->fork_link = s->exit_link ? bpf_program__attach(s->skel->progs.on_fork) : NULL;
	if (!s->exit_link || !s->fork_link) {
		snprintf(err, err_sz, "attaching the process exit and fork tracepoints: %s",
			 strerror(errno));
		goto fail;
	}
	s->exec_link = bpf_program__attach(s->skel->progs.on_exec);
	if (!s->exec_link)
		log_warn("cannot watch execve (%s): a program exec'd later is not followed into",
			 strerror(errno));
	return s;
fail:
	session__free(s);
	return NULL;
}

/* The BPF side flips bits of the same words at fork and exit: atomic updates. */
static int traced_set(struct session *s, __u32 tgid, bool on)
{
	__u64 bit = 1ULL << (tgid & 63), *word;

	if (tgid >= SP_PID_LIMIT)
		return -ERANGE;
	word = &s->skel->bss->traced_bits[tgid / 64];
	if (on)
		__atomic_fetch_or(word, bit, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_and(word, ~bit, __ATOMIC_SEQ_CST);
	return 0;
}

int session__trace_tgid(struct session *s, __u32 tgid)
{
	return traced_set(s, tgid, true);
}

bool session__own_load(struct session *s, __u32 tgid, bool on)
{
	int fd = bpf_map__fd(s->skel->maps.dl_seen);
	__u32 seen = SP_DL_BASELINE;

	/* a walked process's count is right already: its next load is looked at as ever */
	if (on)
		return bpf_map_update_elem(fd, &tgid, &seen, BPF_NOEXIST) == 0;
	if (bpf_map_lookup_elem(fd, &tgid, &seen))
		return false;
	if (seen != SP_DL_BASELINE)
		return true;
	/* no load came (the agent was there): the next one, maybe CUDA's, is looked at */
	bpf_map_delete_elem(fd, &tgid);
	return false;
}

int session__trace_python(struct session *s, __u32 tgid)
{
	if (s->stacks == STACKS_NONE)
		return 0;
	return pyprocs__add(bpf_map__fd(s->skel->maps.py_procs), tgid);
}

void session__untrace_python(struct session *s, __u32 tgid)
{
	pyprocs__remove(s ? bpf_map__fd(s->skel->maps.py_procs) : -1, tgid);
}

int session__note_pinned(struct session *s, __u32 tgid, __u64 start, __u64 end)
{
	int fd = bpf_map__fd(s->skel->maps.pinned);
	struct sp_pinned_set set;
	__u32 last;

	if (!s->sessions)
		return 0;
	memset(&set, 0, sizeof(set));
	if (bpf_map_lookup_elem(fd, &tgid, &set) && errno != ENOENT)
		return -errno;
	if (set.nr > SP_PINNED_RANGES)
		return -EINVAL;
	last = set.nr - 1;
	if (set.nr && set.ranges[last].end == start) {
		/* the driver's 2 MiB chunks often lie end to end */
		set.ranges[last].end = end;
	} else if (set.nr < SP_PINNED_RANGES) {
		set.ranges[set.nr].start = start;
		set.ranges[set.nr++].end = end;
	} else {
		return 0;	/* copies there keep their return probes */
	}
	return bpf_map_update_elem(fd, &tgid, &set, BPF_ANY) ? -errno : 0;
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

static int attach_one(struct session *s, struct bpf_program *prog, const char *path,
		      __u64 offset, __u64 cookie, bool retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = retprobe);
	struct bpf_link *link;

	/* pid -1: one probe per file offset; the tgid map decides who is recorded */
	link = bpf_program__attach_uprobe_opts(prog, -1, path, offset, &opts);
	if (!link)
		return -errno;
	return keep_link(s, link);
}

static int link_multi(struct session *s, struct bpf_program *prog, const char *path,
		      const __u64 *offsets, const __u64 *cookies, __u32 cnt,
		      enum multilink_kind kind)
{
	int *grown, fd;

	if (!cnt)
		return 0;
	fd = multilink__create(bpf_program__fd(prog), path, offsets, cookies, cnt, kind);
	if (fd < 0)
		return fd;
	grown = realloc(s->multi_fds, (s->nr_multi + 1) * sizeof(*grown));
	if (!grown) {
		close(fd);
		return -ENOMEM;
	}
	s->multi_fds = grown;
	s->multi_fds[s->nr_multi++] = fd;
	return 0;
}

/* Room for library lib's launch link; the new ones are out. 0 or -ENOMEM. */
static int launch_room(struct session *s, int lib)
{
	struct launch_link *grown;

	if (lib < s->nr_launch)
		return 0;
	grown = realloc(s->launch, (lib + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	for (int i = s->nr_launch; i <= lib; i++)
		grown[i] = (struct launch_link){ .fd = -1 };
	s->launch = grown;
	s->nr_launch = lib + 1;
	return 0;
}

/* Put library lib's launch probes in, one entry link; 0 (none to put in too) or -errno. */
static int launch_link(struct session *s, const struct targets *t, const struct probe_set *ps,
		       int lib)
{
	__u64 *offsets, *cookies;
	__u32 n = 0;
	int ret = launch_room(s, lib);

	if (ret || s->launch[lib].fd >= 0)
		return ret;
	offsets = calloc(ps->nr_probes + 1, sizeof(*offsets));
	cookies = calloc(ps->nr_probes + 1, sizeof(*cookies));
	ret = offsets && cookies ? 0 : -ENOMEM;
	for (int i = 0; !ret && i < ps->nr_probes; i++) {
		if (ps->probes[i].lib != lib || !windowed_probe(s, &ps->probes[i]))
			continue;
		offsets[n] = ps->probes[i].offset;
		cookies[n++] = i;
	}
	if (!ret && n) {
		int fd = multilink__create(bpf_program__fd(s->skel->progs.on_entry),
					   t->libs[lib].open_path, offsets, cookies, n,
					   MULTILINK_ENTRY);

		if (fd < 0)
			ret = fd;
		else
			s->launch[lib] = (struct launch_link){ .fd = fd, .probes = n };
	}
	free(offsets);
	free(cookies);
	return ret;
}

int session__window_launches(struct session *s, const struct probe_set *ps)
{
	if (!s->multi)
		return -EOPNOTSUPP;
	s->windowed = true;
	return fill_specs(s, ps, 0);
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * An edge a little ahead, so that a hit stamped after it reads the bound
 * set for it; returned once it has passed.
 */
#define WINDOW_EDGE_AHEAD_NS 20000

/* How long after edge a bound just stored took effect: 0 if before it. */
static __u64 late_by(__u64 edge)
{
	__u64 now = mono_ns();

	return now > edge ? now - edge : 0;
}

static __u64 edge_passed(__u64 edge)
{
	while (mono_ns() < edge)
		;
	return edge;
}

int session__window_open(struct session *s, const struct targets *t, const struct probe_set *ps,
			 struct window_edge *e)
{
	__u64 start = mono_ns(), edge;
	int in = 0, last_err = 0;

	s->window_open = true;
	for (int lib = 0; lib < t->nr_libs; lib++) {
		int ret = launch_link(s, t, ps, lib);

		if (ret)
			last_err = ret;
		else if (lib < s->nr_launch && s->launch[lib].fd >= 0)
			in += s->launch[lib].probes;
	}
	edge = mono_ns();
	e->cost_ns = edge - start;
	edge += WINDOW_EDGE_AHEAD_NS;
	/*
	 * Shut by from, open to, then one store of from opens it: no launch before
	 * the edge is recorded. Where that store lands after the edge (the tracer
	 * preempted), launches before it were dropped: the record says how late.
	 */
	__atomic_store_n(&s->skel->data->window_from_ns, ~0ull, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->skel->data->window_to_ns, ~0ull, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->skel->data->window_from_ns, edge, __ATOMIC_SEQ_CST);
	e->late_ns = late_by(edge);
	e->ts = edge_passed(edge);
	return last_err ? last_err : in;
}

void session__window_edge(struct session *s, struct window_edge *e)
{
	__u64 edge = mono_ns() + WINDOW_EDGE_AHEAD_NS;

	__atomic_store_n(&s->skel->data->window_to_ns, edge, __ATOMIC_SEQ_CST);
	/*
	 * landed late: launches up to the store were recorded past the edge,
	 * later ones dropped; the close moves to after the store
	 */
	e->late_ns = late_by(edge);
	e->ts = edge_passed(edge) + e->late_ns;
	e->cost_ns = 0;
}

int session__window_close(struct session *s, struct window_edge *e)
{
	__u64 start = mono_ns();
	int out = 0;

	s->window_open = false;
	for (int lib = 0; lib < s->nr_launch; lib++) {
		if (s->launch[lib].fd < 0)
			continue;
		close(s->launch[lib].fd);
		s->launch[lib].fd = -1;
		out += s->launch[lib].probes;
	}
	e->cost_ns = mono_ns() - start;
	return out;
}

/* The program for the calls with a return, and how its links are made. */
static struct bpf_program *return_prog(const struct session *s, enum multilink_kind *kind)
{
	*kind = s->sessions ? MULTILINK_SESSION : MULTILINK_RETURN;
	return s->sessions ? s->skel->progs.on_session : s->skel->progs.on_return;
}

/*
 * One entry link and one return (or session) link per library: attached and
 * removed at once. With sessions, a call with a return is in the session link only.
 */
static int attach_lib_multi(struct session *s, const struct targets *t, struct probe_set *ps,
			    int lib)
{
	__u64 *offsets = calloc(ps->nr_probes, sizeof(*offsets) * 2);
	__u64 *cookies = calloc(ps->nr_probes, sizeof(*cookies) * 2);
	__u64 *ret_offsets = offsets + ps->nr_probes, *ret_cookies = cookies + ps->nr_probes;
	const char *path = t->libs[lib].open_path;
	enum multilink_kind ret_kind;
	struct bpf_program *ret_prog = return_prog(s, &ret_kind);
	__u32 n = 0, n_ret = 0;
	int ret = -ENOMEM;

	if (!offsets || !cookies)
		goto out;
	for (int i = 0; i < ps->nr_probes; i++) {
		bool has_ret = ps->probes[i].entry->completion;

		if (ps->probes[i].lib != lib || windowed_probe(s, &ps->probes[i]))
			continue;
		if (has_ret) {
			ret_offsets[n_ret] = ps->probes[i].offset;
			ret_cookies[n_ret++] = i;
		}
		if (!has_ret || !s->sessions) {
			offsets[n] = ps->probes[i].offset;
			cookies[n++] = i;
		}
	}
	ret = link_multi(s, s->skel->progs.on_entry, path, offsets, cookies, n, MULTILINK_ENTRY);
	if (!ret)
		ret = link_multi(s, ret_prog, path, ret_offsets, ret_cookies, n_ret, ret_kind);
	/* launch probes are in the windowed set: in at once if a window is open */
	if (!ret && s->window_open)
		ret = launch_link(s, t, ps, lib);
	for (int i = 0; !ret && i < ps->nr_probes; i++)
		if (ps->probes[i].lib == lib)
			ps->probes[i].attached = true;
out:
	free(offsets);
	free(cookies);
	return ret;
}

/* One perf-event uprobe per probe and direction: kernels without uprobe_multi. */
static int attach_singles(struct session *s, const struct targets *t, struct probe_set *ps,
			  int lib)
{
	const char *path = t->libs[lib].open_path;
	int last_err = 0;

	for (int i = 0; i < ps->nr_probes; i++) {
		struct probe *p = &ps->probes[i];
		int ret;

		if (p->lib != lib || p->attached)
			continue;
		ret = attach_one(s, s->skel->progs.on_entry, path, p->offset, i, false);
		if (!ret && p->entry->completion)
			ret = attach_one(s, s->skel->progs.on_return, path, p->offset, i, true);
		if (ret) {
			log_warn("attaching %s in %s: %s", p->symbol, t->libs[lib].path,
				 strerror(-ret));
			last_err = ret;
			continue;
		}
		p->attached = true;
	}
	return last_err;
}

int session__attach_lib(struct session *s, const struct targets *t, struct probe_set *ps, int lib)
{
	int attached = 0, ret;

	ret = fill_specs(s, ps, 0);
	if (ret)
		return ret;
	ret = s->multi ? attach_lib_multi(s, t, ps, lib) : attach_singles(s, t, ps, lib);
	if (ret && s->multi)
		log_warn("attaching to %s: %s", t->libs[lib].path, strerror(-ret));
	for (int i = 0; i < ps->nr_probes; i++)
		attached += ps->probes[i].lib == lib && ps->probes[i].attached;
	return attached || !ret ? attached : ret;
}

int session__attach(struct session *s, const struct targets *t, struct probe_set *ps)
{
	int attached = 0, last_err = 0;

	for (int lib = 0; lib < t->nr_libs; lib++) {
		int ret = session__attach_lib(s, t, ps, lib);

		if (ret < 0)
			last_err = ret;
		else
			attached += ret;
	}
	return attached || !ps->nr_probes ? attached : last_err;
}

int session__hook_loader(struct session *s, const char *path, __u64 offset, __u64 r_debug_delta)
{
	struct bpf_program *prog = s->skel->progs.on_dl_state;
	int ret = s->multi ? link_multi(s, prog, path, &offset, &r_debug_delta, 1, MULTILINK_ENTRY)
			   : attach_one(s, prog, path, offset, r_debug_delta, false);

	s->loads_hooked |= !ret;
	return ret;
}

bool session__hooks_loads(const struct session *s)
{
	return s->loads_hooked;
}

void session__unhook_loads(struct session *s)
{
	/* the loader hooks stay, harmless: with the traced set empty nothing is stopped */
	__u64 *words = s->skel->bss->traced_bits;

	bpf_link__destroy(s->exec_link);
	s->exec_link = NULL;
	for (size_t i = 0; i < SP_PID_LIMIT / 64; i++)
		if (words[i])
			__atomic_store_n(&words[i], 0, __ATOMIC_SEQ_CST);
}

static __u64 best_of(__u32 calls, int runs)
{
	__u64 best = ~0ull;

	for (int i = 0; i < runs; i++) {
		__u64 ns = calibrate__time_calls(calls);

		best = ns < best ? ns : best;
	}
	return best;
}

/*
 * Attach the calibration probe: entry, or return (with sessions: entry and
 * return); the link fd goes to *fd (-1: libbpf link).
 */
static int calib_attach(struct session *s, const char *path, __u64 offset, bool retprobe,
			int *fd, struct bpf_link **link)
{
	struct bpf_program *prog = s->skel->progs.on_entry;
	enum multilink_kind kind = MULTILINK_ENTRY;
	__u64 cookie = SP_CALIB_PROBE;
	int ret;

	*fd = -1;
	*link = NULL;
	if (retprobe)
		prog = return_prog(s, &kind);
	if (!s->multi) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = retprobe);

		*link = bpf_program__attach_uprobe_opts(prog, -1, path, offset, &opts);
		return *link ? 0 : -errno;
	}
	ret = link_multi(s, prog, path, &offset, &cookie, 1, kind);
	if (!ret)
		*fd = s->multi_fds[--s->nr_multi];	/* owned here, closed after timing */
	return ret;
}

static int calib_spec(struct session *s, const char *row, __u8 extra_flags)
{
	const struct catalog_entry *e = catalog__find(row);
	__u32 key = SP_CALIB_PROBE;
	struct sp_probe_spec spec;

	if (!e)
		return -ENOENT;
	catalog__spec(e, &spec);
	spec.flags |= extra_flags;
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.specs), &key, &spec, BPF_ANY))
		return -errno;
	return 0;
}

/*
 * A sync's call site on top of its entry and return (both: their time, return
 * attached): the loop calls from one site, so all but the first hit are the
 * repeated site that most hits are. The calibrating process runs no Python:
 * a Python caller's frames add their reads to this.
 */
static int calib_stack(struct session *s, __u32 calls, __u64 both, struct calibration *out)
{
	__u64 stacked;
	int ret;

	if (s->stacks == STACKS_NONE)
		return 0;
	ret = calib_spec(s, "cuStreamSynchronize", SP_SPEC_STACK);
	if (ret)
		return ret;
	stacked = best_of(calls, 2);
	out->stack_ps = stacked > both ? (stacked - both) * 1000 / calls : 0;
	return 0;
}

/*
 * An entry-only hit is timed under a launch's spec (the commonest call, and
 * its stack arguments are read), the return probe under a query's (an entry +
 * completion kind keeps a frame that the return pops).
 */
int session__calibrate(struct session *s, __u32 calls, struct calibration *out)
{
	__u32 self = getpid();
	int fds[2] = { -1, -1 }, ret;
	struct bpf_link *links[2] = { NULL, NULL };
	char path[PATH_MAX];
	__u64 offset, plain, entry, entry_done = 0, both;

	ret = calibrate__target(path, sizeof(path), &offset);
	if (ret)
		return ret;
	ret = calib_spec(s, "cuLaunchKernel", 0);
	if (ret)
		return ret;
	ret = session__trace_tgid(s, self);
	if (ret)
		return ret;
	s->discard = true;
	plain = best_of(calls, 2);
	ret = calib_attach(s, path, offset, false, &fds[0], &links[0]);
	if (!ret) {
		entry = best_of(calls, 2);
		ret = calib_spec(s, "cuEventQuery", 0);
	}
	if (!ret) {
		entry_done = best_of(calls, 2);
		session__drain(s);
		if (s->sessions) {
			/* the session program takes the entry too */
			close(fds[0]);
			fds[0] = -1;
		}
		ret = calib_attach(s, path, offset, true, &fds[1], &links[1]);
	}
	if (!ret) {
		both = best_of(calls, 2);
		out->calls = calls;
		out->entry_ps = entry > plain ? (entry - plain) * 1000 / calls : 0;
		out->return_ps = both > entry_done ? (both - entry_done) * 1000 / calls : 0;
		ret = calib_stack(s, calls, both, out);
	}
	traced_set(s, self, false);
	for (int i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		bpf_link__destroy(links[i]);
	}
	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.threads), &self);
	session__drain(s);
	s->discard = false;
	/* the targets' counters start from zero */
	session__reset_counters(s);
	return ret;
}

void session__reset_counters(struct session *s)
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(s->skel->maps.counters);
	__u64 *zeros = ncpu > 0 ? calloc(ncpu, sizeof(*zeros)) : NULL;

	for (__u32 k = 0; zeros && k < SP_CNT_NR; k++)
		bpf_map_update_elem(fd, &k, zeros, BPF_ANY);
	free(zeros);
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

void session__stop_maps(struct session *s, struct stop_maps *out)
{
	out->stops_fd = bpf_map__fd(s->skel->maps.stops);
	out->done_fd = bpf_map__fd(s->skel->maps.stops_done);
	out->counters_fd = bpf_map__fd(s->skel->maps.counters);
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

void session__free(struct session *s)
{
	if (!s)
		return;
	/* each removal of a single uprobe waits for a grace period: multi links avoid that */
	for (int i = 0; i < s->nr_links; i++)
		bpf_link__destroy(s->links[i]);
	free(s->links);
	for (int i = 0; i < s->nr_multi; i++)
		close(s->multi_fds[i]);
	free(s->multi_fds);
	for (int lib = 0; lib < s->nr_launch; lib++)
		if (s->launch[lib].fd >= 0)
			close(s->launch[lib].fd);
	free(s->launch);
	bpf_link__destroy(s->exit_link);
	bpf_link__destroy(s->fork_link);
	bpf_link__destroy(s->exec_link);
	ring_buffer__free(s->ring);
	specprobe_bpf__destroy(s->skel);
	free(s);
}
