// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* --server-metrics: one GET of the server's /metrics per interval, on its own thread. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "log.h"
#include "promtext.h"
#include "servermetrics.h"

#define MAX_QUEUED 4096		/* samples held while the recorder does not poll */

struct server_metrics {
	struct srvm_url url;
	__u64 interval_ns;
	int timeout_ms;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	struct sp_srvmetric_rec *queue;	/* under lock */
	int nr_queued;
	bool told[SP_SRV_STATUS_NR];	/* the poller's: each trouble said once */
	bool answered;			/* a good scrape came */
};

static bool is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (!strcasecmp(host, "localhost"))
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

static int url_host_port(const char *p, const char **rest, struct srvm_url *out)
{
	const char *end;
	size_t n;

	if (*p == '[') {
		end = strchr(p, ']');
		if (!end)
			return -EINVAL;
		n = end - p - 1;
		p++;
		end++;
	} else {
		end = p + strcspn(p, ":/");
		n = end - p;
	}
	if (!n || n >= sizeof(out->host))
		return -EINVAL;
	memcpy(out->host, p, n);
	out->host[n] = '\0';
	strcpy(out->port, "80");
	if (*end == ':') {
		unsigned long port;
		char *stop;

		errno = 0;
		port = strtoul(end + 1, &stop, 10);
		if (errno || stop == end + 1 || !port || port > 65535 || (*stop && *stop != '/'))
			return -EINVAL;
		snprintf(out->port, sizeof(out->port), "%lu", port);
		end = stop;
	} else if (*end && *end != '/') {
		return -EINVAL;
	}
	*rest = end;
	return 0;
}

/*
 * The host's address, from its numbers (localhost: 127.0.0.1): no resolver,
 * which a static binary could not carry. ss NULL: only whether it is one.
 */
static bool numeric_addr(const struct srvm_url *url, struct sockaddr_storage *ss,
			 socklen_t *len)
{
	const char *host = strcmp(url->host, "localhost") ? url->host : "127.0.0.1";
	struct sockaddr_storage own;
	struct sockaddr_in *v4;
	struct sockaddr_in6 *v6;

	ss = ss ? ss : &own;
	memset(ss, 0, sizeof(*ss));
	v4 = (struct sockaddr_in *)ss;
	v6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(atoi(url->port));
		if (len)
			*len = sizeof(*v4);
		return true;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(atoi(url->port));
		if (len)
			*len = sizeof(*v6);
		return true;
	}
	return false;
}

int srvm__parse_url(const char *url, struct srvm_url *out, char *err, size_t err_sz)
{
	const char *path;

	memset(out, 0, sizeof(*out));
	if (strncmp(url, "http://", 7) || url_host_port(url + 7, &path, out)) {
		snprintf(err, err_sz, "--server-metrics takes http://HOST[:PORT][/PATH], e.g. "
			 "http://127.0.0.1:8000/metrics, not '%s'", url);
		return -EINVAL;
	}
	for (const char *c = path; *c; c++)
		if (*c <= ' ' || *c == 0x7f) {
			snprintf(err, err_sz, "--server-metrics: the path of '%s' holds a space "
				 "or control character", url);
			return -EINVAL;
		}
	if (strlen(path) >= sizeof(out->path)) {
		snprintf(err, err_sz, "--server-metrics: the path of '%s' is too long", url);
		return -EINVAL;
	}
	strcpy(out->path, *path ? path : "/metrics");
	out->loopback = is_loopback(out->host);
	if (!numeric_addr(out, NULL, NULL)) {
		snprintf(err, err_sz, "--server-metrics: '%s' names its host by a name: give its "
			 "address (127.0.0.1, [::1], or localhost)", url);
		return -EINVAL;
	}
	return 0;
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int ms_left(__u64 deadline)
{
	__u64 now = mono_ns();

	return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

/* A non-blocking connect that gives up at the deadline: the fd, or -1 (SP_SRV_*: *why). */
static int connect_by(const struct srvm_url *url, __u64 deadline, int *why)
{
	struct sockaddr_storage ss;
	socklen_t addr_len, len;
	struct pollfd pfd;
	int fd, soerr = 0;

	*why = SP_SRV_DOWN;
	if (!numeric_addr(url, &ss, &addr_len))
		return -1;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (!connect(fd, (struct sockaddr *)&ss, addr_len))
		return fd;
	pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
	len = sizeof(soerr);
	if (errno == EINPROGRESS && poll(&pfd, 1, ms_left(deadline)) == 1 &&
	    !getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) && !soerr)
		return fd;
	if (errno == EINPROGRESS && !pfd.revents)
		*why = SP_SRV_SLOW;
	close(fd);
	return -1;
}

static int send_all(int fd, const char *buf, size_t len, __u64 deadline)
{
	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n;

		if (poll(&pfd, 1, ms_left(deadline)) != 1)
			return SP_SRV_SLOW;
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return SP_SRV_DOWN;
		if (n > 0) {
			buf += n;
			len -= n;
		}
	}
	return SP_SRV_OK;
}

