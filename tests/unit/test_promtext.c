// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The Prometheus text format: known families summed over label sets, the rest skipped. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "promtext.h"
#include "srvmetrics.h"

/* As vLLM's V1 engine serves it (prometheus_client): _total samples and _created beside them. */
static const char vllm_body[] =
	"# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
	"# TYPE vllm:spec_decode_num_drafts_total counter\n"
	"vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} 412.0\n"
	"vllm:spec_decode_num_drafts_created{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} 1.7e9\n"
	"# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
	"vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m\"} 1236.0\n"
	"# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
	"vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 530.0\n"
	"vllm:spec_decode_num_accepted_tokens_total{engine=\"1\",model_name=\"m\"} 20.0\n"
	"vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"0\"} 300.0\n"
	"# TYPE vllm:generation_tokens_total counter\n"
	"vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 962.0\n"
	"vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1.0\n"
	"vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"a \\\"q}\\\" b\"} 3.0\n";

static void test_vllm(void **state)
{
	struct prom_scrape s;

	(void)state;
	assert_int_equal(promtext__parse(vllm_body, strlen(vllm_body), &s), SP_SRV_OK);
	assert_int_equal(s.server, SP_SRV_VLLM);
	assert_true(promtext__value(&s, SP_SRV_DRAFTS) == 412.0);
	assert_true(promtext__value(&s, SP_SRV_DRAFT_TOKENS) == 1236.0);
	/* two engines summed; the per-position counter and _created left out */
	assert_true(promtext__value(&s, SP_SRV_ACCEPTED) == 550.0);
	assert_int_equal(s.fam[SP_SRV_ACCEPTED].series, 2);
	assert_true(promtext__value(&s, SP_SRV_GENERATED) == 962.0);
	assert_int_equal(s.fam[SP_SRV_ACCEPT_LENGTH].series, 0);
	assert_int_equal(s.samples, 9);
	assert_int_equal(s.bad_lines, 0);
}

static const char sglang_body[] =
	"# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.\r\n"
	"# TYPE sglang:spec_accept_length gauge\r\n"
	"sglang:spec_accept_length{model_name=\"m\",tp_rank=\"0\"} 2.5\r\n"
	"sglang:spec_accept_length{model_name=\"m\",tp_rank=\"1\"} 3.5\r\n"
	"sglang:spec_accept_rate{model_name=\"m\",tp_rank=\"0\"} 0.5\r\n"
	"sglang:generation_tokens_total{model_name=\"m\"} 1.5e3 1712000000000\r\n"
	"sglang:gen_throughput{model_name=\"m\"} NaN\r\n";

static void test_sglang(void **state)
{
	struct prom_scrape s;

	(void)state;
	assert_int_equal(promtext__parse(sglang_body, strlen(sglang_body), &s), SP_SRV_OK);
	assert_int_equal(s.server, SP_SRV_SGLANG);
	/* a gauge of several schedulers is their mean, a counter their sum */
	assert_true(promtext__value(&s, SP_SRV_ACCEPT_LENGTH) == 3.0);
	assert_true(promtext__value(&s, SP_SRV_ACCEPT_RATE) == 0.5);
	assert_true(promtext__value(&s, SP_SRV_GENERATED) == 1500.0);
	assert_int_equal(s.fam[SP_SRV_DRAFTS].series, 0);
}

static void test_not_text(void **state)
{
	static const char html[] = "\n  <!DOCTYPE html><html><body>vllm:generation_tokens_total 1"
				   "</body></html>";
	static const char junk[] = "{\"error\": \"not found\"}\n";
	static const char none[] = "# TYPE process_cpu_seconds_total counter\n"
				   "process_cpu_seconds_total 1.5\n";
	static const char nan_only[] = "sglang:spec_accept_length{a=\"b\"} NaN\n";
	struct prom_scrape s;

	(void)state;
	assert_int_equal(promtext__parse(html, strlen(html), &s), SP_SRV_NOT_TEXT);
	assert_int_equal(promtext__parse(junk, strlen(junk), &s), SP_SRV_NOT_TEXT);
	assert_int_equal(promtext__parse(none, strlen(none), &s), SP_SRV_NO_FAMILY);
	assert_int_equal(promtext__parse("", 0, &s), SP_SRV_NO_FAMILY);
	assert_int_equal(promtext__parse(nan_only, strlen(nan_only), &s), SP_SRV_NO_FAMILY);
}

/* Broken lines of other families are counted and skipped; a body cut inside a line reads up to it. */
static void test_bad_lines(void **state)
{
	static const char body[] = "vllm:num_requests_running{engine=\"0\" 5\n"
				   "vllm:num_requests_running 7x\n"
				   "vllm:num_requests_running\n"
				   "9bad 1\n"
				   "vllm:generation_tokens_total{engine=\"0\"} 40\n"
				   "vllm:spec_decode_num_drafts_total 1";
	struct prom_scrape s;

	(void)state;
	/* the last line is cut before its value ends: read as it stands */
	assert_int_equal(promtext__parse(body, strlen(body), &s), SP_SRV_OK);
	assert_int_equal(s.bad_lines, 4);
	assert_true(promtext__value(&s, SP_SRV_GENERATED) == 40.0);
	assert_true(promtext__value(&s, SP_SRV_DRAFTS) == 1.0);
	/* not NUL-terminated: len is the end */
	assert_int_equal(promtext__parse(body, 10, &s), SP_SRV_NOT_TEXT);
}

