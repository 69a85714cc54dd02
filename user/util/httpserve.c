// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One document over HTTP from a thread: non-blocking sockets in one poll
 * loop, a deadline per client, requests of bounded size, a bounded number of
 * clients (a new one at the cap drops the oldest), and a document swapped
 * under a lock that is only held to copy it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "httpserve.h"

#define MAX_CLIENTS 1024
#define BACKLOG 512
#define ACCEPT_BURST 256	/* per poll round, so a flood cannot starve the clients */
#define MAX_REQUEST 8192
#define REQUEST_MS 2000		/* accept to a whole request head */
#define RESPONSE_MS 3000	/* that head to the response's last byte */
#define LINGER_MS 1000		/* the response sent: for the client to close */
#define DRAIN_MS 1000		/* at stop: for the responses under way */
#define POLL_MS 100

struct client {
	int fd;
	char in[MAX_REQUEST];
	size_t in_len;
	char *out;		/* the whole response once the request is read */
	size_t out_len, out_off;
	bool closing;		/* all sent: reading until the client closes */
	long long deadline_ms;	/* of the present step: request, response, linger */
	unsigned long long seq;	/* accept order: the lowest is the oldest */
};

struct http_server {
	int listen_fd;
	int wake[2];		/* a byte in wake[1] tells the thread to stop */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;	/* guards doc and doc_len */
	char *doc;
	size_t doc_len;
	const char *path, *type;
	char address[64];
	bool loopback;
	struct client *clients[MAX_CLIENTS];
	size_t nr_clients, max_clients;
	int request_ms;
	unsigned long long accepted;
	bool fds_out;		/* descriptors ran out with none to free: accept next round */
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

/* "PORT", "HOST:PORT", "[V6]:PORT" into a host and a port; 0 or -EINVAL. */
static int split_spec(const char *spec, char *host, size_t host_sz, unsigned int *port)
{
	const char *colon, *end;
	char *num_end;
	unsigned long v;
	size_t len;

	if (spec[0] == '[') {
		end = strchr(spec, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		colon = end + 1;
		spec++;
	} else {
		colon = strrchr(spec, ':');
		end = colon;
	}
	if (!colon) {
		snprintf(host, host_sz, "127.0.0.1");
		colon = spec - 1;
	} else {
		len = end - spec;
		if (!len || len >= host_sz)
			return -EINVAL;
		memcpy(host, spec, len);
		host[len] = 0;
	}
	if (!strcmp(host, "localhost"))
		snprintf(host, host_sz, "127.0.0.1");
	errno = 0;
	v = strtoul(colon + 1, &num_end, 10);
	if (errno || num_end == colon + 1 || *num_end || v > 65535 || colon[1] == '-')
		return -EINVAL;
	*port = v;
	return 0;
}

static int make_addr(const char *host, unsigned int port, struct sockaddr_storage *ss,
		     socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

static void describe(struct http_server *s, const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *in4 = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &in4->sin_addr, host, sizeof(host));
		snprintf(s->address, sizeof(s->address), "%s:%u", host, ntohs(in4->sin_port));
		s->loopback = (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
	} else {
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(s->address, sizeof(s->address), "[%s]:%u", host, ntohs(in6->sin6_port));
		s->loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
}

static int bind_listen(struct http_server *s, const struct sockaddr_storage *ss, socklen_t len)
{
	struct sockaddr_storage bound;
	socklen_t bound_len = sizeof(bound);
	int one = 1;

	s->listen_fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0)
		return -errno;
	/* a restart finds its port free while old connections linger; two listeners never */
	setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->listen_fd, (const struct sockaddr *)ss, len) ||
	    listen(s->listen_fd, BACKLOG) ||
	    getsockname(s->listen_fd, (struct sockaddr *)&bound, &bound_len))
		return -errno;
	describe(s, &bound);
	return 0;
}

struct http_server *http_server__listen(const char *spec, char *err, size_t err_sz)
{
	struct http_server *s = calloc(1, sizeof(*s));
	struct sockaddr_storage ss;
	char host[64];
	unsigned int port;
	socklen_t len;
	int ret;

	if (!s) {
		snprintf(err, err_sz, "out of memory");
		return NULL;
	}
	s->listen_fd = s->wake[0] = s->wake[1] = -1;
	s->max_clients = MAX_CLIENTS;
	s->request_ms = REQUEST_MS;
	pthread_mutex_init(&s->lock, NULL);
	if (split_spec(spec, host, sizeof(host), &port) || make_addr(host, port, &ss, &len)) {
		snprintf(err, err_sz, "'%s' is no address to listen on: give PORT, IPV4:PORT or "
			 "[IPV6]:PORT (e.g. 9400, 127.0.0.1:9400, [::1]:9400)", spec);
		http_server__free(s);
		return NULL;
	}
	ret = bind_listen(s, &ss, len);
	if (ret) {
		snprintf(err, err_sz, "cannot listen on %s: %s%s", spec, strerror(-ret),
			 ret == -EADDRINUSE ? " (another program has that port; pick another)"
					    : "");
		http_server__free(s);
		return NULL;
	}
	return s;
}

