// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include "elfsyms.h"
#include "ldsearch.h"
#include "log.h"
#include "outfile.h"
#include "rankinfo.h"
#include "tracer.h"

volatile int tracer_stopped_pid;

#define CALIBRATION_CALLS 10000	/* per way timed: about 30 ms with probes on this VM */
#define RUNQ_THREADS_MAX 8192	/* threads of running targets sampled at the mark */

/* The libraries a launched command finds at start; dlopen'ed ones are caught later. */
static const char *const launch_sonames[] = { "libcuda.so.1", "libnccl.so.2" };

__u64 tracer__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int trace_from(struct tracer *tr, int first)
{
	for (int i = first; i < tr->targets.nr_tgids; i++) {
		int ret = session__trace_tgid(tr->session, tr->targets.tgids[i]);

		if (ret) {
			log_error("adding pid %u to the traced set: %s", tr->targets.tgids[i],
				  strerror(-ret));
			return -1;
		}
	}
	return 0;
}

/*
 * Fork tracking covers the traced set from the moment a tgid enters it, so the
 * descendants are scanned once more afterwards: a process forked between the
 * first scan and now is found here, one forked later by the fork hook.
 */
static int trace_targets(struct tracer *tr)
{
	int known = tr->targets.nr_tgids;

	if (trace_from(tr, 0))
		return -1;
	if (targets__add_descendants(&tr->targets))
		log_warn("rescanning descendants: out of memory");
	return trace_from(tr, known);
}

/* Libraries the loader would give the command, so probes are in place before it runs. */
static int add_launch_libs(struct tracer *tr, const struct target_args *want, char *err,
			   size_t err_sz)
{
	char program[PATH_MAX], lib[PATH_MAX];
	int ret = ldsearch__program(want->cmd[0], program, sizeof(program));

	if (ret) {
		snprintf(err, err_sz, "%s: %s", want->cmd[0],
			 ret == -ENOTREG ? "not a regular file: refusing to run it"
					 : "command not found");
		return -1;
	}
	for (size_t i = 0; i < sizeof(launch_sonames) / sizeof(launch_sonames[0]); i++) {
		if (ldsearch__library(program, launch_sonames[i], lib, sizeof(lib)))
			continue;
		log_debug("%s would load %s", program, lib);
		if (targets__add_lib_file(&tr->targets, lib, err, err_sz))
			return -1;
	}
	return 0;
}

/* may_wait: libraries mapped later will be caught, so none at the start is fine. */
static int resolve(struct tracer *tr, const struct tracer_opts *opts, bool may_wait, char *err,
		   size_t err_sz)
{
	const struct target_args *want = opts->targets;

	if (want->nr_pids &&
	    targets__discover(want->pids, want->nr_pids, may_wait, &tr->targets, err, err_sz))
		return -1;
	if (want->cmd && add_launch_libs(tr, want, err, err_sz))
		return -1;
	for (int i = 0; i < want->nr_libs; i++)
		if (targets__add_lib_file(&tr->targets, want->libs[i], err, err_sz))
			return -1;
	if (probes__resolve(&tr->targets, &tr->probes, err, err_sz))
		return -1;
	if (tr->probes.nr_probes == 0 && !may_wait) {
		snprintf(err, err_sz, "no catalogued entry point found in %s",
			 tr->targets.nr_libs ? tr->targets.libs[0].path : "any library");
		return -1;
	}
	return 0;
}

int tracer__resolve(struct tracer *tr, const struct tracer_opts *opts)
{
	char err[512] = "";

	memset(tr, 0, sizeof(*tr));
	tr->child.go_fd = -1;
	if (!resolve(tr, opts, false, err, sizeof(err)))
		return 0;
	log_error("%s", err);
	tracer__stop(tr);
	return -1;
}

struct hostmem_emit {
	struct tracer *tr;
	__u32 tgid;
	__u64 ts;
};

