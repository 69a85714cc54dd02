// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* --metrics: the listen addresses, the HTTP answers, and the Prometheus text of top's totals. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <cmocka.h>
#include "catalog.h"
#include "httpserve.h"
#include "metrics_view.h"

static void test_listen_specs(void **state)
{
	static const struct {
		const char *spec, *prefix;
		bool loopback;
	} good[] = {
		{ "0", "127.0.0.1:", true },	    { "127.0.0.1:0", "127.0.0.1:", true },
		{ "localhost:0", "127.0.0.1:", true }, { "0.0.0.0:0", "0.0.0.0:", false },
		{ "[::1]:0", "[::1]:", true },
	};
	static const char *const bad[] = {
		"", "abc", ":9400", "127.0.0.1:65536", "127.0.0.1:-1", "[::1]", "[::1]9400",
		"example.com:9400", "1.2.3.4.5:1", "127.0.0.1:", "127.0.0.1:12x",
	};
	char err[256];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct http_server *s = http_server__listen(good[i].spec, err, sizeof(err));

		assert_non_null(s);
		assert_memory_equal(http_server__address(s), good[i].prefix,
				    strlen(good[i].prefix));
		assert_true(http_server__loopback(s) == good[i].loopback);
		http_server__free(s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_null(http_server__listen(bad[i], err, sizeof(err)));
		assert_non_null(strstr(err, "no address to listen on"));
	}
}

static void test_port_in_use(void **state)
{
	char err[256];
	struct http_server *a = http_server__listen("127.0.0.1:0", err, sizeof(err));

	assert_non_null(a);
	assert_null(http_server__listen(http_server__address(a), err, sizeof(err)));
	assert_non_null(strstr(err, "in use"));
	assert_null(strchr(err, '\n'));
	http_server__free(a);
}

/* One request to the server at addr ("127.0.0.1:PORT"); the whole answer, NUL-terminated. */
static char *ask(const char *addr, const char *request)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	char *got = calloc(1, 65536);
	size_t len = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	in.sin_port = htons(atoi(strchr(addr, ':') + 1));
	inet_pton(AF_INET, "127.0.0.1", &in.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&in, sizeof(in)), 0);
	assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
	while (len < 65535 && (n = read(fd, got + len, 65535 - len)) > 0)
		len += n;
	close(fd);
	return got;
}