/* The whole answer into *buf (NUL-terminated); SP_SRV_OK or why not. */
static int read_all(int fd, __u64 deadline, char **buf, size_t *len)
{
	size_t cap = 64 << 10, limit = SRVM_MAX_BODY + (64 << 10);
	char *b = malloc(cap);

	*len = 0;
	if (!b)
		return SP_SRV_DOWN;
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (*len + 1 >= cap) {
			char *grown = cap >= limit ? NULL : realloc(b, cap * 2);

			if (!grown) {
				free(b);
				return SP_SRV_TOO_BIG;
			}
			b = grown;
			cap *= 2;
		}
		if (poll(&pfd, 1, ms_left(deadline)) != 1) {
			free(b);
			return SP_SRV_SLOW;
		}
		n = recv(fd, b + *len, cap - 1 - *len, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0) {
			free(b);
			return SP_SRV_DOWN;
		}
		if (!n)
			break;
		*len += n;
	}
	b[*len] = '\0';
	*buf = b;
	return SP_SRV_OK;
}

/* Status line and headers: the body's start, or why the answer is not one to read. */
static int check_answer(const char *buf, size_t len, const char **body, double *http_status)
{
	const char *hdr_end = strstr(buf, "\r\n\r\n");
	const char *ctype;
	int status;

	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || !hdr_end)
		return SP_SRV_NOT_TEXT;
	*http_status = status;
	if (status != 200)
		return SP_SRV_HTTP;
	ctype = strcasestr(buf, "\r\ncontent-type:");
	if (ctype && ctype < hdr_end) {
		const char *v = ctype + 15;

		v += strspn(v, " \t");
		if (!strncasecmp(v, "text/html", 9) || !strncasecmp(v, "application/json", 16))
			return SP_SRV_NOT_TEXT;
	}
	*body = hdr_end + 4;
	if (len - (*body - buf) > SRVM_MAX_BODY)
		return SP_SRV_TOO_BIG;
	return SP_SRV_OK;
}

static int fetch(const struct srvm_url *url, int timeout_ms, struct prom_scrape *out,
		 double *http_status)
{
	__u64 deadline = mono_ns() + timeout_ms * 1000000ull;
	char req[1536], *buf = NULL;
	const char *body;
	size_t len;
	int fd, why, n;

	fd = connect_by(url, deadline, &why);
	if (fd < 0)
		return why;
	n = snprintf(req, sizeof(req),
		     "GET %s HTTP/1.0\r\nHost: %s%s%s:%s\r\nAccept: text/plain\r\n"
		     "User-Agent: specprobe\r\nConnection: close\r\n\r\n", url->path,
		     strchr(url->host, ':') ? "[" : "", url->host,
		     strchr(url->host, ':') ? "]" : "", url->port);
	why = send_all(fd, req, n, deadline);
	if (why == SP_SRV_OK)
		why = read_all(fd, deadline, &buf, &len);
	close(fd);
	if (why == SP_SRV_OK)
		why = check_answer(buf, len, &body, http_status);
	if (why == SP_SRV_OK)
		why = promtext__parse(body, len - (body - buf), out);
	free(buf);
	return why;
}

int server_metrics__scrape(const struct srvm_url *url, int timeout_ms, __u32 scrape,
			   struct sp_srvmetric_rec *recs)
{
	struct prom_scrape s;
	double http_status = 0;
	__u64 ts;
	int status = fetch(url, timeout_ms, &s, &http_status), n = 0;

	ts = mono_ns();
	if (status != SP_SRV_OK) {
		recs[0] = (struct sp_srvmetric_rec){
			.type = SP_REC_SRVMETRIC, .size = sizeof(recs[0]), .ts = ts, .scrape = scrape,
			.rank = -1, .status = status, .value = status == SP_SRV_HTTP ? http_status : 0,
		};
		return 1;
	}
	for (int f = 1; f < SP_SRV_FAMILY_NR; f++) {
		if (!s.fam[f].series)
			continue;
		recs[n++] = (struct sp_srvmetric_rec){
			.type = SP_REC_SRVMETRIC, .size = sizeof(recs[0]), .ts = ts, .scrape = scrape,
			.rank = -1, .family = f, .server = s.server,
			.value = promtext__value(&s, f), .series = s.fam[f].series,
		};
	}
	return n;
}

