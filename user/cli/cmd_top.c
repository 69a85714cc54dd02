// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe top: the live view of cycles, flagged syncs and hung calls; or a replay. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <curses.h>
#include "cli.h"
#include "log.h"
#include "metrics_cli.h"
#include "parse.h"
#include "pipeline.h"
#include "recorder.h"
#include "top_view.h"

static struct top_env {
	struct recording_args rec;	/* -o: also keep a recording */
	struct target_args targets;
	struct metrics_args metrics;
	const char *replay;
	double interval_s;
	double speed;
	bool batch;
	int width;		/* --width: batch text columns, 0: no limit, -1: not given */
	long frames;		/* -n: stop after this many (0: no limit) */
	struct top_opts opts;
} env = { .interval_s = 1, .speed = 1, .width = -1,
	  .opts = { .window_s = 5, .hung_ns = 1000000000ull, .focus_rank = -1 } };

static const char doc[] =
	"A live view beside a running server: per rank and loop the cycles per second, cycle "
	"p50/p99 and phase shares over the last window, the flagged syncs by call and position, "
	"calls entered and not returned for longer than --hung-ms, and the busiest entry points. "
	"Traces -p PID[,PID...] or -- CMD as 'record' does (-o also keeps the recording), or "
	"plays a recording through the same screen (--replay FILE).\n\n"
	"TOK/S and ACC (accept length) come from the server's own counters: add "
	"--server-metrics http://127.0.0.1:PORT/metrics (vLLM; SGLang with --enable-metrics); "
	"without it they stay '-'.\n\n"
	"Keys: q quit, p pause, s sort, r reset, 1-9 one rank (the first to the ninth; again or 0: "
	"all), arrows scroll, ? help.\n\n"
	"EXAMPLES:\n"
	"  specprobe top -p 4242\n"
	"  specprobe top -o run.sprb -- python3 serve.py\n"
	"  specprobe top --replay run.sprb --speed 4\n"
	"  specprobe top -p 4242 --server-metrics http://127.0.0.1:8000/metrics\n"
	"  specprobe top --batch -n 10 -p 4242 > top.log\n"
	"  specprobe top --metrics 9400 -p 4242        # also a Prometheus endpoint\n";

enum { OPT_REPLAY = 256, OPT_SPEED, OPT_BATCH, OPT_WINDOW, OPT_HUNG, OPT_WIDTH };

static const struct argp_option options[] = {
	{ "interval", 'i', "DURATION", 0, "Redraw every DURATION (default 1s)", 0 },
	{ "window", OPT_WINDOW, "DURATION", 0,
	  "Figures over the last DURATION (default 5s, max 1m)", 0 },
	{ "hung-ms", OPT_HUNG, "MS", 0,
	  "A call open longer than MS is hung (default 1000; 2s or 1.5m also taken)", 0 },
	{ "batch", OPT_BATCH, NULL, 0, "No screen: a text block per interval on stdout", 0 },
	{ "width", OPT_WIDTH, "COLS", 0,
	  "Batch lines at most COLS wide, columns left out by need (default: the terminal's "
	  "width when stdout is one; 0: no limit)", 0 },
	{ "iterations", 'n', "N", 0, "Stop after N intervals", 0 },
	{ "replay", OPT_REPLAY, "FILE", 0, "Play a recording instead of tracing", 0 },
	{ "speed", OPT_SPEED, "X", 0, "Replay at X times the recorded pace (0: at once; default 1)",
	  0 },
	{},
};

static const struct argp_child children[] = {
	{ &recording_argp, 0, "Live (-o also keeps the recording):", 1 },
	{ &target_argp, 0, NULL, 2 },
	{ &metrics_argp, 0, NULL, 3 },
	{},
};

static bool live(void)
{
	return env.targets.nr_pids > 0 || env.targets.cmd;
}

