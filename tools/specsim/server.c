// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * specsim-server: a speculative decoding loop over the simulated GPU, for
 * testing specprobe without a GPU. See tools/specsim/README.md.
 */
#include "server.h"

int main(int argc, char **argv)
{
	if (options__parse(argc, argv))
		return 2;
	stop_signals__install();
	if (env.ranks > 1 && !env.worker)
		return launcher__run(argc, argv);
	return rank__run() ? 1 : 0;
}
