// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The Prometheus text format (version 0.0.4), for a handful of known families. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
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

static bool name_char(char c, bool first)
{
	return isalpha((unsigned char)c) || c == '_' || c == ':' ||
	       (!first && isdigit((unsigned char)c));
}

/* Past a {label="value",...} set; NULL if it does not close on this line. */
static const char *skip_labels(const char *p, const char *end)
{
	bool quoted = false;

	for (p++; p < end; p++) {
		if (quoted && *p == '\\' && p + 1 < end)
			p++;
		else if (*p == '"')
			quoted = !quoted;
		else if (!quoted && *p == '}')
			return p + 1;
	}
	return NULL;
}

/* The value after the name and labels: a float, +Inf, -Inf or NaN. */
static bool read_value(const char *p, const char *end, double *v)
{
	char buf[64];
	size_t n = 0;
	char *stop;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (p < end && *p != ' ' && *p != '\t' && n < sizeof(buf) - 1)
		buf[n++] = *p++;
	buf[n] = '\0';
	if (!n)
		return false;
	*v = strtod(buf, &stop);
	return *stop == '\0';
}

static void add_sample(struct prom_scrape *out, const char *name, size_t name_len, double v)
{
	/* NaN or infinite: a gauge with nothing to say yet, never a count */
	if (!isfinite(v))
		return;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		const struct known *k = &known[i];

		if (strlen(k->name) != name_len || memcmp(k->name, name, name_len))
			continue;
		/* a body mixing both servers' names is read as the first one's */
		if (out->server && out->server != k->server)
			return;
		out->server = k->server;
		out->fam[k->family].sum += v;
		out->fam[k->family].series++;
		return;
	}
}

/* One line, without its newline. */
static void parse_line(struct prom_scrape *out, const char *p, const char *end)
{
	const char *name;
	size_t name_len;
	double v;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p == end || *p == '#')
		return;
	name = p;
	if (!name_char(*p, true)) {
		out->bad_lines++;
		return;
	}
	while (p < end && name_char(*p, false))
		p++;
	name_len = p - name;
	if (p < end && *p == '{' && !(p = skip_labels(p, end))) {
		out->bad_lines++;
		return;
	}
	if (p == end || (*p != ' ' && *p != '\t') || !read_value(p, end, &v)) {
		out->bad_lines++;
		return;
	}
	out->samples++;
	add_sample(out, name, name_len, v);
}

enum sp_srv_status promtext__parse(const char *body, size_t len, struct prom_scrape *out)
{
	const char *p = body, *end = body + len;

	memset(out, 0, sizeof(*out));
	while (p < end && isspace((unsigned char)*p))
		p++;
	if (p < end && *p == '<')
		return SP_SRV_NOT_TEXT;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *line_end = nl ? nl : end;

		if (line_end > p && line_end[-1] == '\r')
			parse_line(out, p, line_end - 1);
		else
			parse_line(out, p, line_end);
		p = nl ? nl + 1 : end;
	}
	if (!out->samples)
		return out->bad_lines ? SP_SRV_NOT_TEXT : SP_SRV_NO_FAMILY;
	for (int f = 1; f < SP_SRV_FAMILY_NR; f++)
		if (out->fam[f].series)
			return SP_SRV_OK;
	return SP_SRV_NO_FAMILY;
}
