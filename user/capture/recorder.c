// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The live loop: start the tracer, write the header, poll the ring into the
 * file (and a tap) until the duration, Ctrl-C or the traced processes end.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "gpurings.h"
#include "host.h"
#include "hungwatch.h"
#include "log.h"
#include "outfile.h"
#include "ring.h"
#include "recorder.h"
#include "servermetrics.h"
#include "tracer.h"

#define DEFAULT_RING_MB 64
#define DEFAULT_MAX_BYTES (64ull << 20)	/* --dump-on without --max-size */
#define DUMP_AFTER_NS 1000000000ull	/* a dump keeps this much after its trigger */
#define MAX_DUMPS 16
#define GPU_FINAL_WAIT_MS 600	/* for the agents' last records after their processes exit */

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	/* a second Ctrl-C leaves at once; the file reads up to its last whole record */
	if (exiting) {
		if (tracer_stopped_pid)
			kill(tracer_stopped_pid, SIGCONT);
		gpu_rings__remove_now();
		_exit(128 + sig);
	}
	exiting = 1;
}

#define MAX_EXITED 256
#define MAX_CALLERS 256

struct recorder {
	const struct record_request *req;
	const struct record_tap *tap;
	struct tf_writer *writer;
	struct tf_ring *ring;		/* --max-size or --dump-on: instead of writer */
	struct tracer tracer;
	struct hungwatch *hung;		/* --dump-on hung= */
	struct gpu_rings *gpu;		/* --gpu */
	struct server_metrics *srvm;	/* --server-metrics */
	int dumps;
	__u64 dump_due_ns;		/* a dump is cut at this time; 0: none pending */
	int write_err;
	__u64 records;
	__u64 stats;		/* counter records of our own, written */
	__u64 lost;		/* records not written: the one that failed, and all after */
	/* exit records seen: a pid reused by an untraced process is not a target */
	__u32 exited[MAX_EXITED];
	int nr_exited;
	/* -p --gpu: processes seen making a CUDA call, the only ones the agent goes into */
	__u32 callers[MAX_CALLERS];
	int nr_callers;
	__u32 last_caller;
	int callers_tried;	/* nr_callers at the last injection pass */
	__u32 *inject_list;
};

static void note_exit(struct recorder *r, const void *rec, size_t size)
{
	const struct sp_exit_status_rec *st = rec;
	const struct sp_exit_rec *e = rec;
	int sig;

	if (size >= sizeof(*e) && e->type == SP_REC_EXIT && r->nr_exited < MAX_EXITED)
		r->exited[r->nr_exited++] = e->tgid;
	if (size < sizeof(*st) || st->type != SP_REC_EXIT_STATUS || !(st->status & 0x7f))
		return;
	sig = st->status & 0x7f;
	log_warn("pid %u: killed by SIG%s%s", st->tgid, sigabbrev_np(sig) ?: "?",
		 st->status & 0x80 ? " (core dumped)" : "");
}

/*
 * A process that made a CUDA call has a context: one that only maps libcuda
 * (a compile worker importing torch) is left alone, nothing of it stopped.
 */
static void note_caller(struct recorder *r, const void *rec, size_t size)
{
	const struct sp_call_rec *c = rec;

	if (size < sizeof(*c) || c->type != SP_REC_CALL ||
	    c->tgid == r->last_caller)
		return;
	r->last_caller = c->tgid;
	for (int i = 0; i < r->nr_callers; i++)
		if (r->callers[i] == c->tgid)
			return;
	if (r->nr_callers < MAX_CALLERS)
		r->callers[r->nr_callers++] = c->tgid;
}

/* The traced processes that have made a CUDA call, into r->inject_list: how many. */
static int cuda_callers(struct recorder *r)
{
	const struct targets *t = &r->tracer.targets;
	__u32 *grown;
	int n = 0;

	grown = realloc(r->inject_list, (t->nr_tgids + 1) * sizeof(*grown));
	if (!grown)
		return 0;
	r->inject_list = grown;
	for (int i = 0; i < t->nr_tgids; i++)
		for (int j = 0; j < r->nr_callers; j++)
			if (r->callers[j] == t->tgids[i]) {
				r->inject_list[n++] = t->tgids[i];
				break;
			}
	return n;
}

static bool has_output(const struct recorder *r)
{
	return r->writer || r->ring;
}

static int out_write(struct recorder *r, const void *rec, size_t size)
{
	if (r->ring)
		return tf_ring__write(r->ring, rec, size);
	return r->writer ? tf_writer__write(r->writer, rec, size) : 0;
}