static int emit_hostmem(void *ctx, __u64 start, __u64 end, __u32 kind)
{
	const struct hostmem_emit *he = ctx;
	struct sp_hostmem_rec rec = {
		.type = SP_REC_HOSTMEM,
		.size = sizeof(rec),
		.tgid = he->tgid,
		.ts = he->ts,
		.start = start,
		.end = end,
		.kind = kind,
	};

	return he->tr->on_record(he->tr->ctx, &rec, sizeof(rec));
}

static int note_driver_memory(void *ctx, __u64 start, __u64 end, __u32 kind)
{
	const struct hostmem_emit *he = ctx;

	if (kind == SP_HOSTMEM_DRIVER && session__note_pinned(he->tr->session, he->tgid, start, end))
		log_debug("pid %u: pinned memory not passed to the probes", he->tgid);
	return 0;
}

/*
 * The driver's memory of targets attached to while they ran, into the probes'
 * pinned sets before the mark: their copies of it are entry only from the mark
 * on. Read after the attach: memory freed since is gone from the mappings.
 */
static void note_pinned(struct tracer *tr)
{
	for (int i = 0; i < tr->nr_running; i++) {
		struct hostmem_emit he = { tr, tr->targets.tgids[i], 0 };

		targets__host_mappings(he.tgid, note_driver_memory, &he);
	}
}

/*
 * Host memory mapped before the probes saw it, read once per process after attach:
 * the analyses tell the driver's pinned memory from the rest by it.
 */
static int describe_host_memory(struct tracer *tr)
{
	int ret = 0;

	for (; !ret && tr->hostmem_described < tr->targets.nr_tgids; tr->hostmem_described++) {
		struct hostmem_emit he = { tr, tr->targets.tgids[tr->hostmem_described],
					   tracer__now_ns() };

		ret = targets__host_mappings(he.tgid, emit_hostmem, &he);
		/* while it runs: a short-lived process's last stacks may come after it exits */
		callsites__note_process(tr->sites, he.tgid);
		session__trace_python(tr->session, he.tgid);
	}
	return ret;
}

/* What each process shows of its rank, for traces that do not see NCCL init (SP_REC_RANK). */
static int describe_ranks(struct tracer *tr)
{
	return rank_watch__scan(&tr->ranks, tr->targets.tgids, tr->targets.nr_tgids,
				tr->on_record, tr->ctx);
}