const char *http_server__address(const struct http_server *s)
{
	return s->address;
}

bool http_server__loopback(const struct http_server *s)
{
	return s->loopback;
}

void http_server__set_limits(struct http_server *s, size_t max_clients, int request_ms)
{
	if (max_clients >= 1 && max_clients <= MAX_CLIENTS)
		s->max_clients = max_clients;
	if (request_ms > 0)
		s->request_ms = request_ms;
}

int http_server__publish(struct http_server *s, const char *body, size_t len)
{
	char *copy = malloc(len ? len : 1), *old;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, body, len);
	pthread_mutex_lock(&s->lock);
	old = s->doc;
	s->doc = copy;
	s->doc_len = len;
	pthread_mutex_unlock(&s->lock);
	free(old);
	return 0;
}

static void drop_client(struct http_server *s, size_t i)
{
	struct client *c = s->clients[i];

	close(c->fd);
	free(c->out);
	free(c);
	s->clients[i] = s->clients[--s->nr_clients];
}

/*
 * Make room for a new client: drop the oldest one still sending its request,
 * or the oldest of all when every one is being answered. false: none to drop.
 */
static bool drop_oldest(struct http_server *s)
{
	size_t oldest = s->nr_clients;

	for (size_t i = 0; i < s->nr_clients; i++) {
		const struct client *c = s->clients[i], *o;

		if (oldest == s->nr_clients) {
			oldest = i;
			continue;
		}
		o = s->clients[oldest];
		if ((!c->out && o->out) || (!c->out == !o->out && c->seq < o->seq))
			oldest = i;
	}
	if (oldest == s->nr_clients)
		return false;
	drop_client(s, oldest);
	return true;
}

static void accept_clients(struct http_server *s)
{
	for (int n = 0; n < ACCEPT_BURST; n++) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct client *c;

		if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
			/* out of descriptors: an old client's goes to the new one */
			if (drop_oldest(s))
				continue;
			s->fds_out = true;
			return;
		}
		if (fd < 0)
			return;	/* EAGAIN, or a connection that went away: nothing to do */
		if (s->nr_clients == s->max_clients)
			drop_oldest(s);
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			return;
		}
		c->fd = fd;
		c->deadline_ms = now_ms() + s->request_ms;
		c->seq = s->accepted++;
		s->clients[s->nr_clients++] = c;
	}
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 431:
		return "Request Header Fields Too Large";
	default:
		return "Service Unavailable";
	}
}

/* The whole response in c->out: headers, then the body (none for HEAD). */
static int set_response(struct client *c, int status, const char *type, const char *body,
			size_t len, bool head)
{
	char hdr[512];
	int n = snprintf(hdr, sizeof(hdr),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n%s\r\n",
			 status, reason(status), type, len,
			 status == 405 ? "Allow: GET, HEAD\r\n" : "");
	size_t body_len = head ? 0 : len;

	c->out = malloc(n + body_len);
	if (!c->out)
		return -ENOMEM;
	memcpy(c->out, hdr, n);
	memcpy(c->out + n, body, body_len);
	c->out_len = n + body_len;
	c->out_off = 0;
	return 0;
}

static int respond_doc(struct http_server *s, struct client *c, bool head)
{
	int ret;

	pthread_mutex_lock(&s->lock);
	if (s->doc)
		ret = set_response(c, 200, s->type, s->doc, s->doc_len, head);
	else
		ret = set_response(c, 503, "text/plain", "not ready\n", 10, head);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* A whole request head is in c->in: answer it. */
static int respond(struct http_server *s, struct client *c)
{
	static const char index_page[] = "specprobe: metrics are at /metrics\n";
	char method[16], target[256];
	size_t path_len;
	bool head;

	if (sscanf(c->in, "%15s %255s HTTP/1.%*c", method, target) != 2)
		return set_response(c, 400, "text/plain", "bad request\n", 12, false);
	head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET"))
		return set_response(c, 405, "text/plain", "GET or HEAD\n", 12, false);
	path_len = strcspn(target, "?");
	if (path_len == strlen(s->path) && !strncmp(target, s->path, path_len))
		return respond_doc(s, c, head);
	if (path_len == 1 && target[0] == '/')
		return set_response(c, 200, "text/plain", index_page, sizeof(index_page) - 1, head);
	return set_response(c, 404, "text/plain", "not found: try /metrics\n", 24, head);
}

/* Read what came; false when the client is done with (gone, or no memory). */
static bool client_read(struct http_server *s, struct client *c)
{
	ssize_t n = recv(c->fd, c->in + c->in_len, MAX_REQUEST - 1 - c->in_len, 0);


	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0)
		return false;
	c->in_len += n;
	c->in[c->in_len] = 0;
	if (memmem(c->in, c->in_len, "\r\n\r\n", 4) || memmem(c->in, c->in_len, "\n\n", 2))
		return !respond(s, c);
	if (c->in_len == MAX_REQUEST - 1)
		return !set_response(c, 431, "text/plain", "request too large\n", 18, false);
	return true;
}