static void check_all(struct argp_state *state)
{
	if (env.replay && live())
		argp_error(state, "either --replay FILE or -p PID / -- CMD, not both");
	if (!env.replay && !live())
		argp_error(state, "what to watch? -p PID, -- CMD, or --replay FILE");
	if (env.replay &&
	    (env.rec.output || env.rec.duration_ns || env.rec.force || env.rec.ring_mb))
		argp_error(state, "-o, --duration, --force and --ring-mb are for live use");
	if (env.replay && env.metrics.listen)
		argp_error(state, "--metrics is for live use");
	if (env.replay && env.rec.sample_on_ns)
		argp_error(state, "--sample is for live use");
}

static double parse_number(struct argp_state *state, const char *what, const char *arg,
			   double min, double max)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || !(v >= min && v <= max))
		argp_error(state, "%s: '%s' is not a number from %g to %g", what, arg, min, max);
	return v;
}

/* A duration from min_ns to max_ns, a bare number in bare_ns units; in ns. */
static unsigned long long parse_duration(struct argp_state *state, const char *what,
					 const char *arg, unsigned long long bare_ns,
					 unsigned long long min_ns, unsigned long long max_ns)
{
	unsigned long long ns;

	if (parse__duration_ns(arg, bare_ns, &ns) || ns < min_ns || ns > max_ns)
		argp_error(state, "%s: '%s' is not a duration from %gs to %gs, " DURATION_HINT,
			   what, arg, min_ns / 1e9, max_ns / 1e9);
	return ns;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	unsigned long width;

	switch (key) {
	case 'i':
		env.interval_s = parse_duration(state, "--interval", arg, PARSE_NS_PER_S,
						50 * PARSE_NS_PER_MS, 3600 * PARSE_NS_PER_S) / 1e9;
		break;
	case OPT_WINDOW:
		env.opts.window_s = parse_duration(state, "--window", arg, PARSE_NS_PER_S,
						   PARSE_NS_PER_S, 60 * PARSE_NS_PER_S) / 1e9;
		break;
	case OPT_HUNG:
		env.opts.hung_ns = parse_duration(state, "--hung-ms", arg, PARSE_NS_PER_MS,
						  PARSE_NS_PER_MS, 3600 * PARSE_NS_PER_S);
		break;
	case OPT_BATCH:
		env.batch = true;
		break;
	case OPT_WIDTH:
		if (parse__ulong(arg, &width) || (width && width < 40) || width > 10000)
			argp_error(state, "--width: '%s' is no width: 40 to 10000 columns, or 0",
				   arg);
		env.width = (int)width;
		break;
	case 'n':
		env.frames = parse_number(state, "--iterations", arg, 1, 1e9);
		break;
	case OPT_REPLAY:
		env.replay = arg;
		break;
	case OPT_SPEED:
		env.speed = parse_number(state, "--speed", arg, 0, 1e6);
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.rec;
		state->child_inputs[1] = &env.targets;
		state->child_inputs[2] = &env.metrics;
		break;
	case ARGP_KEY_ARG:
		if (cli__after_dashdash(state))
			return ARGP_ERR_UNKNOWN;
		cli__pid_hint(state, arg, "command");
		argp_error(state, "unexpected '%s': a recording is given with --replay FILE", arg);
		break;
	case ARGP_KEY_END:
		check_all(state);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* One run of the view, live or replayed: the pipeline, the window state and the screen. */
struct top_run {
	struct pipeline *p;
	struct top_state *state;
	struct top_screen *screen;	/* NULL: --batch */
	struct metrics_run *metrics;	/* NULL: no --metrics */
	struct top_ui ui;
	const char *mode;
	__u64 next_frame;	/* wall clock (batch replays: trace clock) */
	__u64 replay_end;	/* replays: the time of the last record played */
	long frames;
	int err;
	bool quit;
};

static const struct pipeline_opts windowed = { .analyse = true, .window = true };

/* Ctrl-C, SIGTERM and SIGHUP end top as q does; a third leaves at once, were the end stuck. */
static volatile sig_atomic_t stop_asked;

static void on_stop_signal(int sig)
{
	if (stop_asked >= 2)
		_exit(128 + sig);
	stop_asked++;
}

static void catch_stop_signals(void)
{
	signal(SIGINT, on_stop_signal);
	signal(SIGTERM, on_stop_signal);
	signal(SIGHUP, on_stop_signal);
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int add_state(struct top_run *run)
{
	struct pipeline_consumer c;

	run->state = top__new();
	if (!run->state)
		return -ENOMEM;
	top__consumer(run->state, &c);
	return pipeline__add(run->p, &c);
}

/* Batch text fits --width, else the terminal it is written to; to a file it has no limit. */
static int batch_width(void)
{
	struct winsize ws;

	if (env.width >= 0)
		return env.width;
	if (isatty(STDOUT_FILENO) && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col)
		return ws.ws_col;
	return 0;
}

static void show(struct top_run *run, __u64 now, const char *mode)
{
	static struct top_frame frame;
	struct top_title title = { mode, &env.opts, run->screen ? 0 : batch_width() };

	if (!run->p || !run->state)
		return;
	top__frame(run->state, run->p, now, &env.opts, &frame);
	/*
	 * Live, no probe yet: no CUDA or NCCL library in the traced processes (the
	 * recorder says it waits for one, once). A block would be empty: none is printed.
	 */
	if (!run->screen && !frame.probes && !strcmp(mode, "live"))
		return;
	if (run->screen)
		top_screen__draw(run->screen, &frame, &title, &run->ui);
	else if (top__print(stdout, &frame, &title))
		run->err = -EIO;
	run->frames++;
	if (env.frames && run->frames >= env.frames)
		run->quit = true;
}

static void focus(int digit)
{
	int rank = digit - 1;

	env.opts.focus_rank = digit == 0 || env.opts.focus_rank == rank ? -1 : rank;
}

/* Keys waiting; true when the screen must be drawn again at once. */
static bool handle_keys(struct top_run *run, int timeout_ms)
{
	bool redraw = false;
	int ch;

	while (run->screen && (ch = top_screen__key(run->screen, timeout_ms)) >= 0) {
		timeout_ms = 0;
		redraw = true;
		/* 3: Ctrl-C from a terminal in raw mode, where it sends no signal */
		if (ch == 'q' || ch == 'Q' || ch == 3)
			run->quit = true;
		else if (ch == 'p' || ch == ' ')
			run->ui.paused = !run->ui.paused;
		else if (ch == 's')
			env.opts.sort = (env.opts.sort + 1) % TOP_SORT_NR;
		else if (ch == 'r' && run->state)
			top__reset(run->state);
		else if (ch >= '0' && ch <= '9')
			focus(ch - '0');
		else if (ch == '?' || ch == 'h')
			run->ui.help = !run->ui.help;
		else if (ch == KEY_UP && run->ui.scroll > 0)
			run->ui.scroll--;
		else if (ch == KEY_DOWN)
			run->ui.scroll++;
		else if (ch == 27 && run->ui.help)
			run->ui.help = false;
	}
	return redraw;
}

/* Draw when the interval has passed, or at once after a key; paused screens stay as they are. */
static void tick(struct top_run *run, __u64 trace_now, int key_wait_ms)
{
	__u64 wall = mono_ns();
	bool keyed = handle_keys(run, key_wait_ms);

	if (run->ui.paused && !keyed)
		return;
	if (!keyed && wall < run->next_frame)
		return;
	if (wall >= run->next_frame)
		run->next_frame = wall + (__u64)(env.interval_s * 1e9);
	show(run, trace_now, run->ui.paused ? "paused" : run->mode);
}

static int open_screen(struct top_run *run)
{
	char err[256];

	if (env.batch)
		return 0;
	run->screen = top_screen__open(err, sizeof(err));
	if (!run->screen) {
		log_error("%s", err);
		return -1;
	}
	log_hold(true);
	return 0;
}

static void close_screen(struct top_run *run)
{
	if (!run->screen)
		return;
	top_screen__close(run->screen);
	run->screen = NULL;
	log_hold(false);
}

/* Live: the recorder's tap feeds the pipeline; its poll hook draws and reads keys. */
static void live_header(void *ctx, const struct tf_header *hdr)
{
	struct top_run *run = ctx;

	run->p = pipeline__new(hdr, &windowed);
	if (!run->p || add_state(run))
		run->err = -ENOMEM;
	/* the probes are in: a batch's first block comes an interval on, with its figures */
	if (!run->screen)
		run->next_frame = mono_ns() + (__u64)(env.interval_s * 1e9);
	/* the recorder's own handlers end the loop too, but a second signal leaves mid-write */
	catch_stop_signals();
}

static void live_record(void *ctx, const void *rec, size_t size)
{
	struct top_run *run = ctx;

	if (run->p && !run->err)
		run->err = pipeline__feed(run->p, rec, size);
}

static int live_poll(void *ctx)
{
	struct top_run *run = ctx;

	tick(run, mono_ns(), 0);
	if (!run->err)
		metrics_run__update(run->metrics, run->state, run->p, env.opts.window_s, false);
	return run->quit || stop_asked || run->err;
}

/* The end: the last cycles settle; a batch run prints them as its last block. */
static int finish(struct top_run *run, __u64 now)
{
	int ret;

	if (!run->p)
		return 0;
	/* a call open at the end, a rank stuck in a collective, is the end block's news */
	if (run->state && top__keep_open(run->state, run->p))
		log_warn("out of memory: the end block leaves out some calls open at the end");
	ret = pipeline__finish(run->p);
	if (ret) {
		log_error("analysing the records: %s", strerror(-ret));
		return 1;
	}
	if (!run->screen)
		show(run, now, "end");
	return run->err == -EIO ? 1 : 0;
}

static void run_free(struct top_run *run)
{
	close_screen(run);
	pipeline__free(run->p);
	top__free(run->state);
}

static int top_live(void)
{
	struct top_run run = { .mode = "live" };
	struct record_tap tap = { .header = live_header, .record = live_record,
				  .poll = live_poll, .ctx = &run };
	struct record_request req = { .targets = &env.targets, .rec = &env.rec, .tap = &tap };
	int status;

	if (metrics_run__open(&env.metrics, &run.metrics))
		return 1;
	if (open_screen(&run)) {
		metrics_run__close(run.metrics, NULL, NULL, 0);
		return 1;
	}
	status = recorder__run(&req);
	close_screen(&run);
	if (run.err && run.err != -EIO) {
		log_error("reading the records live: %s", strerror(-run.err));
		status = 1;
	} else if (!status) {
		status = finish(&run, mono_ns());
	}
	if (env.rec.output && !status)
		log_info("the recording is in %s", env.rec.output);
	metrics_run__close(run.metrics, run.err ? NULL : run.state, run.err ? NULL : run.p,
			   env.opts.window_s);
	run_free(&run);
	return status;
}

/* Wait until the record's time comes at the asked speed; keys and frames go on meanwhile. */
static void pace(struct top_run *run, __u64 first_ts, __u64 *wall0, __u64 ts)
{
	for (;;) {
		__u64 now = mono_ns(), due = *wall0 + (__u64)((ts - first_ts) / env.speed);
		int wait_ms = due > now ? (int)((due - now) / 1000000) : 0;

		if (run->quit || stop_asked || (!run->ui.paused && !wait_ms))
			return;
		wait_ms = wait_ms > 50 || run->ui.paused ? 50 : wait_ms;
		if (run->screen) {
			tick(run, ts, wait_ms);
		} else {
			struct timespec d = { 0, wait_ms * 1000000l };

			nanosleep(&d, NULL);
		}
		/* time paused is not time the recording plays */
		if (run->ui.paused)
			*wall0 += mono_ns() - now;
	}
}

/* Past this much trace time without a record, every frame is the same empty one. */
static __u64 idle_span(void)
{
	return (__u64)((env.opts.window_s + env.interval_s) * 1e9);
}

/*
 * Batch replays draw by trace time, so the blocks do not depend on the machine's speed.
 * A gap in the records (or a corrupt stamp far ahead) gets the frames of the window
 * emptying and of the window before the next record, not one per interval between.
 */
static void replay_frames(struct top_run *run, __u64 ts)
{
	__u64 step = (__u64)(env.interval_s * 1e9), gap_start = run->next_frame;

	if (run->screen) {
		tick(run, ts, 0);
		return;
	}
	if (!run->next_frame)
		run->next_frame = ts + step;
	while (ts >= run->next_frame && !run->quit) {
		show(run, run->next_frame, "replay");
		if (ULLONG_MAX - run->next_frame <= step + idle_span()) {
			run->next_frame = ULLONG_MAX;	/* a stamp at the clock's end: no frame after */
			break;
		}
		run->next_frame += step;
		if (run->next_frame - gap_start > idle_span() && ts > run->next_frame + idle_span())
			run->next_frame += (ts - run->next_frame - idle_span()) / step * step;
	}
}

static int replay_records(struct top_run *run)
{
	__u64 ts, first_ts = 0, last_ts = 0, wall0 = 0;
	int ret = 0;

	while (!run->quit && !stop_asked && !run->err &&
	       (ret = pipeline__read_next(run->p, &ts)) > 0) {
		/* the play starts at the first call: what comes before it is set-up */
		if (!ts || ts <= last_ts || (!first_ts && !pipeline__stats(run->p)->calls))
			continue;
		if (!first_ts) {
			first_ts = ts;
			wall0 = mono_ns();
		}
		/* an idle stretch plays no longer than it takes the window to empty */
		if (last_ts && ts - last_ts > idle_span())
			first_ts += ts - last_ts - idle_span();
		last_ts = run->replay_end = ts;
		if (env.speed > 0)
			pace(run, first_ts, &wall0, ts);
		replay_frames(run, ts);
	}
	return run->quit || stop_asked || run->err ? 0 : ret;
}

/* Where the recording ends: its last record, so a call open to the end shows as long as it was. */
static __u64 trace_last(const struct top_run *run)
{
	struct pipeline_snapshot snap;

	pipeline__snapshot(run->p, &snap);
	return run->replay_end > snap.last_ts ? run->replay_end : snap.last_ts;
}

/* Interactive replays keep the last screen until q. */
static void hold_end(struct top_run *run)
{
	while (run->screen && !run->quit && !stop_asked)
		if (handle_keys(run, 200))
			show(run, trace_last(run), "end");
}

static int top_replay(void)
{
	struct top_run run = { .mode = "replay" };
	char err[512];
	int ret, status;

	run.p = pipeline__open(env.replay, &windowed, err, sizeof(err));
	if (!run.p) {
		log_error("%s", err);
		return 1;
	}
	if (add_state(&run) || open_screen(&run)) {
		run_free(&run);
		return 1;
	}
	catch_stop_signals();
	ret = replay_records(&run);
	status = finish(&run, trace_last(&run));
	if (!status && run.screen) {
		show(&run, trace_last(&run), "end");
		hold_end(&run);
		/* the end block stays on the terminal, as a live run's does */
		close_screen(&run);
		show(&run, trace_last(&run), "end");
	}
	close_screen(&run);
	if (!ret)
		pipeline__warn_input(run.p, env.replay);
	if (ret == -EBADMSG) {
		log_error("%s: the figures shown are up to there", pipeline__error(run.p));
		status = 1;
	} else if (ret < 0) {
		log_error("%s: %s", env.replay, strerror(-ret));
		status = 1;
	}
	run_free(&run);
	return status;
}

int cmd_top(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "[-- CMD [ARGS...]]", doc, children,
					  NULL, NULL };

	if (cli__argp_parse(&argp, argc, argv))
		return 2;
	return live() ? top_live() : top_replay();
}