/* Hand the libraries, probes and mappings the header does not hold to the owner. */
static int emit_late(struct tracer *tr)
{
	union {
		struct sp_lib_rec lib;
		struct sp_probe_rec probe;
		struct sp_map_rec map;
		unsigned char bytes[TF_MAX_RECORD];
	} u;
	int ret = 0;

	if (!tr->header_done)
		return 0;
	for (; !ret && tr->hdr_libs < tr->targets.nr_libs; tr->hdr_libs++) {
		const struct target_lib *tl = &tr->targets.libs[tr->hdr_libs];
		size_t len = strnlen(tl->path, TF_MAX_RECORD - sizeof(u.lib) - 1);

		memset(&u.lib, 0, sizeof(u.lib));
		u.lib.type = SP_REC_LIB;
		u.lib.size = sizeof(u.lib) + len + 1;
		u.lib.index = tr->hdr_libs;
		u.lib.ts = tracer__now_ns();
		u.lib.dev = tl->dev;
		u.lib.ino = tl->ino;
		u.lib.kind = tl->kind;
		memcpy(u.lib.build_id, tr->probes.build_ids[tr->hdr_libs], sizeof(u.lib.build_id));
		memcpy(u.bytes + sizeof(u.lib), tl->path, len);
		u.bytes[sizeof(u.lib) + len] = '\0';
		ret = tr->on_record(tr->ctx, &u, u.lib.size);
	}
	for (; !ret && tr->hdr_probes < tr->probes.nr_probes; tr->hdr_probes++) {
		const struct probe *p = &tr->probes.probes[tr->hdr_probes];
		size_t len = strnlen(p->symbol, TF_MAX_RECORD - sizeof(u.probe) - 1);

		memset(&u.probe, 0, sizeof(u.probe));
		u.probe.type = SP_REC_PROBE;
		u.probe.size = sizeof(u.probe) + len + 1;
		u.probe.cookie = tr->hdr_probes;
		u.probe.lib = p->lib;
		u.probe.catalog = p->entry - catalog;
		u.probe.offset = p->offset;
		u.probe.vaddr = p->vaddr;
		memcpy(u.bytes + sizeof(u.probe), p->symbol, len);
		u.bytes[sizeof(u.probe) + len] = '\0';
		ret = tr->on_record(tr->ctx, &u, u.probe.size);
	}
	for (; !ret && tr->hdr_maps < tr->targets.nr_maps; tr->hdr_maps++) {
		const struct tf_map *m = &tr->targets.maps[tr->hdr_maps];

		u.map = (struct sp_map_rec){
			.type = SP_REC_MAP,
			.size = sizeof(u.map),
			.tgid = m->tgid,
			.lib = m->lib,
			.start = m->start,
			.end = m->end,
			.pgoff = m->pgoff,
		};
		ret = tr->on_record(tr->ctx, &u, u.map.size);
	}
	for (; !ret && tr->procs_described < tr->targets.nr_tgids; tr->procs_described++) {
		__u32 tgid = tr->targets.tgids[tr->procs_described];
		struct sp_proc_rec proc = {
			.type = SP_REC_PROC,
			.size = sizeof(proc),
			.tgid = tgid,
			.ts = tracer__now_ns(),
			.ns_pid = targets__ns_pid(tgid),
		};

		if (proc.ns_pid)
			ret = tr->on_record(tr->ctx, &proc, proc.size);
	}
	if (!ret)
		ret = describe_host_memory(tr);
	return ret ? ret : describe_ranks(tr);
}

/*
 * Running targets' threads: how long each has waited for a CPU, just before
 * the mark. A thread's first record tells the same figure then: a first
 * record that came late for want of a CPU is known as such (cycles.c).
 */
static void sample_runq(struct tracer *tr)
{
	__u64 now = tracer__now_ns();

	tr->runq = calloc(RUNQ_THREADS_MAX, sizeof(*tr->runq));
	for (int i = 0; tr->runq && i < tr->targets.nr_tgids; i++)
		tr->nr_runq += targets__runq_delays(tr->targets.tgids[i], now,
						    tr->runq + tr->nr_runq,
						    RUNQ_THREADS_MAX - tr->nr_runq);
}

static int describe_runq(struct tracer *tr)
{
	int ret = 0;

	for (int i = 0; !ret && i < tr->nr_runq; i++)
		ret = tr->on_record(tr->ctx, &tr->runq[i], sizeof(tr->runq[i]));
	free(tr->runq);
	tr->runq = NULL;
	tr->nr_runq = 0;
	return ret;
}

int tracer__describe(struct tracer *tr)
{
	if (tr->nr_runq) {
		int ret = describe_runq(tr);

		if (ret)
			return ret;
	}
	if (tr->calib.calls && !tr->calib_described) {
		struct sp_calib_rec rec = {
			.type = SP_REC_CALIB,
			.size = sizeof(rec),
			.calls = tr->calib.calls,
			.ts = tracer__now_ns(),
			.entry_ps = tr->calib.entry_ps,
			.return_ps = tr->calib.return_ps,
			.stack_ps = tr->calib.stack_ps,
		};
		int ret = tr->on_record(tr->ctx, &rec, sizeof(rec));

		if (ret)
			return ret;
		tr->calib_described = true;
	}
	return emit_late(tr);
}

