// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Ranks from /proc: the environment, the process title, the GPU device node. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rankinfo.h"
#include "tracer.h"

#define RANK_MAX	65535	/* larger numbers are not ranks */
#define ENVIRON_MAX	(1 << 20)	/* bytes of an environment read */
#define FDS_MAX		65536	/* descriptors looked at for a device node */
#define WATCH_SCANS	60	/* scans a process is read at before it is given up */

/* Decimal digits only, at most 5, within RANK_MAX. */
static bool parse_small(const char *s, size_t len, int *value)
{
	int v = 0;

	if (!len || len > 5)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	if (v > RANK_MAX)
		return false;
	*value = v;
	return true;
}

static bool is_upper(char c)
{
	return c >= 'A' && c <= 'Z';
}

/* ROLE after the prefix: the rest of the title starts right after it. */
static const char *title_role(const char *t, size_t len)
{
	static const char *const sglang[] = { "scheduler", "semi_pd_scheduler", "gpu_worker" };
	const char *sep = memmem(t, len, "::", 2);
	const char *role;
	size_t rest;

	if (len >= 10 && !memcmp(t, "VllmWorker", 10))
		return t + 10;
	if (!sep || sep == t)
		return NULL;
	role = sep + 2;
	rest = len - (role - t);
	if (sep - t == 6 && !memcmp(t, "sglang", 6)) {
		for (size_t i = 0; i < sizeof(sglang) / sizeof(sglang[0]); i++) {
			size_t n = strlen(sglang[i]);

			if (rest >= n && !memcmp(role, sglang[i], n) &&
			    (rest == n || role[n] == '_'))
				return role + n;
		}
		return NULL;
	}
	/* vLLM's prefix is VLLM unless VLLM_PROCESS_NAME_PREFIX says otherwise */
	for (const char *c = t; c < sep; c++)
		if (!(is_upper(*c) || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
		      *c == '_' || *c == '-'))
			return NULL;
	return rest >= 6 && !memcmp(role, "Worker", 6) ? role + 6 : NULL;
}

/* One tag: a word of capitals (PREFILL, DECODE) or a parallelism and its index (TP1). */
static bool title_tag(const char *tag, size_t n, int *tp, bool *seen_tp)
{
	static const char *const dims[] = { "TP", "PP", "DP", "EP", "CP" };
	size_t letters = 0;
	int index;

	while (letters < n && is_upper(tag[letters]))
		letters++;
	if (!letters)
		return false;
	if (letters == n)
		return n >= 3;	/* a word, not a parallelism without its index */
	if (letters != 2 || !parse_small(tag + 2, n - 2, &index))
		return false;
	for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
		if (memcmp(tag, dims[i], 2))
			continue;
		if (i == 0) {
			if (*seen_tp)
				return false;
			*seen_tp = true;
			*tp = index;
		}
		return true;
	}
	return false;
}

bool rankinfo__parse_title(const char *title, size_t len, int *rank)
{
	const char *end, *tag;
	bool seen_tp = false;
	int tp = 0;

	len = strnlen(title, len);
	while (len && title[len - 1] == ' ')
		len--;
	end = title + len;
	tag = title_role(title, len);
	if (!tag)
		return false;
	while (tag < end) {
		const char *next;

		if (*tag != '_' && *tag != ' ')
			return false;
		tag++;
		next = tag;
		while (next < end && *next != '_' && *next != ' ')
			next++;
		if (!title_tag(tag, next - tag, &tp, &seen_tp))
			return false;
		tag = next;
	}
	*rank = tp;
	return true;
}

/* The value of KEY in NUL-separated K=V entries, NULL when absent. */
static const char *env_value(const char *env, size_t len, const char *key, size_t *vlen)
{
	size_t klen = strlen(key);

	for (size_t at = 0; at < len;) {
		const char *e = env + at;
		size_t n = strnlen(e, len - at);

		if (n > klen && !memcmp(e, key, klen) && e[klen] == '=') {
			*vlen = n - klen - 1;
			return e + klen + 1;
		}
		at += n + 1;
	}
	return NULL;
}