static int out_flush(struct recorder *r)
{
	if (r->ring)
		return tf_ring__flush(r->ring);
	return r->writer ? tf_writer__flush(r->writer) : 0;
}

static int out_close(struct recorder *r)
{
	if (r->ring)
		return tf_ring__close(r->ring);
	return r->writer ? tf_writer__close(r->writer) : 0;
}

static const char *out_error(const struct recorder *r)
{
	return r->ring ? tf_ring__error(r->ring) : tf_writer__error(r->writer);
}

static __u64 out_bytes(const struct recorder *r)
{
	return r->ring ? tf_ring__bytes(r->ring) : tf_writer__bytes(r->writer);
}

/* A record of our own (clock, dump window): to the file and, like the ring's, to the tap. */
static int own_record(struct recorder *r, const void *rec, size_t size)
{
	int ret = out_write(r, rec, size);

	if (ret)
		return ret;
	r->stats++;
	if (r->tap)
		r->tap->record(r->tap->ctx, rec, size);
	return 0;
}

static int on_record(void *ctx, const void *rec, size_t size)
{
	struct recorder *r = ctx;
	int ret;

	note_exit(r, rec, size);
	if (r->gpu)
		note_caller(r, rec, size);
	if (r->hung)
		hungwatch__record(r->hung, rec, size);
	if (r->write_err) {
		r->lost++;	/* keep draining; the error ends the loop */
		return 0;
	}
	ret = out_write(r, rec, size);
	if (ret) {
		r->write_err = ret;
		r->lost++;
		return 0;
	}
	r->records++;
	if (r->tap)
		r->tap->record(r->tap->ctx, rec, size);
	return 0;
}

/* The output must not exist (without --force) and must be a regular file, never a symlink. */
/* Refused before anything is traced: what outfile__open would refuse later. */
static int check_output(const char *path, bool force)
{
	char err[PATH_MAX + 128];

	if (!outfile__check(path, force, err, sizeof(err)))
		return 0;
	log_error("%s", err);
	return -1;
}

static int write_counters(struct recorder *r, __u16 type)
{
	struct sp_stats_rec rec = { .type = type, .size = sizeof(rec) };
	int ret;

	rec.ts = tracer__now_ns();
	if (session__counters(r->tracer.session, rec.counters))
		return 0;
	ret = out_write(r, &rec, sizeof(rec));
	if (ret)
		r->lost++;
	else
		r->stats++;
	if (!ret && r->tap)
		r->tap->record(r->tap->ctx, &rec, sizeof(rec));
	return ret;
}

static bool exited(const struct recorder *r, __u32 tgid)
{
	for (int i = 0; i < r->nr_exited; i++)
		if (r->exited[i] == tgid)
			return true;
	return false;
}

static bool targets_gone(const struct recorder *r)
{
	const struct tracer *tr = &r->tracer;

	for (int i = 0; i < tr->targets.nr_tgids; i++)
		if (!exited(r, tr->targets.tgids[i]) && targets__alive(tr->targets.tgids[i]))
			return false;
	return true;
}

/* Written into the ring where the trigger fired: the dump and the ring both say so. */
static int start_dump(struct recorder *r, const struct hung_call *c, __u64 now)
{
	struct sp_window_rec w = {
		.type = SP_REC_WINDOW, .size = sizeof(w), .reason = SP_WINDOW_HUNG, .ts = now,
		.threshold_ns = r->req->rec->hung_ns, .after_ns = DUMP_AFTER_NS, .tgid = c->tgid,
		.tid = c->tid, .seq = c->seq, .probe = c->probe, .entry_ts = c->ts,
		.dump = r->dumps + 1,
	};
	int ret = own_record(r, &w, sizeof(w));

	if (ret)
		return ret;
	r->dumps++;
	r->dump_due_ns = now + DUMP_AFTER_NS;
	log_info("pid %u tid %u: a call unreturned for %.1f s; dump %d follows in %.0f s",
		 c->tgid, c->tid, r->req->rec->hung_ns / 1e9, r->dumps, DUMP_AFTER_NS / 1e9);
	return 0;
}

static int cut_dump(struct recorder *r)
{
	char base[4096], suffix[32];
	int n;

	snprintf(suffix, sizeof(suffix), ".hung-%d", r->dumps);
	snprintf(base, sizeof(base), "%s%s", r->req->rec->output, suffix);
	r->dump_due_ns = 0;
	n = tf_ring__dump(r->ring, suffix);
	if (n < 0) {
		log_error("%s", tf_ring__error(r->ring));
		return n;
	}
	log_info("dump %d: %d segment(s) in %s (read it as %s)", r->dumps, n, base, base);
	return 0;
}