int tracer__sample_cpu(struct tracer *tr)
{
	int ret = 0;

	for (int i = 0; !ret && i < tr->targets.nr_tgids; i++) {
		struct sp_cpu_rec rec = {
			.type = SP_REC_CPU,
			.size = sizeof(rec),
			.tgid = tr->targets.tgids[i],
			.ts = tracer__now_ns(),
		};

		if (targets__cpu_ns(rec.tgid, &rec.cpu_ns))
			ret = tr->on_record(tr->ctx, &rec, sizeof(rec));
	}
	/* a process seen at fork shows its own title or environment a little later */
	return ret || !tr->header_done ? ret : describe_ranks(tr);
}

/*
 * A group stop completes once every thread has left the kernel: then the
 * mapping exists. One the watchdog continued meanwhile is hooked as it runs.
 */
static bool wait_stopped(struct tracer *tr, __u32 tgid, __u64 stop_ns)
{
	for (int waited_ms = 0; waited_ms < 2000; waited_ms++) {
		char state;

		if (!targets__read_state(tgid, &state) || state == 'Z' || state == 'X')
			return false;
		if (state == 'T' || state == 't' || !stops__pending(&tr->stop_maps, tgid, stop_ns))
			return true;
		usleep(1000);
	}
	return false;
}

/* Resolve and attach libraries added to targets from index first on. */
static int attach_new_libs(struct tracer *tr, int first)
{
	int attached = 0;

	for (int lib = first; lib < tr->targets.nr_libs; lib++) {
		char err[512] = "";
		int ret = probes__resolve_lib(&tr->targets, &tr->probes, lib, err, sizeof(err));

		if (ret) {
			log_warn("%s", err[0] ? err : strerror(-ret));
			continue;
		}
	}
	/* records first: a call of a new probe must never come before its description */
	if (emit_late(tr))
		return -1;
	for (int lib = first; lib < tr->targets.nr_libs; lib++) {
		int ret = session__attach_lib(tr->session, &tr->targets, &tr->probes, lib);

		if (ret > 0) {
			attached += ret;
			log_info("attached %d probes to %s", ret, tr->targets.libs[lib].path);
		}
	}
	tr->nr_attached += attached;
	return attached;
}

/* Probe _dl_debug_state of loaders not hooked yet, so later library loads stop the process. */
static void hook_loaders(struct tracer *tr)
{
	for (; tr->loaders_hooked < tr->targets.nr_loaders; tr->loaders_hooked++) {
		const struct target_lib *ld = &tr->targets.loaders[tr->loaders_hooked];
		struct elf_syms syms = { 0 };
		const struct elf_func *hook;
		char err[512] = "";
		int ret = elf_syms__load(ld->open_path, &syms, err, sizeof(err));

		hook = ret ? NULL : elf_syms__find(&syms, "_dl_debug_state");
		if (!hook || !syms.r_debug_vaddr)
			log_warn("%s: %s: libraries it loads later are missed", ld->path,
				 ret ? err : "no _dl_debug_state or _r_debug");
		else if ((ret = session__hook_loader(tr->session, ld->open_path, hook->offset,
						      syms.r_debug_vaddr - hook->vaddr)))
			log_warn("hooking %s: %s: libraries it loads later are missed", ld->path,
				 strerror(-ret));
		else
			log_debug("hooked %s at +0x%llx", ld->path, (unsigned long long)hook->offset);
		elf_syms__free(&syms);
	}
}

/*
 * A traced process exec'd, or its loader mapped a CUDA/NCCL library, and was
 * stopped on its way back to user space: read its mappings, hook its loader,
 * attach to the new libraries, let it go on. A stop the watchdog continued
 * already (this tracer was stopped or slow) is hooked late, as it runs.
 */
