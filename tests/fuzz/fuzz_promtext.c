// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Any bytes as a /metrics body (promtext.c: what a server sends to
 * --server-metrics, so not to be trusted): a scrape read as good holds only
 * values their families can hold, and a failed one says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "promtext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prom_scrape s;
	enum sp_srv_status st = promtext__parse((const char *)data, size, &s);

	if (memchr(s.why, '\0', sizeof(s.why)) == NULL)
		abort();
	if (st != SP_SRV_OK) {
		if (!s.why[0])
			abort();
		return 0;
	}
	for (int f = 1; f < SP_SRV_FAMILY_NR; f++)
		if (s.fam[f].series && promtext__check(f, promtext__value(&s, f)))
			abort();
	return 0;
}
