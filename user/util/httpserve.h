/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A tiny HTTP/1.x server of one document, from a thread of its own: the
 * caller publishes a new version whenever it likes and is never held up by a
 * client (each has a deadline, a bounded request, and the number of clients
 * is bounded: a new one at the cap drops the oldest). For /metrics.
 */
#ifndef __HTTPSERVE_H
#define __HTTPSERVE_H

#include <stdbool.h>
#include <stddef.h>

struct http_server;

/*
 * Bind and listen on spec: "PORT" (127.0.0.1), "HOST:PORT" with an IPv4
 * address or "localhost", or "[IPV6]:PORT"; port 0 takes a free one. NULL
 * with a one-line reason in err (a port in use, say).
 */
struct http_server *http_server__listen(const char *spec, char *err, size_t err_sz);
/* "127.0.0.1:9400" or "[::1]:9400": where it listens, the port chosen included. */
const char *http_server__address(const struct http_server *s);
/* Whether it listens on a loopback address only. */
bool http_server__loopback(const struct http_server *s);
/*
 * Before start: at most max_clients at once (1 to 1024; 1024 unless set) and
 * request_ms from accept to a whole request head (2000 unless set); 0 keeps one.
 */
void http_server__set_limits(struct http_server *s, size_t max_clients, int request_ms);
/* Serve GET path from now on, with this content type; 0 or -errno. */
int http_server__start(struct http_server *s, const char *path, const char *content_type);
/* The document from now on (copied); 0 or -ENOMEM (the last one stays). */
int http_server__publish(struct http_server *s, const char *body, size_t len);
/* Stop accepting, let the responses under way finish (a second at most), close. NULL: none. */
void http_server__free(struct http_server *s);

#endif /* __HTTPSERVE_H */
