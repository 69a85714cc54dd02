// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Any bytes as a Python line table (pycode.c: read from a traced process, so
 * not to be trusted): the first byte picks the format (3.10 or 3.11+) and the
 * room; the entries must come out in rising bytecode order within that room,
 * no two neighbours with one line, a cut table ending in "no line".
 */
#include <stdint.h>
#include <stdlib.h>
#include "pycode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_pyline lines[256];
	unsigned int minor;
	size_t room;
	bool complete;
	int nr;

	if (size < 1)
		return 0;
	minor = data[0] & 1 ? 10 : 11 + (data[0] >> 1 & 3);
	room = 1 + (data[0] >> 3);	/* 1..32: truncation is reached often */
	nr = pycode__decode_lines(minor, data + 1, size - 1, 1, lines, room, &complete);
	if (nr < 0)
		return 0;
	if ((size_t)nr > room || (!complete && (!nr || lines[nr - 1].line != -1)))
		abort();
	for (int i = 1; i < nr; i++)
		if (lines[i].instr <= lines[i - 1].instr || lines[i].line == lines[i - 1].line)
			abort();
	return 0;
}
