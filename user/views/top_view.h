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

/*
 * The header's answer, as report's first lines: the rates, the cycle's p50 and phase
 * shares, then the costliest flagged sync with its share of the cycle and its call site;
 * each fitted to width (< 0: no limit).
 */
void top__answer_line(char *buf, size_t size, const struct top_frame *f,
		      const struct top_answer *a, int width);
void top__sync_line(char *buf, size_t size, const struct top_answer *a, int width);
/* A call site's label in at most width columns: its object, then its native part left out,
 * then its start cut ("~" first); width < 0: whole. */
void top__site_label(char *buf, size_t size, const char *label, int width);

struct top_table;
struct tt_col;
/* The least width of a call-site column: its longest site without its object, at most this. */
#define TOP_SITE_MOST 40
/* cols: from[0..nr) with the call-site column's (col) least width that of f's sites. */
void top__site_cols(struct tt_col *cols, const struct tt_col *from, int nr, int col,
		    const struct top_frame *f);
/* The flagged sites' call-site column (col) shortened to its fitted width. */
void top__fit_sites(struct top_table *t, const struct top_frame *f, int col);

/* Names the views share. */
const char *top__sort_name(enum top_sort sort);
/* What the probes cost, as a share of the CPU time of the processes traced. */
void top__cost_line(char *buf, size_t size, double overhead_pct);

/*
 * --sample: "~" before a figure read from the windows only (cycles, phases,
 * launches); "" when not sampled. The header's line says what the windows saw.
 */
const char *top__mark(const struct top_frame *f);
const char *top__call_mark(const struct top_frame *f, __u16 name);
/* "" when not sampled. */
void top__sample_line(char *buf, size_t size, const struct top_frame *f, int width);

#endif /* __TOP_VIEW_H */
