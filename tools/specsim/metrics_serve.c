// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * --serve-metrics vllm|sglang PORT: rank 0 answers GET /metrics as that
 * server's Prometheus endpoint does. One request is decoded: each cycle is
 * one draft of k tokens, of which a drawn number (0..k) is accepted, and
 * accepted + 1 tokens are generated (the bonus token). Every draw goes into
 * the truth, so each value served follows from the cycles done before it.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "server.h"
#include "truth.h"

#define GAUGE_CYCLES 40		/* SGLang's gauges cover its last log interval of steps */
#define HUGE_BYTES (9u << 20)

static struct {
	pthread_mutex_t lock;
	pthread_t thread;
	bool running;
	volatile bool stop;
	int listen_fd;
	/* what a restart (FAULT_RESET) clears */
	unsigned long long drafts, draft_tokens, accepted, generated;
	int recent[GAUGE_CYCLES];	/* accepted of the last cycles, for the gauges */
	int nr_recent;
} ms = { .lock = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1 };

/* The n-th cycle's accepted tokens: a fixed function of n, so reruns agree. */
static int draw_accepted(int cycle)
{
	unsigned long long x = (unsigned long long)cycle * 0x9e3779b97f4a7c15ull + 0x5eed;

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x % (env.draft_k + 1);
}

void metrics_serve__cycle(int cycle)
{
	int accepted;

	if (!ms.running)
		return;
	accepted = draw_accepted(cycle);
	truth__line("\"accept_cycle\":%d,\"accepted\":%d,\"k\":%d", cycle, accepted, env.draft_k);
	pthread_mutex_lock(&ms.lock);
	if (env.serve_fault == FAULT_RESET && cycle == env.cycles / 2) {
		ms.drafts = ms.draft_tokens = ms.accepted = ms.generated = 0;
		ms.nr_recent = 0;
	}
	if (env.serve_fault != FAULT_FEW_DRAFTS || cycle % 2 == 0)
		ms.drafts++;
	ms.draft_tokens += env.draft_k;
	ms.accepted += accepted;
	ms.generated += accepted + 1;
	memmove(ms.recent + 1, ms.recent, (GAUGE_CYCLES - 1) * sizeof(ms.recent[0]));
	ms.recent[0] = accepted;
	if (ms.nr_recent < GAUGE_CYCLES)
		ms.nr_recent++;
	pthread_mutex_unlock(&ms.lock);
}

/* The body, in the format prometheus_client writes (counters with _total and _created). */
static int vllm_body(char *buf, size_t size)
{
	static const char lbl[] = "{engine=\"0\",model_name=\"specsim/eagle\"}";

	return snprintf(buf, size,
		"# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
		"# TYPE vllm:num_requests_running gauge\n"
		"vllm:num_requests_running%s 1.0\n"
		"# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
		"# TYPE vllm:generation_tokens_total counter\n"
		"vllm:generation_tokens_total%s %llu.0\n"
		"vllm:generation_tokens_created%s 1.7e+09\n"
		"# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
		"# TYPE vllm:spec_decode_num_drafts_total counter\n"
		"vllm:spec_decode_num_drafts_total%s %llu.0\n"
		"# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.\n"
		"# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
		"vllm:spec_decode_num_draft_tokens_total%s %llu.0\n"
		"# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.\n"
		"# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
		"vllm:spec_decode_num_accepted_tokens_total%s %llu.0\n",
		lbl, lbl, ms.generated, lbl, lbl, ms.drafts, lbl, ms.draft_tokens, lbl,
		ms.accepted);
}

