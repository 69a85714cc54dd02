// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What `top --replay` draws from any bytes as a recording: the window state
 * fed record by record, frames taken as the replay takes them, each drawn as
 * a --batch block and on a curses screen of any size from 1x1 up to
 * 1023x2047. The last 8 bytes of the input set the screen, the keys' state
 * and how often a frame is drawn; the bytes before them are the recording,
 * mutated by the fields readers index by (fuzz_fields.h) as well as by bytes.
 */
#include <curses.h>
#include "fuzz_fields.h"
#include "fuzz_input.h"
#include "pipeline.h"
#include "top_view.h"

#define PARAM_BYTES 8
#define MAX_FRAMES 24

struct top_params {
	int lines, cols;
	struct top_opts opts;
	struct top_ui ui;
	unsigned int every;	/* a frame every this many records */
	bool reset;		/* forget the window once, half way */
};

static void read_params(const uint8_t *b, struct top_params *p)
{
	p->lines = 1 + (b[0] | (b[1] & 3) << 8) % 1023;
	p->cols = 1 + (b[2] | (b[3] & 7) << 8) % 2047;
	p->opts.sort = b[4] % TOP_SORT_NR;
	p->opts.focus_rank = (b[4] >> 2) % 10 - 1;
	p->ui.help = b[4] >> 6 & 1;
	p->reset = b[4] >> 7;
	p->ui.scroll = b[5];
	p->opts.window_s = 1 + b[6] % 60;
	p->opts.hung_ns = (1 + (b[6] >> 6)) * 1000000ull << (b[7] >> 4);
	p->every = 1u << (b[7] % 12);
}

static struct top_screen *screen(void)
{
	static struct top_screen *s;
	char err[256];
	FILE *in;

	if (s)
		return s;
	in = fopen("/dev/null", "re");
	if (!in)
		abort();
	/* terminfo entries in ncurses-base, from the richest */
	s = top_screen__open_on("xterm", fuzz_devnull(), in, err, sizeof(err));
	if (!s)
		s = top_screen__open_on("vt100", fuzz_devnull(), in, err, sizeof(err));
	if (!s)
		s = top_screen__open_on("dumb", fuzz_devnull(), in, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "fuzz_top: %s\n", err);
		abort();
	}
	return s;
}

static void draw(struct top_state *t, const struct pipeline *p, __u64 now,
		 const struct top_params *prm, const char *mode)
{
	static struct top_frame frame;
	const struct top_title title = { mode, &prm->opts };

	top__frame(t, p, now, &prm->opts, &frame);
	top__print(fuzz_devnull(), &frame, &title);
	top_screen__draw(screen(), &frame, &title, &prm->ui);
}

static void replay(struct pipeline *p, struct top_state *t, const struct top_params *prm)
{
	struct pipeline_snapshot snap;
	unsigned int n = 0, frames = 0;
	__u64 ts, last = 0;

	while (pipeline__read_next(p, &ts) > 0) {
		if (!ts || ts <= last)
			continue;
		last = ts;
		if (++n % prm->every || frames >= MAX_FRAMES)
			continue;
		if (prm->reset && frames == MAX_FRAMES / 2)
			top__reset(t);
		draw(t, p, ts, prm, "replay");
		frames++;
	}
	if (pipeline__finish(p))
		return;
	pipeline__snapshot(p, &snap);
	draw(t, p, snap.last_ts, prm, "end");
}

/* The recording's fields as the other harnesses mutate them; the screen's bytes stay last. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	return fields_mutate(data, size, max_size, seed, size >= PARAM_BYTES ? PARAM_BYTES : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct pipeline_opts windowed = { .analyse = true, .window = true };
	struct pipeline_consumer c;
	struct top_params prm = { 0 };
	struct top_state *t;
	struct pipeline *p;
	char err[512];

	if (size < PARAM_BYTES)
		return 0;
	read_params(data + size - PARAM_BYTES, &prm);
	screen();
	if (resizeterm(prm.lines, prm.cols) == ERR)
		return 0;
	p = pipeline__open(fuzz_input_path(data, size - PARAM_BYTES), &windowed, err, sizeof(err));
	if (!p)
		return 0;
	t = top__new();
	if (!t)
		abort();
	top__consumer(t, &c);
	if (!pipeline__add(p, &c))
		replay(p, t, &prm);
	top__free(t);
	pipeline__free(p);
	return 0;
}