static bool env_number(const char *env, size_t len, const char *key, int *value)
{
	size_t vlen;
	const char *v = env_value(env, len, key, &vlen);

	return v && parse_small(v, vlen, value);
}

bool rankinfo__parse_environ(const char *env, size_t len, struct rank_seen *seen)
{
	static const char *const keys[][2] = { { "RANK", "WORLD_SIZE" },
					       { "LOCAL_RANK", "LOCAL_WORLD_SIZE" } };

	for (size_t i = 0; i < 2; i++) {
		int rank, nranks = -1;

		if (!env_number(env, len, keys[i][0], &rank))
			continue;
		if (env_number(env, len, keys[i][1], &nranks) && nranks <= rank)
			continue;	/* a size that cannot hold the rank: neither is trusted */
		seen->rank = rank;
		seen->nranks = nranks;
		seen->from = SP_RANK_ENVIRON;
		if (nranks > 0)
			snprintf(seen->what, sizeof(seen->what), "%s=%d %s=%d", keys[i][0], rank,
				 keys[i][1], nranks);
		else
			snprintf(seen->what, sizeof(seen->what), "%s=%d", keys[i][0], rank);
		return true;
	}
	return false;
}

bool rankinfo__parse_device(const char *link, int *gpu)
{
	static const char node[] = "/dev/nvidia";

	if (strncmp(link, node, sizeof(node) - 1))
		return false;
	link += sizeof(node) - 1;
	return parse_small(link, strlen(link), gpu);
}

