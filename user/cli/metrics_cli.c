// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* --metrics: the endpoint's options, its refreshes from the tracer's loop, and record's tap. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include "cli.h"
#include "httpserve.h"
#include "log.h"
#include "metrics_cli.h"
#include "metrics_view.h"
#include "parse.h"

#define REFRESH_NS 500000000ull
#define WINDOW_S 5

enum { OPT_METRICS = 300, OPT_LINGER };

static const struct argp_option metrics_options[] = {
	{ "metrics", OPT_METRICS, "[ADDR:]PORT", 0,
	  "Serve Prometheus metrics at http://ADDR:PORT/metrics (ADDR 127.0.0.1 unless given: "
	  "0.0.0.0:PORT or [::]:PORT listen on every interface)", 0 },
	{ "metrics-linger", OPT_LINGER, "DURATION", 0,
	  "After the trace ends, keep serving its last figures this long (default 0)", 0 },
	{},
};

static error_t parse_metrics_arg(int key, char *arg, struct argp_state *state)
{
	struct metrics_args *args = state->input;
	unsigned long long ns;

	switch (key) {
	case OPT_METRICS:
		args->listen = arg;
		break;
	case OPT_LINGER:
		if (parse__duration_ns(arg, PARSE_NS_PER_S, &ns) || ns > 86400 * PARSE_NS_PER_S)
			argp_error(state, "--metrics-linger: '%s' is not a duration up to a day, "
				   DURATION_HINT, arg);
		args->linger_s = ns / 1e9;
		break;
	case ARGP_KEY_END:
		if (args->linger_s && !args->listen)
			argp_error(state, "--metrics-linger applies to --metrics");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp metrics_argp = { metrics_options, parse_metrics_arg, NULL, NULL, NULL, NULL,
				   NULL };

struct metrics_run {
	struct http_server *server;
	double linger_s;
	__u64 next_ns;
	struct top_totals totals;
};

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static double self_cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Render and hand over; an endpoint that cannot be refreshed keeps its last figures. */
static void publish(struct metrics_run *m, const struct top_totals *totals, bool tracing)
{
	struct metrics_input in = { totals, self_cpu_s(), tracing, SPECPROBE_VERSION };
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int ret = out ? metrics__render(out, &in) : -ENOMEM;

	if (out && fclose(out))
		ret = -ENOMEM;
	if (!ret)
		http_server__publish(m->server, text, len);
	free(text);
}

int metrics_run__open(const struct metrics_args *args, struct metrics_run **out)
{
	struct metrics_run *m;
	char err[256];
	int ret;

	*out = NULL;
	if (!args->listen)
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m) {
		log_error("metrics: out of memory");
		return 1;
	}
	m->linger_s = args->linger_s;
	m->server = http_server__listen(args->listen, err, sizeof(err));
	if (!m->server) {
		log_error("--metrics: %s", err);
		free(m);
		return 1;
	}
	publish(m, NULL, true);
	ret = http_server__start(m->server, "/metrics", METRICS_CONTENT_TYPE);
	if (ret) {
		log_error("--metrics: cannot start serving: %s", strerror(-ret));
		http_server__free(m->server);
		free(m);
		return 1;
	}
	if (!http_server__loopback(m->server))
		log_warn("metrics on %s are reachable from other hosts",
			 http_server__address(m->server));
	log_info("metrics at http://%s/metrics", http_server__address(m->server));
	*out = m;
	return 0;
}

void metrics_run__update(struct metrics_run *m, struct top_state *t, const struct pipeline *p,
			 double window_s, bool force)
{
	__u64 now;

	if (!m || !t || !p)
		return;
	now = mono_ns();
	if (!force && now < m->next_ns)
		return;
	m->next_ns = now + REFRESH_NS;
	top__totals(t, p, window_s, &m->totals);
	publish(m, &m->totals, true);
}

static volatile sig_atomic_t linger_stop;

static void on_linger_signal(int sig)
{
	linger_stop = 1;
}

void metrics_run__close(struct metrics_run *m, struct top_state *t, const struct pipeline *p,
			double window_s)
{
	__u64 until;

	if (!m)
		return;
	/* without the end's figures the last ones stay (counters never go back), and no linger */
	if (t && p) {
		top__totals(t, p, window_s, &m->totals);
		publish(m, &m->totals, false);
	}
	if (t && p && m->linger_s > 0) {
		signal(SIGINT, on_linger_signal);
		signal(SIGTERM, on_linger_signal);
		signal(SIGHUP, on_linger_signal);
		until = mono_ns() + (__u64)(m->linger_s * 1e9);
		while (!linger_stop && mono_ns() < until) {
			struct timespec nap = { 0, 100000000 };

			nanosleep(&nap, NULL);
		}
	}
	http_server__free(m->server);
	free(m);
}

static const struct pipeline_opts windowed = { .analyse = true, .window = true };

static void tap_header(void *ctx, const struct tf_header *hdr)
{
	struct metrics_live *ml = ctx;
	struct pipeline_consumer c;

	ml->p = pipeline__new(hdr, &windowed);
	ml->state = top__new();
	if (!ml->p || !ml->state) {
		ml->err = -ENOMEM;
		return;
	}
	top__consumer(ml->state, &c);
	ml->err = pipeline__add(ml->p, &c);
}

static void tap_record(void *ctx, const void *rec, size_t size)
{
	struct metrics_live *ml = ctx;

	if (ml->err)
		return;
	ml->err = pipeline__feed(ml->p, rec, size);
	if (ml->err)
		log_warn("metrics: %s: the figures served stop here; the recording goes on",
			 strerror(-ml->err));
}

static int tap_poll(void *ctx)
{
	struct metrics_live *ml = ctx;

	if (!ml->err)
		metrics_run__update(ml->run, ml->state, ml->p, WINDOW_S, false);
	return 0;
}

void metrics_live__tap(struct metrics_live *ml, struct record_tap *tap)
{
	*tap = (struct record_tap){ .header = tap_header, .record = tap_record, .poll = tap_poll,
				    .ctx = ml };
}

void metrics_live__finish(struct metrics_live *ml)
{
	bool whole = ml->p && !ml->err && !pipeline__finish(ml->p);

	metrics_run__close(ml->run, whole ? ml->state : NULL, whole ? ml->p : NULL, WINDOW_S);
	pipeline__free(ml->p);
	top__free(ml->state);
	ml->run = NULL;
	ml->p = NULL;
	ml->state = NULL;
}
