// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The Prometheus text format (version 0.0.4), for a handful of known families. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "promtext.h"

struct known {
	const char *name;	/* the sample's name as served: counters with _total */
	enum sp_srv_family family;
	enum sp_srv_server server;
};

static const struct known known[] = {
	{ "vllm:spec_decode_num_drafts_total", SP_SRV_DRAFTS, SP_SRV_VLLM },
	{ "vllm:spec_decode_num_draft_tokens_total", SP_SRV_DRAFT_TOKENS, SP_SRV_VLLM },
	{ "vllm:spec_decode_num_accepted_tokens_total", SP_SRV_ACCEPTED, SP_SRV_VLLM },
	{ "vllm:generation_tokens_total", SP_SRV_GENERATED, SP_SRV_VLLM },
	{ "sglang:spec_accept_length", SP_SRV_ACCEPT_LENGTH, SP_SRV_SGLANG },
	{ "sglang:spec_accept_rate", SP_SRV_ACCEPT_RATE, SP_SRV_SGLANG },
	{ "sglang:generation_tokens_total", SP_SRV_GENERATED, SP_SRV_SGLANG },
};

bool promtext__is_gauge(enum sp_srv_family f)
{
	return f == SP_SRV_ACCEPT_LENGTH || f == SP_SRV_ACCEPT_RATE;
}

double promtext__value(const struct prom_scrape *s, enum sp_srv_family f)
{
	const struct prom_family *pf = &s->fam[f];

	if (!pf->series)
		return 0;
	return promtext__is_gauge(f) ? pf->sum / pf->series : pf->sum;
}

const char *promtext__server_name(enum sp_srv_server s)
{
	return s == SP_SRV_VLLM ? "vllm" : s == SP_SRV_SGLANG ? "sglang" : "server";
}

const char *promtext__status_name(unsigned int status)
{
	static const char *const names[SP_SRV_STATUS_NR] = {
		[SP_SRV_OK] = "ok", [SP_SRV_DOWN] = "down", [SP_SRV_SLOW] = "slow",
		[SP_SRV_NOT_TEXT] = "not_text", [SP_SRV_TOO_BIG] = "too_big",
		[SP_SRV_HTTP] = "http", [SP_SRV_NO_FAMILY] = "no_family",
		[SP_SRV_CLOSED] = "closed", [SP_SRV_BAD_LENGTH] = "bad_length",
		[SP_SRV_BAD_SAMPLE] = "bad_sample", [SP_SRV_BAD_VALUE] = "bad_value",
	};

	return status < SP_SRV_STATUS_NR ? names[status] : "unknown";
}

const char *promtext__check(enum sp_srv_family f, double v)
{
	if (isnan(v))
		return promtext__is_gauge(f) ? "no value yet" : "a count is never NaN";
	if (isinf(v))
		return "infinite";
	if (v < 0)
		return "below 0";
	if (f == SP_SRV_ACCEPT_RATE && v > 1)
		return "above 1, which no rate of acceptance is";
	if (promtext__is_gauge(f))
		return NULL;
	if (v != floor(v))
		return "not a whole count";
	if (v >= PROM_MAX_COUNT)
		return "2^53 or past it, where a double no longer counts by one";
	return NULL;
}

static size_t digits(const char *s, size_t i, size_t len)
{
	size_t from = i;

	while (i < len && isdigit((unsigned char)s[i]))
		i++;
	return i - from;
}

/* "inf", "infinity" (either signed) or "nan" (unsigned), any case, as Go reads them. */
static bool special(const char *s, size_t len, double *v)
{
	size_t sign = len && (s[0] == '+' || s[0] == '-');
	const char *w = s + sign;
	size_t n = len - sign;

	if ((n == 3 && !strncasecmp(w, "inf", 3)) || (n == 8 && !strncasecmp(w, "infinity", 8))) {
		*v = s[0] == '-' ? -INFINITY : INFINITY;
		return true;
	}
	if (!sign && n == 3 && !strncasecmp(w, "nan", 3)) {
		*v = NAN;
		return true;
	}
	return false;
}

