/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Rendering a top frame: as a text block (--batch), or on the terminal with ncurses. */
#ifndef __TOP_VIEW_H
#define __TOP_VIEW_H

#include <stdbool.h>
#include <stdio.h>
#include "top_state.h"

/* What the frame is of, for its title line. */
struct top_title {
	const char *mode;	/* "live", "replay", "paused", "end" */
	const struct top_opts *opts;
	int width;		/* batch: columns of the text, <= 0: no limit */
};

/* One block per interval; 0 or -EIO. */
int top__print(FILE *out, const struct top_frame *f, const struct top_title *title);

/* The terminal screen. */
struct top_screen;

struct top_ui {
	bool paused, help;
	int scroll;		/* first loop row shown */
};

/* NULL with a one-line reason in err when there is no usable terminal. */
struct top_screen *top_screen__open(char *err, size_t err_sz);
/* The same on any terminal type and streams (term NULL: $TERM), a tty or not. */
struct top_screen *top_screen__open_on(const char *term, FILE *out, FILE *in, char *err,
				       size_t err_sz);
void top_screen__draw(struct top_screen *s, const struct top_frame *f,
		      const struct top_title *title, const struct top_ui *ui);
/* A key pressed, or -1 after waiting at most timeout_ms. */
int top_screen__key(struct top_screen *s, int timeout_ms);
/* Restores the terminal; safe to call twice. */
void top_screen__close(struct top_screen *s);

/* Names the views share. */
const char *top__sort_name(enum top_sort sort);
/* What the probes cost, as a share of the CPU time of the processes traced. */
void top__cost_line(char *buf, size_t size, double overhead_pct);

#endif /* __TOP_VIEW_H */
