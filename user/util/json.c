// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <string.h>
#include "json.h"

/* The code point of a valid UTF-8 sequence at s (its length in *len), or -1. */
static long utf8_char(const unsigned char *s, size_t room, size_t *len)
{
	static const long min_cp[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	long cp;

	if (!n || s[0] > 0xf4 || n > room)
		return -1;
	cp = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*len = n;
	return cp;
}

void json__string(FILE *out, const char *s, size_t max_len)
{
	fputc('"', out);
	for (size_t i = 0; i < max_len && s[i]; i++) {
		unsigned char ch = s[i];
		size_t len;
		long cp;

		/* output stays ASCII: UTF-8 as \u escapes, other non-ASCII bytes as \u00XX */
		if (ch == '"' || ch == '\\') {
			fprintf(out, "\\%c", ch);
		} else if (ch >= 0x80 && (cp = utf8_char((const unsigned char *)s + i,
							 strnlen(s + i, max_len - i), &len)) >= 0) {
			if (cp >= 0x10000)
				fprintf(out, "\\u%04lx\\u%04lx", 0xd800 + ((cp - 0x10000) >> 10),
					0xdc00 + ((cp - 0x10000) & 0x3ff));
			else
				fprintf(out, "\\u%04lx", cp);
			i += len - 1;
		} else if (ch < 0x20 || ch >= 0x7f) {
			fprintf(out, "\\u%04x", ch);
		} else {
			fputc(ch, out);
		}
	}
	fputc('"', out);
}