static void on_stopped(struct tracer *tr, __u32 tgid, __u64 stop_ns)
{
	bool pending = stops__pending(&tr->stop_maps, tgid, stop_ns);
	int first = tr->targets.nr_libs;

	tracer_stopped_pid = pending ? tgid : 0;
	if (!tr->stopping &&
	    (pending ? wait_stopped(tr, tgid, stop_ns) : targets__alive(tgid))) {
		if (targets__scan(&tr->targets, tgid))
			log_warn("reading the mappings of pid %u: out of memory", tgid);
		hook_loaders(tr);
		/* an exec'd image, or an interpreter that has loaded the driver by now */
		session__trace_python(tr->session, tgid);
		if (attach_new_libs(tr, first) < 0 || emit_late(tr))
			log_warn("recording the libraries of pid %u failed", tgid);
	}
	/* looked at again: the watchdog may have continued it, and a later stop be pending */
	if (pending && stops__pending(&tr->stop_maps, tgid, stop_ns)) {
		stops__continue(&tr->stop_maps, tgid, stop_ns);
		log_debug("pid %u continued %.1f ms after its stop", tgid,
			  (tracer__now_ns() - stop_ns) / 1e6);
	}
	tracer_stopped_pid = 0;
}

void tracer__rescan(struct tracer *tr, __u32 tgid)
{
	/* no stop has time 0: only the mappings are read and the new libraries attached */
	on_stopped(tr, tgid, 0);
}

static void on_fork(struct tracer *tr, const struct sp_fork_rec *rec)
{
	/* the recording lasts while any follower lives */
	if (targets__add_tgid(&tr->targets, rec->tgid) ||
	    targets__inherit_maps(&tr->targets, rec->parent, rec->tgid))
		log_warn("out of memory: pid %u is traced but not fully described", rec->tgid);
	else
		emit_late(tr);
}

static void note_exec(struct tracer *tr, __u32 tgid)
{
	if (tr->child.pid > 0 && tgid == (__u32)tr->child.pid && !tr->child_execd) {
		tr->child_execd = true;
		return;
	}
	log_info("pid %u ran execve: its calls before are kept; the new program is traced "
		 "if it loads a probed library, and until it exits", tgid);
}

/* A process exited: nothing of it is kept, so churn leaves the tracer's memory flat. */
static void forget_process(struct tracer *tr, __u32 tgid)
{
	int at = targets__remove_tgid(&tr->targets, tgid, &tr->hdr_maps);

	callsites__forget(tr->sites, tgid);
	session__untrace_python(tr->session, tgid);
	/* the marks count listed processes: one before them is gone */
	if (at >= 0 && at < tr->procs_described)
		tr->procs_described--;
	if (at >= 0 && at < tr->hostmem_described)
		tr->hostmem_described--;
	if (at >= 0 && at < tr->nr_running)
		tr->nr_running--;
}

static int on_ring_record(void *ctx, const void *rec, size_t size)
{
	struct tracer *tr = ctx;
	__u16 type = ((const struct sp_rec_hdr *)rec)->type;
	int ret = 0;

	if (type == SP_REC_STACK && !tr->stopping && tr->sites) {
		/* the mappings and code objects it names go first */
		ret = callsites__prepare(tr->sites, rec, size, tr->on_record, tr->ctx);
		if (ret == -EBADMSG)
			return 0;	/* cannot come from our programs: not recorded */
		if (ret)
			return ret;
	}
	if (!tr->stopping)
		ret = tr->on_record(tr->ctx, rec, size);
	if (type == SP_REC_EXIT && size >= sizeof(struct sp_exit_rec))
		forget_process(tr, ((const struct sp_exit_rec *)rec)->tgid);
	if (type == SP_REC_EXEC && size >= sizeof(struct sp_exec_rec) && !tr->stopping) {
		/* before its stacks: they name the new image's mappings, never the old */
		callsites__exec(tr->sites, ((const struct sp_exec_rec *)rec)->tgid);
		note_exec(tr, ((const struct sp_exec_rec *)rec)->tgid);
	}
	if (type == SP_REC_LIBMAP && size >= sizeof(struct sp_libmap_rec))
		log_debug("pid %u stopped by a load: %s", ((const struct sp_libmap_rec *)rec)->tgid,
			  ((const struct sp_libmap_rec *)rec)->name[0] ?
			  ((const struct sp_libmap_rec *)rec)->name : "more new objects than looked at");
	if ((type == SP_REC_LIBMAP && size >= sizeof(struct sp_libmap_rec)) ||
	    (type == SP_REC_EXEC && size >= sizeof(struct sp_exec_rec)))
		on_stopped(tr, ((const struct sp_exec_rec *)rec)->tgid,
			   ((const struct sp_exec_rec *)rec)->ts);
	else if (type == SP_REC_FORK && size >= sizeof(struct sp_fork_rec) && !tr->stopping)
		on_fork(tr, rec);
	return ret;
}

