// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include "json.h"

void json__string(FILE *out, const char *s, size_t max_len)
{
	fputc('"', out);
	for (size_t i = 0; i < max_len && s[i]; i++) {
		unsigned char ch = s[i];

		/* control and non-ASCII bytes escaped: names may hold anything */
		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}