/* A call open past the threshold marks a window; a second later the ring is linked out. */
static int watch_hung(struct recorder *r, __u64 now)
{
	const struct hung_call *c;

	if (r->dump_due_ns && now >= r->dump_due_ns)
		return cut_dump(r);
	if (r->dump_due_ns || r->dumps >= MAX_DUMPS)
		return 0;
	c = hungwatch__due(r->hung, now, r->req->rec->hung_ns);
	return c ? start_dump(r, c, now) : 0;
}

/* The server's samples are its whole; they are kept under the first target (-p, or -- CMD). */
/*
 * The agent's dlopen is no CUDA load: it must not stop the process it goes
 * into. A library another thread loaded meanwhile is found by reading the
 * mappings again after it.
 */
static void around_injection(void *tracer, __u32 tgid, bool done)
{
	static bool baseline_ours;	/* before and after come in pairs, one process at a time */
	struct tracer *tr = tracer;

	if (!done)
		baseline_ours = session__own_load(tr->session, tgid, true);
	else if (baseline_ours && session__own_load(tr->session, tgid, false))
		tracer__rescan(tr, tgid);
}

static __u32 server_tgid(const struct recorder *r)
{
	return r->tracer.targets.nr_tgids ? r->tracer.targets.tgids[0] : 0;
}

static int record_loop(struct recorder *r)
{
	__u64 start = tracer__now_ns(), last_stats = start, last_cpu = start;
	__u64 deadline = r->req->rec->duration_ns ? start + r->req->rec->duration_ns : 0;
	__u64 last_inject = 0;
	int ret = 0;

	while (!exiting && !r->write_err) {
		__u64 now;

		ret = tracer__poll(&r->tracer, 100);
		if (ret == -EINTR) {
			ret = 0;
			continue;
		}
		if (ret < 0) {
			log_error("reading the ring buffer: %s", strerror(-ret));
			break;
		}
		now = tracer__now_ns();
		/*
		 * -p: the agent into each traced process that made a CUDA call, at
		 * once for a new caller, and each second for those not yet served
		 */
		if (r->gpu && !r->req->targets->cmd &&
		    (r->nr_callers != r->callers_tried || now - last_inject >= 1000000000ull)) {
			r->callers_tried = r->nr_callers;
			gpu_rings__inject(r->gpu, r->inject_list, cuda_callers(r),
					  around_injection, &r->tracer);
			last_inject = now;
		}
		/* the agents' records go the same way as the probes' */
		if (r->gpu)
			gpu_rings__poll(r->gpu, on_record, r);
		if (r->srvm)
			server_metrics__poll(r->srvm, server_tgid(r), on_record, r);
		if (deadline && now >= deadline)
			break;
		if (now - last_stats >= 1000000000ull) {
			r->write_err = write_counters(r, SP_REC_STATS);
			/* a tracer killed outright loses a second of records at most */
			if (!r->write_err)
				r->write_err = out_flush(r);
			last_stats = now;
		}
		/* four a second: a process that lives under a second still gets a CPU share */
		if (now - last_cpu >= 250000000ull && !r->write_err) {
			tracer__sample_cpu(&r->tracer);
			last_cpu = now;
		}
		if (r->hung && !r->write_err)
			r->write_err = watch_hung(r, now);
		if (targets_gone(r)) {
			log_info("traced processes exited");
			break;
		}
		if (r->tap && r->tap->poll && r->tap->poll(r->tap->ctx))
			break;
	}
	/* what the probes wrote before we stopped still belongs in the file */
	tracer__end_windows(&r->tracer);
	session__drain(r->tracer.session);
	if (r->gpu)
		gpu_rings__finish(r->gpu, GPU_FINAL_WAIT_MS, on_record, r);
	if (r->srvm)
		server_metrics__poll(r->srvm, server_tgid(r), on_record, r);
	if (!r->write_err)
		tracer__sample_cpu(&r->tracer);
	return ret < 0 ? ret : 0;
}

/* Whole records the file holds: what a reader will find in it. */
static __u64 records_in_file(const char *path)
{
	struct tf_reader *rd;
	const void *rec;
	char err[256];
	__u64 n = 0;

	rd = tf_reader__open(path, err, sizeof(err));
	while (rd && tf_reader__next(rd, &rec) > 0)
		n++;
	tf_reader__free(rd);
	return n;
}