/*
 * Libraries mapped between the first scan and the moment the tgids entered
 * the traced set raised no stop: find them now (the mmap hook covers later ones).
 */
static void rescan_targets(struct tracer *tr)
{
	int first = tr->targets.nr_libs;

	for (int i = 0; i < tr->targets.nr_tgids; i++)
		if (targets__scan(&tr->targets, tr->targets.tgids[i]))
			log_warn("reading the mappings of pid %u: out of memory", tr->targets.tgids[i]);
	hook_loaders(tr);
	if (tr->targets.nr_libs > first)
		attach_new_libs(tr, first);
}

int tracer__start(struct tracer *tr, const struct tracer_opts *opts)
{
	struct session_opts sopts = {
		.ring_bytes = opts->ring_bytes,
		.wake_bytes = opts->ring_bytes / 8,
		.on_record = on_ring_record,
		.ctx = tr,
		.stacks = opts->stacks,
	};
	const struct target_args *want = opts->targets;
	char err[512] = "";
	int ret;

	memset(tr, 0, sizeof(*tr));
	tr->child.go_fd = -1;
	tr->child_name = want->cmd ? want->cmd[0] : NULL;
	tr->on_record = opts->on_record;
	tr->ctx = opts->ctx;
	tr->stacks = opts->stacks;
	if (opts->stacks != STACKS_NONE && !(tr->sites = callsites__new())) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	if (want->cmd) {
		if (launch__start(&tr->child, want->cmd, want->user, opts->child_env, err,
				  sizeof(err)) ||
		    targets__add_tgid(&tr->targets, tr->child.pid))
			goto fail;
	}
	if (resolve(tr, opts, opts->wait_for_libs || want->cmd, err, sizeof(err)))
		goto fail;
	tr->session = session__open(&sopts, &tr->probes, err, sizeof(err));
	if (!tr->session)
		goto fail;
	tr->sample.on_ns = opts->sample_on_ns;
	tr->sample.every_ns = opts->sample_every_ns;
	ret = tr->sample.on_ns ? session__window_launches(tr->session, &tr->probes) : 0;
	/* singles: each removal waits for a grace period, per probe and library */
	if (ret == -EOPNOTSUPP) {
		snprintf(err, sizeof(err), "--sample needs uprobe_multi links (Linux 6.6 or "
			 "later): one by one, launch probes take too long to go in and out");
		goto fail;
	} else if (ret) {
		snprintf(err, sizeof(err), "filling the probe specs: %s", strerror(-ret));
		goto fail;
	}
	/* before anything can be stopped */
	session__stop_maps(tr->session, &tr->stop_maps);
	ret = watchdog__start(&tr->watchdog, &tr->stop_maps);
	if (ret) {
		snprintf(err, sizeof(err), "starting the watchdog of stopped processes: %s",
			 strerror(-ret));
		goto fail;
	}
	/* before any target is traced: the cost of one hit, for the self-overhead figure */
	if (session__calibrate(tr->session, CALIBRATION_CALLS, &tr->calib))
		log_debug("calibration failed: self-overhead will not be shown");
	/* loaders first: a load after a tgid enters the traced set then stops it */
	hook_loaders(tr);
	if (trace_targets(tr))
		goto fail;
	/* a launched command, or a process forked later, is seen from its start */
	tr->nr_running = want->cmd ? 0 : tr->targets.nr_tgids;
	sharing__mark(&tr->sharing, tr->targets.tgids, tr->targets.nr_tgids);
	if (!tr->probes.nr_probes && !want->cmd && !session__hooks_loads(tr->session)) {
		snprintf(err, sizeof(err), "no CUDA library is mapped yet and its loading cannot be caught");
		goto fail;
	}
	tr->attach_start_ns = tracer__now_ns();
	tr->nr_attached = session__attach(tr->session, &tr->targets, &tr->probes);
	if (tr->nr_attached < 0) {
		snprintf(err, sizeof(err), "no probe could be attached: %s",
			 strerror(-tr->nr_attached));
		goto fail;
	}
	note_pinned(tr);
	if (want->nr_pids) {
		rescan_targets(tr);
		sample_runq(tr);
	}
	tr->attach_done_ns = tracer__now_ns();
	log_debug("attached %d of %d probes in %.1f ms", tr->nr_attached, tr->probes.nr_probes,
		  (tr->attach_done_ns - tr->attach_start_ns) / 1e6);
	if (!tr->nr_attached)
		log_info("no libcuda.so or libnccl.so mapped yet: waiting for one to be loaded "
			 "(Ctrl-C to stop)");
	return 0;
fail:
	if (err[0])
		log_error("%s", err);
	tracer__stop(tr);
	return -1;
}