/* Up to max bytes of a /proc file; the count read, or -1. */
static ssize_t read_proc(__u32 tgid, const char *name, char *buf, size_t max)
{
	char path[64];
	size_t got = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/%s", tgid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (got < max) {
		ssize_t n = read(fd, buf + got, max - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	return got;
}

static bool read_environ(__u32 tgid, struct rank_seen *seen)
{
	char *buf = malloc(ENVIRON_MAX);
	ssize_t n;
	bool found;

	if (!buf)
		return false;
	n = read_proc(tgid, "environ", buf, ENVIRON_MAX);
	found = n > 0 && rankinfo__parse_environ(buf, n, seen);
	free(buf);
	return found;
}

/* cmdline, where setproctitle writes the whole title, then comm (15 bytes of it). */
static bool read_title(__u32 tgid, struct rank_seen *seen)
{
	static const char *const files[] = { "cmdline", "comm" };
	char buf[512];

	for (size_t i = 0; i < 2; i++) {
		ssize_t n = read_proc(tgid, files[i], buf, sizeof(buf) - 1);

		if (n <= 0)
			continue;
		buf[n] = '\0';
		if (i == 1 && buf[n - 1] == '\n')
			buf[n - 1] = '\0';
		if (!rankinfo__parse_title(buf, n, &seen->rank))
			continue;
		seen->nranks = -1;
		seen->from = SP_RANK_TITLE;
		snprintf(seen->what, sizeof(seen->what), "%.*s", SP_RANK_WHAT - 1, buf);
		return true;
	}
	return false;
}

/* The one GPU node among the open descriptors; none, or several, tell nothing. */
static bool read_device(__u32 tgid, struct rank_seen *seen)
{
	char path[64], link[64];
	int gpu = -1, fds = 0;
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%u/fd", tgid);
	dir = opendir(path);
	if (!dir)
		return false;
	while ((de = readdir(dir)) && fds++ < FDS_MAX) {
		char fd_path[sizeof(path) + sizeof(de->d_name)];
		ssize_t n;
		int this;

		snprintf(fd_path, sizeof(fd_path), "%s/%s", path, de->d_name);
		n = readlink(fd_path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!rankinfo__parse_device(link, &this))
			continue;
		if (gpu >= 0 && gpu != this) {
			gpu = -2;
			break;
		}
		gpu = this;
	}
	closedir(dir);
	if (gpu < 0)
		return false;
	seen->rank = gpu;
	seen->nranks = -1;
	seen->from = SP_RANK_DEVICE;
	snprintf(seen->what, sizeof(seen->what), "/dev/nvidia%d", gpu);
	return true;
}

bool rankinfo__read(__u32 tgid, bool with_environ, struct rank_seen *seen)
{
	memset(seen, 0, sizeof(*seen));
	return (with_environ && read_environ(tgid, seen)) || read_title(tgid, seen) ||
	       read_device(tgid, seen);
}

struct watch_entry {
	__u32 tgid;
	__u32 from;		/* the best source recorded so far, 0: none */
	__u32 scans;
	bool seen;		/* still among the traced processes at this scan */
};

struct rank_watch {
	struct watch_entry *e;
	size_t nr, cap;
};

/* at is where the entry was at the last scan: the traced set keeps its order */
static struct watch_entry *watch_entry(struct rank_watch *rw, __u32 tgid, size_t at)
{
	if (at < rw->nr && rw->e[at].tgid == tgid)
		return &rw->e[at];
	for (size_t i = 0; i < rw->nr; i++)
		if (rw->e[i].tgid == tgid)
			return &rw->e[i];
	if (rw->nr == rw->cap) {
		size_t cap = rw->cap ? 2 * rw->cap : 16;
		struct watch_entry *e = realloc(rw->e, cap * sizeof(*e));

		if (!e)
			return NULL;
		rw->e = e;
		rw->cap = cap;
	}
	rw->e[rw->nr] = (struct watch_entry){ .tgid = tgid };
	return &rw->e[rw->nr++];
}

/* A process is read until its environment or title told it, or it ran out of scans. */
static int watch_one(struct watch_entry *we, session_record_fn on_record, void *ctx)
{
	struct sp_rank_rec rec = { .type = SP_REC_RANK, .size = sizeof(rec) };
	struct rank_seen seen;

	we->seen = true;
	if ((we->from && we->from <= SP_RANK_TITLE) || we->scans >= WATCH_SCANS)
		return 0;
	/* read again each time: a child seen at fork has its own environment once it execs */
	we->scans++;
	if (!rankinfo__read(we->tgid, true, &seen) ||
	    (we->from && we->from <= seen.from))
		return 0;
	we->from = seen.from;
	rec.tgid = we->tgid;
	rec.ts = tracer__now_ns();
	rec.rank = seen.rank;
	rec.nranks = seen.nranks;
	rec.from = seen.from;
	memcpy(rec.what, seen.what, sizeof(rec.what));
	return on_record(ctx, &rec, sizeof(rec));
}

int rank_watch__scan(struct rank_watch **rwp, const __u32 *tgids, int nr_tgids,
		     session_record_fn on_record, void *ctx)
{
	struct rank_watch *rw = *rwp;
	size_t kept = 0;
	int ret = 0;

	if (!rw) {
		rw = *rwp = calloc(1, sizeof(*rw));
		if (!rw)
			return -ENOMEM;
	}
	for (size_t i = 0; i < rw->nr; i++)
		rw->e[i].seen = false;
	for (int i = 0; !ret && i < nr_tgids; i++) {
		struct watch_entry *we = watch_entry(rw, tgids[i], i);

		ret = we ? watch_one(we, on_record, ctx) : -ENOMEM;
	}
	/* processes no longer traced are forgotten, so the state stays that of the live ones */
	for (size_t i = 0; i < rw->nr; i++)
		if (rw->e[i].seen || ret)
			rw->e[kept++] = rw->e[i];
	rw->nr = kept;
	return ret;
}

void rank_watch__free(struct rank_watch *rw)
{
	if (!rw)
		return;
	free(rw->e);
	free(rw);
}