static void tell(struct server_metrics *s, const struct sp_srvmetric_rec *r)
{
	static const char *const what[SP_SRV_STATUS_NR] = {
		[SP_SRV_DOWN] = "no connection (is the server up, and serving metrics there?)",
		[SP_SRV_SLOW] = "no whole answer within the timeout",
		[SP_SRV_NOT_TEXT] = "the answer is not the Prometheus text format (HTML?)",
		[SP_SRV_TOO_BIG] = "the answer is over 8 MiB",
		[SP_SRV_HTTP] = "the answer's HTTP status is not 200",
		[SP_SRV_NO_FAMILY] = "none of the vLLM or SGLang speculative-decoding families "
				     "(SGLang needs --enable-metrics)",
	};

	/* a server started with -- CMD listens only once loaded: its first answer is said */
	if (r->status == SP_SRV_OK && !s->answered && s->told[SP_SRV_DOWN])
		log_info("--server-metrics http://%s:%s%s: answered at scrape %u", s->url.host,
			 s->url.port, s->url.path, r->scrape);
	if (r->status == SP_SRV_OK)
		s->answered = true;
	if (r->status >= SP_SRV_STATUS_NR || s->told[r->status] || r->status == SP_SRV_OK)
		return;
	s->told[r->status] = true;
	if (r->status == SP_SRV_DOWN && !s->answered)
		log_warn("--server-metrics http://%s:%s%s: no connection at scrape %u (is the "
			 "server up, and serving metrics there?); tracing on, scraping again each "
			 "interval", s->url.host, s->url.port, s->url.path, r->scrape);
	else if (r->status == SP_SRV_HTTP)
		log_warn("--server-metrics http://%s:%s%s: HTTP status %.0f; tracing on without "
			 "the server's figures while it lasts", s->url.host, s->url.port,
			 s->url.path, r->value);
	else
		log_warn("--server-metrics http://%s:%s%s: %s; tracing on without the server's "
			 "figures while it lasts", s->url.host, s->url.port, s->url.path,
			 what[r->status]);
}

static void enqueue(struct server_metrics *s, const struct sp_srvmetric_rec *recs, int n)
{
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < n && s->nr_queued < MAX_QUEUED; i++)
		s->queue[s->nr_queued++] = recs[i];
	pthread_mutex_unlock(&s->lock);
}

static void *scrape_loop(void *arg)
{
	struct server_metrics *s = arg;
	struct sp_srvmetric_rec recs[SP_SRV_FAMILY_NR];
	__u64 next = mono_ns();
	__u32 scrape = 0;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		struct timespec until;
		int n;

		pthread_mutex_unlock(&s->lock);
		n = server_metrics__scrape(&s->url, s->timeout_ms, ++scrape, recs);
		enqueue(s, recs, n);
		next += s->interval_ns;
		/* a scrape that ran past its turn: the next one a whole interval later */
		if (next < mono_ns())
			next = mono_ns() + s->interval_ns;
		until.tv_sec = next / 1000000000ull;
		until.tv_nsec = next % 1000000000ull;
		pthread_mutex_lock(&s->lock);
		while (!s->stop && pthread_cond_timedwait(&s->wake, &s->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct server_metrics *server_metrics__start(const struct srvm_url *url, __u64 interval_ns)
{
	struct server_metrics *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;

	if (!s || !(s->queue = calloc(MAX_QUEUED, sizeof(*s->queue)))) {
		free(s);
		return NULL;
	}
	s->url = *url;
	s->interval_ns = interval_ns ? interval_ns : SRVM_DEFAULT_INTERVAL_NS;
	s->timeout_ms = SRVM_TIMEOUT_MS;
	if (s->interval_ns / 1000000 < (__u64)s->timeout_ms)
		s->timeout_ms = s->interval_ns / 1000000 ? s->interval_ns / 1000000 : 1;
	if (!url->loopback)
		log_warn("--server-metrics: %s is not a loopback address: scraping it over the "
			 "network as asked", url->host);
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	s->started = !pthread_create(&s->thread, NULL, scrape_loop, s);
	if (!s->started)
		log_warn("--server-metrics: no thread to scrape with: tracing without it");
	return s;
}

int server_metrics__poll(struct server_metrics *s, __u32 tgid, session_record_fn emit, void *ctx)
{
	struct sp_srvmetric_rec *taken;
	int n, ret = 0;

	pthread_mutex_lock(&s->lock);
	n = s->nr_queued;
	taken = n ? malloc(n * sizeof(*taken)) : NULL;
	if (taken) {
		memcpy(taken, s->queue, n * sizeof(*taken));
		s->nr_queued = 0;
	}
	pthread_mutex_unlock(&s->lock);
	if (!taken)
		return 0;
	for (int i = 0; i < n && !ret; i++) {
		taken[i].tgid = tgid;
		/* said here, on the recorder's thread, where every other line is said */
		tell(s, &taken[i]);
		ret = emit(ctx, &taken[i], sizeof(taken[i]));
	}
	free(taken);
	return ret ? ret : n;
}

void server_metrics__free(struct server_metrics *s)
{
	if (!s)
		return;
	if (s->started) {
		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s->queue);
	free(s);
}