/* Write what fits; false once the response is out or the client gone. */
static bool client_write(struct client *c)
{
	ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	c->out_off += n;
	if (c->out_off < c->out_len)
		return true;
	/*
	 * All sent. Closing with unread bytes from the client would reset the
	 * connection and could cost it the response: read until it closes.
	 */
	shutdown(c->fd, SHUT_WR);
	c->closing = true;
	return true;
}

/* A closing client: false once it has closed its side. */
static bool client_linger(struct client *c)
{
	char sink[4096];
	ssize_t n;

	while ((n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		;
	return n < 0 && (errno == EAGAIN || errno == EINTR);
}

/* Serve the clients poll found ready (fds[first..] in client order); drop the finished. */
static void serve_clients(struct http_server *s, const struct pollfd *fds, size_t nr,
			  long long drain_until)
{
	long long now = now_ms();

	for (size_t i = nr; i-- > 0;) {
		struct client *c = s->clients[i];
		bool keep = true, answered = c->out, closing = c->closing;

		if (fds[i].revents & (POLLERR | POLLNVAL))
			keep = false;
		else if (c->closing)
			keep = !(fds[i].revents & (POLLIN | POLLHUP)) || client_linger(c);
		else if (c->out && (fds[i].revents & (POLLOUT | POLLHUP)))
			keep = client_write(c);
		else if (!c->out && (fds[i].revents & (POLLIN | POLLHUP)))
			keep = client_read(s, c);
		if (keep && c->out && !c->closing && !(fds[i].revents & POLLOUT))
			keep = client_write(c);	/* a response just made: try at once */
		/* each step has a deadline of its own: a slow reader cannot hold a slot either */
		if (c->out && !answered)
			c->deadline_ms = now + RESPONSE_MS;
		if (c->closing && !closing)
			c->deadline_ms = now + LINGER_MS;
		if (keep && (now >= c->deadline_ms || (drain_until && now >= drain_until)))
			keep = false;
		if (!keep)
			drop_client(s, i);
	}
}

static bool wants_write(const struct client *c)
{
	return c->out && !c->closing;
}

/* At stop: the connections already made are served, later ones refused. */
static long long stop_listening(struct http_server *s)
{
	accept_clients(s);
	close(s->listen_fd);
	s->listen_fd = -1;
	return now_ms() + DRAIN_MS;
}

static void *serve(void *arg)
{
	struct http_server *s = arg;
	struct pollfd fds[MAX_CLIENTS + 2];
	long long drain_until = 0;

	for (;;) {
		size_t nr = s->nr_clients, at = nr;

		for (size_t i = 0; i < nr; i++) {
			short events = wants_write(s->clients[i]) ? POLLOUT : POLLIN;

			fds[i] = (struct pollfd){ s->clients[i]->fd, events, 0 };
		}
		fds[at++] = (struct pollfd){ s->wake[0], POLLIN, 0 };
		/* at the cap a new client still comes in: the oldest makes room */
		if (!drain_until && !s->fds_out)
			fds[at++] = (struct pollfd){ s->listen_fd, POLLIN, 0 };
		s->fds_out = false;
		if (poll(fds, at, POLL_MS) < 0 && errno != EINTR)
			break;
		/* the clients first: accepting may drop one, and fds[] is in client order */
		serve_clients(s, fds, nr, drain_until);
		if (!drain_until && at > nr + 1 && (fds[nr + 1].revents & POLLIN))
			accept_clients(s);
		if (!drain_until && (fds[nr].revents & POLLIN))
			drain_until = stop_listening(s);
		if (drain_until && !s->nr_clients)
			break;
	}
	while (s->nr_clients)
		drop_client(s, s->nr_clients - 1);
	return NULL;
}

int http_server__start(struct http_server *s, const char *path, const char *content_type)
{
	sigset_t all, old;
	int ret;

	s->path = path;
	s->type = content_type;
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	/* signals stay with the tracer's loop, which acts on them */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&s->thread, NULL, serve, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	s->started = !ret;
	return ret;
}

void http_server__free(struct http_server *s)
{
	if (!s)
		return;
	if (s->started) {
		if (write(s->wake[1], "x", 1) < 0)
			pthread_cancel(s->thread);
		pthread_join(s->thread, NULL);
	}
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	pthread_mutex_destroy(&s->lock);
	free(s->doc);
	free(s);
}