void tracer__header(struct tracer *tr, struct tf_header *hdr)
{
	struct timespec mono, real;
	struct utsname uts;

	memset(hdr, 0, sizeof(*hdr));
	hdr->version = TF_VERSION;
	if (!uname(&uts)) {
		snprintf(hdr->host, sizeof(hdr->host), "%s", uts.nodename);
		snprintf(hdr->kernel, sizeof(hdr->kernel), "%s", uts.release);
	}
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	hdr->mono_ns = mono.tv_sec * 1000000000ull + mono.tv_nsec;
	hdr->realtime_ns = real.tv_sec * 1000000000ull + real.tv_nsec;
	hdr->attach_start_ns = tr->attach_start_ns;
	hdr->attach_done_ns = tr->attach_done_ns;
	probes__fill_header(&tr->targets, &tr->probes, hdr);
	tr->hdr_libs = tr->targets.nr_libs;
	tr->hdr_probes = tr->probes.nr_probes;
	tr->hdr_maps = tr->targets.nr_maps;
	tr->header_done = true;
}

/* Only the tables were allocated for the header; strings belong to the tracer. */
void tracer__free_header(struct tf_header *hdr)
{
	free(hdr->libs);
	free(hdr->probes);
	hdr->libs = NULL;
	hdr->probes = NULL;
}

static void write_window(struct tracer *tr, __u32 flags, const struct window_edge *e,
			 __u64 cost_ns, int probes)
{
	struct sp_sample_rec rec = {
		.type = SP_REC_SAMPLE,
		.size = sizeof(rec),
		.flags = flags,
		.ts = e->ts,
		.cost_ns = cost_ns,
		.late_us = flags & SP_SAMPLE_DETACHED ? 0 : (__u32)((e->late_ns + 999) / 1000),
		.on_ms = tr->sample.on_ns / 1000000,
		.every_ms = tr->sample.every_ns / 1000000,
		.probes = probes > 0 ? probes : 0,
	};

	if (!tr->stopping)
		tr->on_record(tr->ctx, &rec, sizeof(rec));
}

static void open_window(struct tracer *tr)
{
	struct window_edge e;
	int in = session__window_open(tr->session, &tr->targets, &tr->probes, &e);

	if (in < 0 && !tr->sample.warned) {
		log_warn("--sample: putting launch probes in: %s: launches of that library are "
			 "missed in windows", strerror(-in));
		tr->sample.warned = true;
	}
	tr->sample.open = true;
	tr->sample.probes_in = in;
	tr->sample.next_ns = tr->sample.sched_ns + tr->sample.on_ns;
	write_window(tr, SP_SAMPLE_OPEN, &e, e.cost_ns, in);
}

