// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * pycode__decode_lines on line tables given as text, for comparing with CPython's
 * own co_lines(): reads "MINOR FIRSTLINENO HEX" lines, prints "INSTR:LINE ..." per
 * table (or "error N").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pycode.h"

#define TABLE_MAX (1 << 20)

static size_t unhex(const char *hex, __u8 *out, size_t cap)
{
	size_t n = 0;
	unsigned int byte;

	while (n < cap && sscanf(hex + 2 * n, "%2x", &byte) == 1)
		out[n++] = byte;
	return n;
}

int main(void)
{
	static char line[2 * TABLE_MAX + 64];
	static __u8 table[TABLE_MAX];
	static struct sp_pyline lines[TABLE_MAX];
	unsigned int minor;
	int firstlineno, nr, i, pos;
	bool complete;

	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "%u %d %n", &minor, &firstlineno, &pos) != 2) {
			fprintf(stderr, "pylines: bad input line\n");
			return 1;
		}
		line[strcspn(line, "\n")] = '\0';
		nr = pycode__decode_lines(minor, table, unhex(line + pos, table, TABLE_MAX),
					  firstlineno, lines, TABLE_MAX, &complete);
		if (nr < 0) {
			printf("error %d\n", nr);
			continue;
		}
		for (i = 0; i < nr; i++)
			printf("%s%u:%d", i ? " " : "", lines[i].instr, lines[i].line);
		printf("\n");
	}
	return 0;
}
