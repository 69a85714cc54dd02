// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * specsim-server: a speculative decoding loop over the simulated GPU, for
 * testing specprobe without a GPU. See tools/specsim/README.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include "server.h"

/*
 * The strings argv points to lie back to back; the kernel's cmdline is that
 * area. setproctitle writes the title over it and NULs the rest, and sets comm
 * (the first 15 bytes) with prctl: a reader of either sees what SGLang shows.
 */
void rank_title__set(int argc, char **argv, int rank)
{
	char *area = argv[0], *end = argv[argc - 1] + strlen(argv[argc - 1]);
	char title[64];
	size_t len = snprintf(title, sizeof(title), "sglang::scheduler_TP%d", rank);

	if (len > (size_t)(end - area))
		len = end - area;
	memset(area, 0, end - area);
	memcpy(area, title, len);
	prctl(PR_SET_NAME, title, 0, 0, 0);
}

/* Options parsed from a copy, so the title may overwrite the strings argv points to. */
static char **copy_args(int argc, char **argv)
{
	char **copy = calloc(argc + 1, sizeof(*copy));

	for (int i = 0; copy && i < argc; i++)
		if (!(copy[i] = strdup(argv[i])))
			return NULL;
	return copy;
}

int main(int argc, char **argv)
{
	char **args = copy_args(argc, argv);

	if (!args) {
		perror("specsim-server: arguments");
		return 2;
	}
	if (options__parse(argc, args))
		return 2;
	stop_signals__install();
	if (env.ranks > 1 && !env.worker)
		return launcher__run(argc, args);
	if (env.rank_hint == RANK_HINT_TITLE)
		rank_title__set(argc, argv, env.rank);
	return rank__run() ? 1 : 0;
}
