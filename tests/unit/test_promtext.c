// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The Prometheus text format: known families summed over label sets, the rest skipped. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "promtext.h"

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

/* Broken lines are counted and skipped; a body cut inside a line reads up to it. */
static void test_bad_lines(void **state)
{
	static const char body[] = "vllm:generation_tokens_total{engine=\"0\" 5\n"
				   "vllm:generation_tokens_total 7x\n"
				   "vllm:generation_tokens_total\n"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vllm),
		cmocka_unit_test(test_sglang),
		cmocka_unit_test(test_not_text),
		cmocka_unit_test(test_bad_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