/* Go's ParseFloat as Prometheus calls it: no hex, no '_', no range error. */
static void test_numbers(void **state)
{
	static const struct { const char *text; double v; } good[] = {
		{ "1", 1 }, { "-1", -1 }, { "+1.5", 1.5 }, { ".5", 0.5 }, { "5.", 5 },
		{ "1e3", 1000 }, { "1E-3", 0.001 }, { "007", 7 }, { "1.5e+2", 150 },
		{ "+Inf", INFINITY }, { "-Inf", -INFINITY }, { "inf", INFINITY },
		{ "Infinity", INFINITY }, { "-infinity", -INFINITY },
	};
	static const char *const bad[] = {
		"0x10", "0x1p4", "1_000", "", ".", "e5", "1e", "1e+", "+NaN", "-nan", "1.2.3",
		"1e400", "-1e400", "infin", " 1", "1 ", "nan(1)", "--1", "1f", "0b1", "١",
	};
	double v;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_true(promtext__number(good[i].text, strlen(good[i].text), &v));
		assert_true(v == good[i].v);
	}
	assert_true(promtext__number("NaN", 3, &v) && isnan(v));
	assert_true(promtext__number("nan", 3, &v) && isnan(v));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (promtext__number(bad[i], strlen(bad[i]), &v))
			fail_msg("'%s' read as a number", bad[i]);
}

/* parse_one: the status of a vLLM body with one line changed, and why in s. */
static enum sp_srv_status parse_one(const char *line, struct prom_scrape *s)
{
	char body[512];

	snprintf(body, sizeof(body), "vllm:spec_decode_num_drafts_total{engine=\"0\"} 10\n"
		 "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\"} 16\n%s\n", line);
	return promtext__parse(body, strlen(body), s);
}

/* A counter that is no count fails the scrape, named with the value as served. */
static void test_bad_counters(void **state)
{
	static const char *const bad[] = { "-5", "NaN", "+Inf", "-Inf", "1e308", "2.5",
					   "9007199254740993" };
	char line[128], want[128];
	struct prom_scrape s;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "vllm:generation_tokens_total{engine=\"1\"} %s", bad[i]);
		assert_int_equal(parse_one(line, &s), SP_SRV_BAD_VALUE);
		snprintf(want, sizeof(want), "vllm:generation_tokens_total = %s: ", bad[i]);
		if (strncmp(s.why, want, strlen(want)))
			fail_msg("%s: why '%s'", bad[i], s.why);
	}
	assert_int_equal(parse_one("vllm:generation_tokens_total -5", &s), SP_SRV_BAD_VALUE);
	assert_non_null(strstr(s.why, "below 0"));
	/* each series fits, their sum does not */
	assert_int_equal(parse_one("vllm:generation_tokens_total{e=\"0\"} 9007199254740990\n"
				   "vllm:generation_tokens_total{e=\"1\"} 2", &s),
			 SP_SRV_BAD_VALUE);
	assert_non_null(strstr(s.why, "2^53"));
	assert_int_equal(parse_one("vllm:generation_tokens_total 9007199254740991", &s),
			 SP_SRV_OK);
	assert_true(promtext__value(&s, SP_SRV_GENERATED) == 9007199254740991.0);
	assert_int_equal(parse_one("vllm:generation_tokens_total 0", &s), SP_SRV_OK);
}

/* A known family's line that is not name{labels} value [timestamp] fails the scrape. */
static void test_bad_samples(void **state)
{
	static const struct { const char *line, *why; } bad[] = {
		{ "vllm:generation_tokens_total 1 2 3 4", "more fields" },
		{ "vllm:generation_tokens_total 0x10", "no Prometheus number" },
		{ "vllm:generation_tokens_total{engine=\"0\" 5", "does not close" },
		{ "vllm:generation_tokens_total{engine=0} 5", "does not close" },
		{ "vllm:generation_tokens_total{engine=\"0\"}", "no value" },
		{ "vllm:generation_tokens_total 5 1.5", "timestamp" },
		{ "vllm:generation_tokens_total 5 99999999999999999999", "timestamp" },
		{ "vllm:generation_tokens_total=5", "no name holds" },
		{ "vllm:generation_tokens_total 1_000", "no Prometheus number" },
	};
	struct prom_scrape s;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse_one(bad[i].line, &s), SP_SRV_BAD_SAMPLE);
		if (!strstr(s.why, bad[i].why) || strncmp(s.why, "vllm:generation_tokens_total: ", 30))
			fail_msg("'%s': why '%s'", bad[i].line, s.why);
	}
	/* the format's liberties: a timestamp, blanks, a trailing comma, escapes */
	assert_int_equal(parse_one("vllm:generation_tokens_total 5 -1712000000000", &s), SP_SRV_OK);
	assert_int_equal(parse_one("  vllm:generation_tokens_total { a = \"x\\\"}\" , } \t7  ", &s),
			 SP_SRV_OK);
	assert_true(promtext__value(&s, SP_SRV_GENERATED) == 7.0);
	assert_true(promtext__value(&s, SP_SRV_ACCEPTED) == 16.0);
}