bool promtext__number(const char *s, size_t len, double *v)
{
	size_t i, whole, frac = 0;
	char buf[400];

	if (special(s, len, v))
		return true;
	i = len && (s[0] == '+' || s[0] == '-');
	whole = digits(s, i, len);
	i += whole;
	if (i < len && s[i] == '.') {
		frac = digits(s, i + 1, len);
		i += 1 + frac;
	}
	if (!whole && !frac)
		return false;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i += 1 + (i + 1 < len && (s[i + 1] == '+' || s[i + 1] == '-'));
		if (!digits(s, i, len))
			return false;
		i += digits(s, i, len);
	}
	/* what is left (0x10's x, 1_000's _) is no number; a literal past a double, none either */
	if (i != len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	*v = strtod(buf, NULL);
	return isfinite(*v);
}

/* A timestamp: an int64 of milliseconds, signed. */
static bool timestamp(const char *s, size_t len)
{
	size_t sign = len && (s[0] == '+' || s[0] == '-');
	char buf[24];

	if (len == sign || digits(s, sign, len) != len - sign || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	strtoll(buf, NULL, 10);
	return !errno;
}

static bool name_char(char c, bool first)
{
	return isalpha((unsigned char)c) || c == '_' || c == ':' ||
	       (!first && isdigit((unsigned char)c));
}

static const char *skip_blank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* Past a {name="value",...} set; NULL if it is not one that closes on this line. */
static const char *skip_labels(const char *p, const char *end)
{
	p = skip_blank(p + 1, end);
	while (p < end && *p != '}') {
		if (!name_char(*p, true) || *p == ':')
			return NULL;
		while (p < end && name_char(*p, false) && *p != ':')
			p++;
		p = skip_blank(p, end);
		if (p == end || *p != '=')
			return NULL;
		p = skip_blank(p + 1, end);
		if (p == end || *p != '"')
			return NULL;
		for (p++; p < end && *p != '"'; p++)
			if (*p == '\\' && ++p == end)
				return NULL;
		if (p == end)
			return NULL;
		p = skip_blank(p + 1, end);
		if (p < end && *p == ',')
			p = skip_blank(p + 1, end);
		else if (p < end && *p != '}')
			return NULL;
	}
	return p < end ? p + 1 : NULL;
}

/* The next blank-separated field: [*f, *f + *n); false at the line's end. */
static bool field(const char **p, const char *end, const char **f, size_t *n)
{
	const char *q;

	*p = skip_blank(*p, end);
	if (*p == end)
		return false;
	for (q = *p; q < end && *q != ' ' && *q != '\t'; q++)
		;
	*f = *p;
	*n = q - *p;
	*p = q;
	return true;
}

static const struct known *find_known(const char *name, size_t name_len)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i].name) == name_len && !memcmp(known[i].name, name, name_len))
			return &known[i];
	return NULL;
}

/* The value of a known sample (as served: text, n), checked; SP_SRV_OK or why not. */
static int add_sample(struct prom_scrape *out, const struct known *k, double v, const char *text,
		      size_t n)
{
	const char *wrong = promtext__check(k->family, v);
	struct prom_family *pf = &out->fam[k->family];

	/* a body mixing both servers' names is read as the first one's */
	if (out->server && out->server != k->server)
		return SP_SRV_OK;
	if (wrong && isnan(v) && promtext__is_gauge(k->family)) {
		out->nan_gauges++;
		return SP_SRV_OK;
	}
	if (wrong) {
		snprintf(out->why, sizeof(out->why), "%s = %.*s: %s", k->name,
			 n > 40 ? 40 : (int)n, text, wrong);
		return SP_SRV_BAD_VALUE;
	}
	out->server = k->server;
	pf->sum += v;
	pf->series++;
	if (!promtext__is_gauge(k->family) && pf->sum >= PROM_MAX_COUNT) {
		snprintf(out->why, sizeof(out->why), "%s summed over %u label sets reaches 2^53, "
			 "where a double no longer counts by one", k->name, pf->series);
		return SP_SRV_BAD_VALUE;
	}
	return SP_SRV_OK;
}

