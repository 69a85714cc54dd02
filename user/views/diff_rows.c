// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The setup rows of a diff as text, one pair of cells per row: both outputs show them. */
#include <stdio.h>
#include "diff_view.h"

static void role_text(const struct diff_role *r, char *buf, size_t len)
{
	int n;

	if (!r->execs) {
		snprintf(buf, len, "none");
		return;
	}
	n = snprintf(buf, len, "%zu, %zu launched", r->execs, r->launched);
	for (int i = 0; i < r->nr_kernels && n > 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - n, "%s%u", i ? "/" : "; kernels ", r->kernels[i]);
	if (r->more_kernels && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, "/...");
	if (r->collectives && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, "; %u nccl", r->collectives);
	if (r->uncaptured && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - n, "; %zu uncaptured", r->uncaptured);
}

static void accept_text(const struct cycle_summary *s, char *buf, size_t len)
{
	int best = -1;

	for (int k = 0; k < s->nr_accept_kinds; k++)
		if (best < 0 || s->accept_count[k] > s->accept_count[best])
			best = k;
	if (best < 0)
		snprintf(buf, len, "none");
	else
		snprintf(buf, len, "%s%s%s", model__call_name(s->accept_call[best]),
			 s->nr_accept_kinds > 1 ? " and others" : "",
			 s->deferred ? ", deferred" : "");
}

static const char *const setup_rows[] = {
	"host", "processes", "ranks", "loops", "verify_graphs", "draft_graphs", "extend_graphs",
	"unknown_graphs", "accept_sync",
};

static const enum graph_role row_role[] = { ROLE_VERIFY, ROLE_DRAFT, ROLE_EXTEND, ROLE_UNKNOWN };

static void setup_text(const struct diff *d, int s, int row, char *buf, size_t len)
{
	const struct diff_setup *st = &d->side[s].setup;

	switch (row) {
	case 0:
		snprintf(buf, len, "%s", model__view(d->in[s]->model)->host);
		break;
	case 1:
		snprintf(buf, len, "%zu", st->processes);
		break;
	case 2:
		if (st->ranks < 0)
			snprintf(buf, len, "unknown");
		else
			snprintf(buf, len, "%d", st->ranks);
		break;
	case 3:
		snprintf(buf, len, "%zu", st->loops);
		break;
	case 8:
		accept_text(&d->side[s].sum, buf, len);
		break;
	default:
		role_text(&st->role[row_role[row - 4]], buf, len);
	}
}

bool diff__setup_row(const struct diff *d, int row, const char **name, char *a, char *b,
		     size_t len)
{
	if (row < 0 || row >= (int)(sizeof(setup_rows) / sizeof(setup_rows[0])))
		return false;
	*name = setup_rows[row];
	setup_text(d, 0, row, a, len);
	setup_text(d, 1, row, b, len);
	return true;
}