/*
 * The close goes out as soon as its edge has passed, before the links come
 * out (which can take long): readers know the window ended before the calls
 * made after it, graph launches and syncs, reach them. The ring is read first,
 * so the window's launches come before it. The detach's cost follows.
 */
static void close_window(struct tracer *tr)
{
	struct window_edge e;
	int out = tr->sample.probes_in;
	__u64 now;

	session__window_edge(tr->session, &e);
	tr->sample.open = false;
	session__drain(tr->session);
	write_window(tr, 0, &e, 0, out);
	out = session__window_close(tr->session, &e);
	write_window(tr, SP_SAMPLE_DETACHED, &e, e.cost_ns, out);
	now = tracer__now_ns();
	/* a window that should have opened meanwhile (a long stop) is skipped */
	do
		tr->sample.sched_ns += tr->sample.every_ns;
	while (tr->sample.sched_ns + tr->sample.on_ns <= now);
	tr->sample.next_ns = tr->sample.sched_ns;
}

static void step_windows(struct tracer *tr)
{
	__u64 now = tracer__now_ns();

	if (!tr->sample.sched_ns) {
		/* the first poll: windows count from here */
		tr->sample.sched_ns = tr->sample.next_ns = now;
	}
	if (now < tr->sample.next_ns)
		return;
	if (tr->sample.open)
		close_window(tr);
	else
		open_window(tr);
}

/* timeout_ms, or less to wake at the next edge (rounded up: never before it). */
static int until_edge_ms(const struct tracer *tr, int timeout_ms)
{
	__u64 now = tracer__now_ns(), left_ms;

	if (!tr->sample.sched_ns || now >= tr->sample.next_ns)
		return 0;
	left_ms = (tr->sample.next_ns - now + 999999) / 1000000;
	return left_ms < (__u64)timeout_ms ? (int)left_ms : timeout_ms;
}

int tracer__poll(struct tracer *tr, int timeout_ms)
{
	int ret;

	if (tr->sample.on_ns)
		timeout_ms = until_edge_ms(tr, timeout_ms);
	ret = session__poll(tr->session, timeout_ms);
	if (tr->sample.on_ns && !tr->stopping)
		step_windows(tr);
	return ret < 0 ? ret : 0;
}

void tracer__end_windows(struct tracer *tr)
{
	if (tr->sample.open)
		close_window(tr);
}

int tracer__release(struct tracer *tr)
{
	int ret;

	if (tr->child.go_fd < 0)
		return 0;
	ret = launch__go(&tr->child);
	if (ret)
		log_error("starting %s: %s", tr->child_name, strerror(-ret));
	return ret ? -1 : 0;
}

bool tracer__child_exited(struct tracer *tr)
{
	if (!tr->child.pid)
		return false;
	if (!tr->child_reaped && waitpid(tr->child.pid, &tr->child_status, WNOHANG) == tr->child.pid)
		tr->child_reaped = true;
	return tr->child_reaped;
}

void tracer__stop(struct tracer *tr)
{
	if (tr->session) {
		/* no new stops; processes already stopped get their SIGCONT from the drain */
		tr->stopping = true;
		session__unhook_loads(tr->session);
		session__drain(tr->session);
	}
	session__free(tr->session);
	tr->session = NULL;
	/* no program is left to stop a process: the watchdog continues any still stopped */
	watchdog__end(&tr->watchdog);
	if (tr->child.go_fd >= 0)
		launch__abort(&tr->child);
	sharing__release(&tr->sharing);
	probes__free(&tr->probes);
	targets__free(&tr->targets);
	callsites__free(tr->sites);
	free(tr->runq);
	tr->runq = NULL;
	tr->sites = NULL;
	rank_watch__free(tr->ranks);
	tr->ranks = NULL;
}