/* A broken line: skipped when of another family, the scrape's failure when of ours. */
static int bad_line(struct prom_scrape *out, const struct known *k, const char *line,
		    const char *end, const char *what)
{
	int n = end - line > 80 ? 80 : (int)(end - line);

	if (!k) {
		out->bad_lines++;
		return SP_SRV_OK;
	}
	snprintf(out->why, sizeof(out->why), "%s: %s in '%.*s%s'", k->name, what, n, line,
		 n < end - line ? "..." : "");
	for (char *c = out->why; *c; c++)
		if ((unsigned char)*c < ' ' || *c == 0x7f)
			*c = '?';
	return SP_SRV_BAD_SAMPLE;
}

/* One line, without its newline: name{labels} value [timestamp]. */
static int parse_line(struct prom_scrape *out, const char *p, const char *end)
{
	const char *line, *name, *f, *value;
	const struct known *k;
	size_t name_len, n, value_len;
	double v;

	p = skip_blank(p, end);
	if (p == end || *p == '#')
		return SP_SRV_OK;
	line = name = p;
	if (!name_char(*p, true))
		return bad_line(out, NULL, line, end, NULL);
	while (p < end && name_char(*p, false))
		p++;
	name_len = p - name;
	k = find_known(name, name_len);
	if (p < end && *p != ' ' && *p != '\t' && *p != '{')
		return bad_line(out, k, line, end, "a character no name holds");
	p = skip_blank(p, end);
	if (p < end && *p == '{' && !(p = skip_labels(p, end)))
		return bad_line(out, k, line, end, "a label set that does not close");
	if (!field(&p, end, &f, &n))
		return bad_line(out, k, line, end, "no value");
	if (!promtext__number(f, n, &v))
		return bad_line(out, k, line, end, "a value that is no Prometheus number");
	value = f;
	value_len = n;
	if (field(&p, end, &f, &n) && !timestamp(f, n))
		return bad_line(out, k, line, end, "a timestamp that is no whole number of ms");
	if (field(&p, end, &f, &n))
		return bad_line(out, k, line, end, "more fields than a value and a timestamp");
	out->samples++;
	return k ? add_sample(out, k, v, value, value_len) : SP_SRV_OK;
}

enum sp_srv_status promtext__parse(const char *body, size_t len, struct prom_scrape *out)
{
	const char *p = body, *end = body + len;
	int ret = SP_SRV_OK;

	memset(out, 0, sizeof(*out));
	while (p < end && isspace((unsigned char)*p))
		p++;
	if (p < end && *p == '<') {
		snprintf(out->why, sizeof(out->why), "the body is markup (HTML?), not samples");
		return SP_SRV_NOT_TEXT;
	}
	while (p < end && ret == SP_SRV_OK) {
		const char *nl = memchr(p, '\n', end - p);
		const char *line_end = nl ? nl : end;

		if (line_end > p && line_end[-1] == '\r')
			line_end--;
		ret = parse_line(out, p, line_end);
		p = nl ? nl + 1 : end;
	}
	if (ret != SP_SRV_OK)
		return ret;
	if (!out->samples && out->bad_lines) {
		snprintf(out->why, sizeof(out->why), "none of its %u lines is a sample",
			 out->bad_lines);
		return SP_SRV_NOT_TEXT;
	}
	for (int f = 1; f < SP_SRV_FAMILY_NR; f++)
		if (out->fam[f].series)
			return SP_SRV_OK;
	if (out->nan_gauges)
		snprintf(out->why, sizeof(out->why), "its speculative-decoding gauges are NaN "
			 "(no value yet), and no counter is served");
	else
		snprintf(out->why, sizeof(out->why), "none of the vLLM or SGLang "
			 "speculative-decoding families among the %u sample(s) served (SGLang needs "
			 "--enable-metrics)", out->samples);
	return SP_SRV_NO_FAMILY;
}