static void test_serves_document(void **state)
{
	char err[256], *got;
	struct http_server *s = http_server__listen("0", err, sizeof(err));

	assert_non_null(s);
	assert_int_equal(http_server__publish(s, "a 1\n", 4), 0);
	assert_int_equal(http_server__start(s, "/metrics", METRICS_CONTENT_TYPE), 0);
	got = ask(http_server__address(s), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_non_null(strstr(got, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(got, "Content-Type: text/plain; version=0.0.4"));
	assert_non_null(strstr(got, "Content-Length: 4\r\n"));
	assert_string_equal(strstr(got, "\r\n\r\n"), "\r\n\r\na 1\n");
	free(got);
	assert_int_equal(http_server__publish(s, "b 22\n", 5), 0);
	got = ask(http_server__address(s), "GET /metrics?x=1 HTTP/1.0\n\n");
	assert_string_equal(strstr(got, "\r\n\r\n"), "\r\n\r\nb 22\n");
	free(got);
	got = ask(http_server__address(s), "HEAD /metrics HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(got, "Content-Length: 5\r\n"));
	assert_string_equal(strstr(got, "\r\n\r\n"), "\r\n\r\n");
	free(got);
	got = ask(http_server__address(s), "DELETE /metrics HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(got, " 405 "));
	free(got);
	got = ask(http_server__address(s), "GET /other HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(got, " 404 "));
	free(got);
	http_server__free(s);
}

/* A connection to addr whose blocking reads give up after a generous minute. */
static int connect_to(const char *addr)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct timeval minute = { 60, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	in.sin_port = htons(atoi(strchr(addr, ':') + 1));
	inet_pton(AF_INET, "127.0.0.1", &in.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&in, sizeof(in)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &minute, sizeof(minute));
	return fd;
}

/* Waits until the server closes fd, unanswered: true. */
static bool closed_unanswered(int fd)
{
	char c;

	return recv(fd, &c, 1, 0) == 0;
}

static bool still_open(int fd)
{
	char c;

	return recv(fd, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

/* At the cap a new client drops the oldest; the rest stay until their deadline (a minute). */
static void test_cap_drops_oldest(void **state)
{
	char err[256], *got;
	struct http_server *s = http_server__listen("0", err, sizeof(err));
	int fds[5];

	assert_non_null(s);
	http_server__set_limits(s, 4, 60000);
	assert_int_equal(http_server__publish(s, "a 1\n", 4), 0);
	assert_int_equal(http_server__start(s, "/metrics", METRICS_CONTENT_TYPE), 0);
	for (int i = 0; i < 5; i++)
		fds[i] = connect_to(http_server__address(s));
	assert_true(closed_unanswered(fds[0]));
	for (int i = 1; i < 5; i++)
		assert_true(still_open(fds[i]));
	got = ask(http_server__address(s), "GET /metrics HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(got, "HTTP/1.1 200 OK\r\n"));
	free(got);
	assert_true(closed_unanswered(fds[1]));
	for (int i = 2; i < 5; i++)
		assert_true(still_open(fds[i]));
	for (int i = 0; i < 5; i++)
		close(fds[i]);
	http_server__free(s);
}

/* A request head not whole by the deadline: the connection closes without an answer. */
static void test_slow_request_closed(void **state)
{
	char err[256];
	struct http_server *s = http_server__listen("0", err, sizeof(err));
	int fd;

	assert_non_null(s);
	http_server__set_limits(s, 0, 100);
	assert_int_equal(http_server__start(s, "/metrics", METRICS_CONTENT_TYPE), 0);
	fd = connect_to(http_server__address(s));
	assert_int_equal(write(fd, "GET /metr", 9), 9);
	assert_true(closed_unanswered(fd));
	close(fd);
	http_server__free(s);
}

static char *render(const struct metrics_input *in)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	assert_int_equal(metrics__render(out, in), 0);
	fclose(out);
	return text;
}

static void test_render_totals(void **state)
{
	static struct top_totals t;
	__u64 calls[512] = { 0 };
	struct metrics_input in = { &t, 1.5, false, "9.9" };
	char *text;

	assert_true(catalog_len <= 512);
	t.nr_loops = 1;
	t.loops[0] = (struct top_loop_total){ .tgid = 10, .tid = 11, .rank = 1, .cycles = 3,
					      .cycle_ns = 6000000, .blocked_ns = 500000000 };
	for (int b = 0; b < TOP_CYCLE_BUCKETS; b++)
		t.loops[0].bucket[b] = top_cycle_bucket_s[b] >= 0.002 ? 3 : 0;
	t.nr_procs = 1;
	calls[0] = 7;
	t.procs[0] = (struct top_proc_total){ .tgid = 10, .rank = -1, .calls = calls,
					      .overhead_ratio = -1 };
	t.drops_call = 2;
	text = render(&in);
	assert_non_null(strstr(text, "# TYPE specprobe_cycle_seconds histogram\n"));
	assert_non_null(strstr(text, "specprobe_cycle_seconds_bucket{pid=\"10\",rank=\"1\","
				     "tid=\"11\",le=\"0.002\"} 3\n"));
	assert_non_null(strstr(text, "le=\"+Inf\"} 3\n"));
	assert_non_null(strstr(text, "specprobe_cycle_seconds_count{pid=\"10\",rank=\"1\","
				     "tid=\"11\"} 3\n"));
	assert_non_null(strstr(text, "specprobe_blocked_seconds_total{pid=\"10\",rank=\"1\","
				     "tid=\"11\"} 0.500000000\n"));
	assert_non_null(strstr(text, "specprobe_calls_total{pid=\"10\",rank=\"\",entry=\""));
	assert_non_null(strstr(text, "specprobe_dropped_records_total{record=\"call\"} 2\n"));
	assert_non_null(strstr(text, "specprobe_tracing 0\n"));
	assert_non_null(strstr(text, "# TYPE specprobe_calls_total counter\n"));
	assert_null(strstr(text, "specprobe_probe_overhead_ratio{"));
	free(text);
	in.totals = NULL;
	text = render(&in);
	assert_non_null(strstr(text, "specprobe_records_total 0\n"));
	assert_null(strstr(text, "specprobe_cycles_total"));
	free(text);
}

/* --gpu: GPU phase and idle seconds, summed over the cycles with GPU figures. */
static void test_render_gpu(void **state)
{
	static struct top_totals t;
	struct metrics_input in = { &t, 0, true, "9.9" };
	char *text;

	t.nr_loops = 1;
	t.loops[0] = (struct top_loop_total){ .tgid = 10, .tid = 11, .rank = -1, .cycles = 3 };
	text = render(&in);
	assert_null(strstr(text, "specprobe_gpu_"));
	free(text);
	t.loops[0].gpu_cycles = 2;
	t.loops[0].gpu_phase_ns[PHASE_DRAFT] = 5000000;
	t.loops[0].gpu_phase_ns[PHASE_VERIFY] = 13000000;
	t.loops[0].gpu_idle_ns = 1500000000;
	text = render(&in);
	assert_non_null(strstr(text,
		"# TYPE specprobe_gpu_phase_seconds_total counter\n"
		"specprobe_gpu_phase_seconds_total{pid=\"10\",rank=\"\",tid=\"11\","
		"phase=\"draft\"} 0.005000000\n"
		"specprobe_gpu_phase_seconds_total{pid=\"10\",rank=\"\",tid=\"11\","
		"phase=\"verify\"} 0.013000000\n"
		"specprobe_gpu_phase_seconds_total{pid=\"10\",rank=\"\",tid=\"11\","
		"phase=\"accept\"} 0.000000000\n"));
	assert_non_null(strstr(text,
		"# TYPE specprobe_gpu_idle_seconds_total counter\n"
		"specprobe_gpu_idle_seconds_total{pid=\"10\",rank=\"\",tid=\"11\"} 1.500000000\n"));
	assert_non_null(strstr(text,
		"# TYPE specprobe_gpu_cycles_total counter\n"
		"specprobe_gpu_cycles_total{pid=\"10\",rank=\"\",tid=\"11\"} 2\n"));
	free(text);
}

/* --server-metrics: the server's series only when samples came, beside ours under its pid. */
static void test_render_server(void **state)
{
	static struct top_totals t;
	struct metrics_input in = { &t, 0, true, "9.9" };
	char *text;

	text = render(&in);
	assert_null(strstr(text, "specprobe_server_"));
	free(text);
	t.server = (struct top_server_total){ .any = true, .tgid = 10, .rank = 1,
					      .server = SP_SRV_VLLM, .scrapes = 5, .failed = 1 };
	text = render(&in);
	assert_non_null(strstr(text, "specprobe_server_scrapes_total{pid=\"10\",rank=\"1\","
				     "server=\"vllm\"} 5\n"));
	assert_non_null(strstr(text, "specprobe_server_scrape_failures_total{pid=\"10\","
				     "rank=\"1\",server=\"vllm\"} 1\n"));
	/* counters and gauges only once the scrapes gave them */
	assert_null(strstr(text, "specprobe_server_generated_tokens_total"));
	assert_null(strstr(text, "specprobe_server_tokens_per_second"));
	free(text);
	t.server.has[SP_SRV_GENERATED] = t.server.has[SP_SRV_DRAFTS] = true;
	t.server.total[SP_SRV_GENERATED] = 3011;
	t.server.total[SP_SRV_DRAFTS] = 1162;
	t.server.recent = true;
	t.server.tokens_per_s = 971.25;
	t.server.accept_length = 2.5;
	text = render(&in);
	assert_non_null(strstr(text,
		"# TYPE specprobe_server_generated_tokens_total counter\n"
		"specprobe_server_generated_tokens_total{pid=\"10\",rank=\"1\",server=\"vllm\"} "
		"3011\n"));
	assert_non_null(strstr(text, "specprobe_server_drafts_total{pid=\"10\",rank=\"1\","
				     "server=\"vllm\"} 1162\n"));
	assert_null(strstr(text, "specprobe_server_accepted_tokens_total"));
	assert_non_null(strstr(text,
		"# TYPE specprobe_server_tokens_per_second gauge\n"
		"specprobe_server_tokens_per_second{pid=\"10\",rank=\"1\",server=\"vllm\"} "
		"971.25\n"));
	assert_non_null(strstr(text, "specprobe_server_accept_length{pid=\"10\",rank=\"1\","
				     "server=\"vllm\"} 2.5\n"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen_specs),
		cmocka_unit_test(test_port_in_use),
		cmocka_unit_test(test_serves_document),
		cmocka_unit_test(test_cap_drops_oldest),
		cmocka_unit_test(test_slow_request_closed),
		cmocka_unit_test(test_render_totals),
		cmocka_unit_test(test_render_gpu),
		cmocka_unit_test(test_render_server),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