/* Gauges: NaN is no value yet, not an error; an infinite one or a rate past 1 is. */
static void test_gauges(void **state)
{
	static const char nan_only[] = "sglang:spec_accept_length{a=\"b\"} NaN\n"
				       "sglang:spec_accept_rate NaN\n";
	static const char nan_and_count[] = "sglang:spec_accept_length NaN\n"
					    "sglang:generation_tokens_total 12\n";
	static const char none[] = "process_cpu_seconds_total 1.5\n";
	struct prom_scrape s;

	(void)state;
	assert_int_equal(promtext__parse(nan_only, strlen(nan_only), &s), SP_SRV_NO_FAMILY);
	assert_non_null(strstr(s.why, "NaN"));
	assert_null(strstr(s.why, "none of"));
	assert_int_equal(promtext__parse(nan_and_count, strlen(nan_and_count), &s), SP_SRV_OK);
	assert_int_equal(s.fam[SP_SRV_ACCEPT_LENGTH].series, 0);
	assert_int_equal(s.nan_gauges, 1);
	assert_int_equal(promtext__parse(none, strlen(none), &s), SP_SRV_NO_FAMILY);
	assert_non_null(strstr(s.why, "none of the vLLM or SGLang"));
	assert_int_equal(parse_one("sglang:spec_accept_length +Inf", &s), SP_SRV_OK);
	assert_int_equal(promtext__parse("sglang:spec_accept_length +Inf\n", 31, &s),
			 SP_SRV_BAD_VALUE);
	assert_int_equal(promtext__parse("sglang:spec_accept_rate 1.5\n", 28, &s),
			 SP_SRV_BAD_VALUE);
	assert_int_equal(promtext__parse("sglang:spec_accept_rate -0.5\n", 29, &s),
			 SP_SRV_BAD_VALUE);
	assert_null(promtext__check(SP_SRV_ACCEPT_LENGTH, 2.5));
	assert_non_null(promtext__check(SP_SRV_DRAFTS, -1));
}

static void feed(struct srvstats *st, __u32 scrape, __u64 ts, enum sp_srv_family f, double v)
{
	struct sp_srvmetric_rec r = { .type = SP_REC_SRVMETRIC, .size = sizeof(r), .tgid = 7,
				      .ts = ts, .value = v, .scrape = scrape, .rank = -1,
				      .family = f, .server = SP_SRV_VLLM, .series = 1 };

	assert_int_equal(srvstats__record(st, &r, sizeof(r)), 1);
}

/* A recording's samples are checked again: a damaged one fails its whole scrape. */
static void test_recorded_values(void **state)
{
	struct srvstats *st = srvstats__new();
	struct srv_figures f;

	(void)state;
	assert_non_null(st);
	feed(st, 1, 1000000000, SP_SRV_GENERATED, 16);
	feed(st, 1, 1000000000, SP_SRV_DRAFTS, 4);
	/* scrape 2: drafts fine, then a negative count: neither is kept */
	feed(st, 2, 2000000000, SP_SRV_DRAFTS, 100);
	feed(st, 2, 2000000000, SP_SRV_GENERATED, -5);
	feed(st, 2, 2000000000, SP_SRV_ACCEPTED, 3);
	feed(st, 3, 3000000000, SP_SRV_GENERATED, NAN);
	feed(st, 4, 4000000000, SP_SRV_GENERATED, 36);
	feed(st, 4, 4000000000, SP_SRV_DRAFTS, 8);
	srvstats__whole(st, &f);
	assert_true(f.have);
	assert_int_equal(f.scrapes, 2);
	assert_int_equal(f.failed, 2);
	assert_int_equal(f.failed_by[SP_SRV_BAD_VALUE], 2);
	assert_int_equal(f.resets, 0);
	assert_true(f.delta[SP_SRV_GENERATED] == 20.0);
	assert_true(f.delta[SP_SRV_DRAFTS] == 4.0);
	assert_false(f.has[SP_SRV_ACCEPTED]);
	assert_true(f.tokens_per_s == 20.0 / 3);
	srvstats__free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vllm),
		cmocka_unit_test(test_sglang),
		cmocka_unit_test(test_not_text),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_bad_counters),
		cmocka_unit_test(test_bad_samples),
		cmocka_unit_test(test_gauges),
		cmocka_unit_test(test_recorded_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