static int sglang_body(char *buf, size_t size)
{
	static const char lbl[] = "{model_name=\"specsim/eagle\",tp_rank=\"0\",pp_rank=\"0\"}";
	double len = 0, rate = 0;

	for (int i = 0; i < ms.nr_recent; i++)
		len += ms.recent[i] + 1;
	if (ms.nr_recent) {
		len /= ms.nr_recent;
		rate = (len - 1) / env.draft_k;
	}
	return snprintf(buf, size,
		"# HELP sglang:spec_accept_length The average acceptance length of speculative "
		"decoding.\n"
		"# TYPE sglang:spec_accept_length gauge\n"
		"sglang:spec_accept_length%s %.17g\n"
		"# HELP sglang:spec_accept_rate The average acceptance rate of speculative "
		"decoding.\n"
		"# TYPE sglang:spec_accept_rate gauge\n"
		"sglang:spec_accept_rate%s %.17g\n"
		"# HELP sglang:generation_tokens_total Number of generation tokens processed.\n"
		"# TYPE sglang:generation_tokens_total counter\n"
		"sglang:generation_tokens_total{model_name=\"specsim/eagle\"} %llu.0\n",
		lbl, len, lbl, rate, ms.generated);
}

static void send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return;
		p += n;
		len -= n;
	}
}

static void answer(int fd, const char *status, const char *type, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head), "HTTP/1.0 %s\r\nContent-Type: %s\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, type, len);

	send_all(fd, head, n);
	send_all(fd, body, len);
}

static void answer_huge(int fd)
{
	static char line[64 << 10];
	char head[256];
	int n = snprintf(head, sizeof(head), "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n"
			 "Content-Length: %u\r\n\r\n", HUGE_BYTES);

	/* comment lines: what makes it too big is its size alone */
	memset(line, '#', sizeof(line));
	for (size_t i = 79; i < sizeof(line); i += 80)
		line[i] = '\n';
	send_all(fd, head, n);
	for (unsigned int sent = 0; sent < HUGE_BYTES && !ms.stop; sent += sizeof(line))
		send_all(fd, line, sizeof(line));
}

static void serve_one(int fd)
{
	static const char html[] = "<!DOCTYPE html><html><head><title>Login</title></head>"
				   "<body>Sign in to see metrics</body></html>\n";
	char req[8192], body[4096];
	size_t got = 0;
	int len;

	while (got < sizeof(req) - 1) {
		ssize_t n = recv(fd, req + got, sizeof(req) - 1 - got, 0);

		if (n <= 0)
			break;
		got += n;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	req[got] = '\0';
	if (strncmp(req, "GET /metrics ", 13)) {
		answer(fd, "404 Not Found", "text/plain", "not found\n", 10);
		return;
	}
	switch (env.serve_fault) {
	case FAULT_HTML:
		answer(fd, "200 OK", "text/html; charset=utf-8", html, strlen(html));
		return;
	case FAULT_HUGE:
		answer_huge(fd);
		return;
	case FAULT_SLOW:
		for (int i = 0; i < 20 && !ms.stop; i++)
			usleep(100000);
		break;
	default:
		break;
	}
	pthread_mutex_lock(&ms.lock);
	len = env.serve_format == SERVE_VLLM ? vllm_body(body, sizeof(body))
					     : sglang_body(body, sizeof(body));
	pthread_mutex_unlock(&ms.lock);
	answer(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body, len);
}

static void *serve_loop(void *arg)
{
	(void)arg;
	while (!ms.stop) {
		struct pollfd pfd = { .fd = ms.listen_fd, .events = POLLIN };
		int fd;

		if (poll(&pfd, 1, 100) != 1)
			continue;
		fd = accept4(ms.listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_one(fd);
		close(fd);
	}
	return NULL;
}

int metrics_serve__start(void)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(env.serve_port),
				    .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1;

	if (!env.serve_format || env.rank != 0)
		return 0;
	ms.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ms.listen_fd < 0 ||
	    setsockopt(ms.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ms.listen_fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(ms.listen_fd, 16)) {
		fprintf(stderr, "specsim-server: --serve-metrics port %d: %s\n", env.serve_port,
			strerror(errno));
		return -1;
	}
	if (pthread_create(&ms.thread, NULL, serve_loop, NULL)) {
		fprintf(stderr, "specsim-server: --serve-metrics: no thread\n");
		return -1;
	}
	ms.running = true;
	return 0;
}

void metrics_serve__stop(void)
{
	if (!ms.running)
		return;
	ms.stop = true;
	pthread_join(ms.thread, NULL);
	close(ms.listen_fd);
	ms.running = false;
}
