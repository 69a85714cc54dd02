// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "log.h"
#include "tracer.h"

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

static int resolve(struct tracer *tr, const struct tracer_opts *opts, char *err, size_t err_sz)
{
	const struct target_args *want = opts->targets;

	memset(tr, 0, sizeof(*tr));
	if (want->nr_pids && targets__discover(want->pids, want->nr_pids, &tr->targets, err, err_sz))
		return -1;
	for (int i = 0; i < want->nr_libs; i++)
		if (targets__add_lib_file(&tr->targets, want->libs[i], err, err_sz))
			return -1;
	if (probes__resolve(&tr->targets, &tr->probes, err, err_sz))
		return -1;
	if (tr->probes.nr_probes == 0) {
		snprintf(err, err_sz, "no catalogued entry point found in %s",
			 tr->targets.nr_libs ? tr->targets.libs[0].path : "any library");
		return -1;
	}
	return 0;
}

int tracer__resolve(struct tracer *tr, const struct tracer_opts *opts)
{
	char err[512] = "";

	if (!resolve(tr, opts, err, sizeof(err)))
		return 0;
	log_error("%s", err);
	tracer__stop(tr);
	return -1;
}

int tracer__start(struct tracer *tr, const struct tracer_opts *opts)
{
	struct session_opts sopts = {
		.ring_bytes = opts->ring_bytes,
		.wake_bytes = opts->ring_bytes / 8,
		.on_record = opts->on_record,
		.ctx = opts->ctx,
	};
	char err[512] = "";

	if (resolve(tr, opts, err, sizeof(err)))
		goto fail;
	tr->session = session__open(&sopts, &tr->probes, err, sizeof(err));
	if (!tr->session || trace_targets(tr))
		goto fail;
	tr->attach_start_ns = tracer__now_ns();
	tr->nr_attached = session__attach(tr->session, &tr->targets, &tr->probes);
	tr->attach_done_ns = tracer__now_ns();
	if (tr->nr_attached <= 0) {
		snprintf(err, sizeof(err), "no probe could be attached: %s",
			 tr->nr_attached ? strerror(-tr->nr_attached) : "nothing to attach");
		goto fail;
	}
	log_debug("attached %d of %d probes in %.1f ms", tr->nr_attached, tr->probes.nr_probes,
		  (tr->attach_done_ns - tr->attach_start_ns) / 1e6);
	return 0;
fail:
	if (err[0])
		log_error("%s", err);
	tracer__stop(tr);
	return -1;
}

void tracer__header(const struct tracer *tr, struct tf_header *hdr)
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
}

/* Only the tables were allocated for the header; strings belong to the tracer. */
void tracer__free_header(struct tf_header *hdr)
{
	free(hdr->libs);
	free(hdr->probes);
	hdr->libs = NULL;
	hdr->probes = NULL;
}

void tracer__stop(struct tracer *tr)
{
	session__free(tr->session);
	tr->session = NULL;
	probes__free(&tr->probes);
	targets__free(&tr->targets);
}