/* A write failed (a full disk): one line saying what the file keeps and what is lost. */
static void report_loss(struct recorder *r)
{
	__u64 given = r->records + r->stats + r->lost;
	__u64 kept = records_in_file(r->req->rec->output);

	log_error("%s: recording stopped; the file reads up to its last whole record: %llu "
		  "records kept, %llu lost, and no call after them recorded",
		  out_error(r), (unsigned long long)kept,
		  (unsigned long long)(given > kept ? given - kept : 0));
}

static void print_summary(struct recorder *r, const char *path)
{
	__u64 counters[SP_CNT_NR] = { 0 };
	__u64 drops;

	session__counters(r->tracer.session, counters);
	drops = counters[SP_CNT_DROP_CALL] + counters[SP_CNT_DROP_RET];
	if (counters[SP_CNT_WATCHDOG])
		log_warn("%llu stop(s) continued by the watchdog after %d ms, not by the tracer: "
			 "calls each process made until its probes were attached may be missing",
			 (unsigned long long)counters[SP_CNT_WATCHDOG], WATCHDOG_BOUND_MS);
	if (!path) {
		log_info("%llu records; %llu dropped%s", (unsigned long long)r->records,
			 (unsigned long long)drops, drops ? " (ring buffer full: try --ring-mb)" : "");
		return;
	}
	log_info("%llu records, %llu bytes to %s; %llu dropped%s",
		 (unsigned long long)r->records, (unsigned long long)out_bytes(r),
		 path, (unsigned long long)drops, drops ? " (ring buffer full: try --ring-mb)" : "");
	if (r->ring) {
		__u64 calls;
		__u32 gone = tf_ring__rotated(r->ring, &calls);

		__u64 left_out = tf_ring__left_out(r->ring);

		log_info("bounded: %u segment(s) with %llu calls rotated out; %s reads the newest "
			 "(segments %s.%u on)", gone, (unsigned long long)calls, path, path, gone);
		if (left_out)
			log_warn("bounded: %llu records of live processes' state (host memory, "
				 "code objects, mappings) left out of segment headers to hold "
				 "--max-size: those segments read alone without them",
				 (unsigned long long)left_out);
	}
}

static int open_output(struct recorder *r, const struct tf_header *hdr, char *err, size_t err_sz)
{
	const struct recording_args *a = r->req->rec;
	mode_t mode = a->mode_set ? a->mode : TF_DEFAULT_MODE;

	if (!a->output)
		return 0;
	if (a->max_bytes || a->hung_ns)
		r->ring = tf_ring__create(a->output, a->force, mode, hdr,
					  a->max_bytes ? a->max_bytes : DEFAULT_MAX_BYTES, err,
					  err_sz);
	else
		r->writer = tf_writer__create_mode(a->output, a->force, mode, hdr, err, err_sz);
	return has_output(r) ? 0 : -1;
}

/*
 * CLOCK_REALTIME between two CLOCK_MONOTONIC reads: merges place the
 * recording by it, and the gap bounds how well the pair was read.
 */
static int write_clock(struct recorder *r)
{
	struct sp_clock_rec c = { .type = SP_REC_CLOCK, .size = sizeof(c) };
	struct timespec before, real, after;
	__u64 b, a;

	if (!has_output(r))
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &before);
	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_MONOTONIC, &after);
	b = before.tv_sec * 1000000000ull + before.tv_nsec;
	a = after.tv_sec * 1000000000ull + after.tv_nsec;
	c.mono_ns = c.ts = b + (a - b) / 2;
	c.realtime_ns = real.tv_sec * 1000000000ull + real.tv_nsec;
	c.gap_ns = a > b ? a - b : 1;
	gethostname(c.host, sizeof(c.host) - 1);
	return own_record(r, &c, sizeof(c)) ? -1 : 0;
}

static int start_server_metrics(struct recorder *r)
{
	const struct recording_args *a = r->req->rec;
	struct srvm_url url;
	char err[512];

	if (srvm__parse_url(a->server_metrics, &url, err, sizeof(err))) {
		log_error("%s", err);
		return -1;
	}
	r->srvm = server_metrics__start(&url, a->server_metrics_interval_ns);
	if (!r->srvm) {
		log_error("out of memory");
		return -1;
	}
	return 0;
}

static int record_run(struct recorder *r)
{
	struct tracer_opts topts = {
		.targets = r->req->targets,
		.wait_for_libs = true,
		.ring_bytes = (__u64)(r->req->rec->ring_mb ? r->req->rec->ring_mb : DEFAULT_RING_MB) << 20,
		.stacks = r->req->rec->stacks,
		.on_record = on_record,
		.ctx = r,
		.child_env = r->gpu ? gpu_rings__env(r->gpu) : NULL,
		.sample_on_ns = r->req->rec->sample_on_ns,
		.sample_every_ns = r->req->rec->sample_every_ns,
	};
	struct tf_header hdr;
	char err[512];
	int ret;

	if (tracer__start(&r->tracer, &topts))
		return 1;
	tracer__header(&r->tracer, &hdr);
	/* stack records are version 2's: without them the file is one any reader reads */
	hdr.version = r->req->rec->stacks == STACKS_NONE ? TF_VERSION : TF_VERSION_STACKS;
	ret = open_output(r, &hdr, err, sizeof(err));
	if (!ret && r->tap)
		r->tap->header(r->tap->ctx, &hdr);
	tracer__free_header(&hdr);
	if (ret) {
		log_error("%s", err);
		return 1;
	}
	/* the header on disk at once: even a tracer killed now leaves a readable file */
	if (out_flush(r) || write_clock(r)) {
		log_error("%s", out_error(r));
		return 1;
	}
	/* a -- CMD runs only once its recording can be written: until here it ends unrun */
	if (exiting && r->tracer.child.go_fd >= 0) {
		log_error("stopped before %s started: it did not run", r->req->targets->cmd[0]);
		return 1;
	}
	if (tracer__release(&r->tracer))
		return 1;
	tracer__describe(&r->tracer);
	tracer__sample_cpu(&r->tracer);
	if (r->req->rec->server_metrics && start_server_metrics(r))
		return 1;
	log_info("tracing %d process(es), %d probes attached; Ctrl-C to stop",
		 r->tracer.targets.nr_tgids, r->tracer.nr_attached);
	if (r->req->rec->sample_on_ns)
		log_info("launch probes in for %.3g s of every %.3g s; the rest all the time",
			 r->req->rec->sample_on_ns / 1e9, r->req->rec->sample_every_ns / 1e9);
	ret = record_loop(r);
	if (!r->write_err)
		r->write_err = write_counters(r, SP_REC_END);
	if (!r->write_err && r->dump_due_ns)
		r->write_err = cut_dump(r);
	if (!r->write_err && has_output(r))
		r->write_err = out_close(r);
	if (r->write_err) {
		report_loss(r);
		return 1;
	}
	print_summary(r, r->req->rec->output);
	if (tracer__child_exited(&r->tracer) && WIFEXITED(r->tracer.child_status) &&
	    WEXITSTATUS(r->tracer.child_status))
		log_warn("%s exited with status %d", r->req->targets->cmd[0],
			 WEXITSTATUS(r->tracer.child_status));
	/* libraries probed in advance for a command count only if something mapped them */
	if (!r->tracer.nr_attached || !r->tracer.targets.maps_ever) {
		const struct recording_args *a = r->req->rec;
		/* a recording of nothing, which no one asked for by name, is not kept */
		bool removed = a->output_named && !unlink(a->output);

		log_error("no libcuda.so or libnccl.so was loaded by the traced processes: "
			  "are they CUDA programs?%s%s%s", removed ? " (" : "",
			  removed ? a->output : "", removed ? " removed)" : "");
		return 1;
	}
	return ret ? 1 : 0;
}

int recorder__run(const struct record_request *req)
{
	struct recorder r = { .req = req, .tap = req->tap };
	int ret;

	if ((req->rec->hung_ns || req->rec->max_bytes) && !req->rec->output) {
		log_error("--max-size and --dump-on need a recording: add -o FILE");
		return 1;
	}
	if (req->rec->hung_ns && !(r.hung = calloc(1, sizeof(*r.hung)))) {
		log_error("out of memory");
		return 1;
	}
	if ((req->rec->output && check_output(req->rec->output, req->rec->force)) ||
	    host__check_bpf())
		return 1;
	if (req->rec->gpu &&
	    !(r.gpu = gpu_rings__create(req->rec->cupti, req->targets->user,
					!req->targets->cmd))) {
		free(r.hung);
		return 1;
	}
	host__setup_libbpf();
	host__raise_nofile();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* a closed terminal or ssh session ends the recording as Ctrl-C does */
	signal(SIGHUP, on_signal);
	ret = record_run(&r);
	tf_writer__free(r.writer);
	tf_ring__free(r.ring);
	free(r.hung);
	tracer__stop(&r.tracer);
	gpu_rings__free(r.gpu);
	free(r.inject_list);
	server_metrics__free(r.srvm);
	return ret;
}
