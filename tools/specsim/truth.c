// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Ground truth records, kept binary while running, written as JSON Lines. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "server.h"
#include "truth.h"

struct gt_call {
	const char *name, *parent, *tag, *position;
	unsigned long long before, after;
	unsigned long long serialises;	/* the stream it is ordered behind, 0: none */
	size_t seq;
	int result, cycle, tid;
	signed char busy;		/* stream_busy: 1, 0, or -1 for none */
	unsigned char phase, nargs, depth;
	struct gt_arg args[GT_MAX_ARGS];
};

struct gt_span {
	int cycle;
	enum gt_phase phase;
	unsigned long long start, end;
};

static struct {
	pthread_mutex_t lock;
	bool off;		/* no truth file and no summary: nothing kept (long, fast runs) */
	struct gt_call *calls;
	size_t nr_calls, cap_calls;
	struct gt_span *spans;
	size_t nr_spans, cap_spans;
	struct gt_bounds *bounds;
	size_t nr_bounds, cap_bounds;
	char *text;		/* lines written once, outside the loop */
	size_t text_len, text_cap;
	int rank, nranks, pid;
	enum gt_phase phase;
	int cycle;
	const char *tag, *position;
	unsigned long long serialises;
	int busy;
} gt = { .lock = PTHREAD_MUTEX_INITIALIZER, .cycle = -1, .busy = -1 };

static const char *const phase_names[PH_NR] = {
	[PH_INIT] = "init",	[PH_CAPTURE] = "capture", [PH_EXERCISE] = "exercise",
	[PH_WAIT] = "wait",	[PH_DRAFT] = "draft",	  [PH_VERIFY] = "verify",
	[PH_ACCEPT] = "accept", [PH_EXTEND] = "extend",	  [PH_RATE] = "rate",
	[PH_TEARDOWN] = "teardown",
};

static __thread int my_tid;
/* the last top-level call this thread noted, for cycle bounds */
static __thread struct gt_ref last_call;

unsigned long long gt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int tid(void)
{
	if (!my_tid)
		my_tid = (int)syscall(SYS_gettid);
	return my_tid;
}

void truth__init(int rank, int nranks)
{
	gt.rank = rank;
	gt.nranks = nranks;
	gt.pid = getpid();
	gt.off = !env.truth_path && env.quiet;
}

void truth__set_phase(enum gt_phase phase, int cycle)
{
	gt.phase = phase;
	gt.cycle = cycle;
}

void truth__set_tag(const char *tag)
{
	gt.tag = tag;
}

void truth__set_position(const char *position)
{
	gt.position = position;
}

void truth__set_serialises(unsigned long long stream)
{
	gt.serialises = stream;
}

void truth__set_stream_busy(int busy)
{
	gt.busy = busy;
}

struct gt_ref truth__last(bool entry)
{
	struct gt_ref ref = last_call;

	ref.entry = entry;
	return ref;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 256;
	void *grown;

	while (n < need)
		n *= 2;
	if (n == *cap)
		return p;
	grown = realloc(p, n * elem);
	if (!grown) {
		fprintf(stderr, "specsim-server: out of memory for the ground truth\n");
		exit(1);
	}
	*cap = n;
	return grown;
}

static struct gt_call *new_call_locked(void)
{
	struct gt_call *c;

	gt.calls = grow(gt.calls, &gt.cap_calls, gt.nr_calls + 1, sizeof(*gt.calls));
	c = &gt.calls[gt.nr_calls];
	memset(c, 0, sizeof(*c));
	c->seq = gt.nr_calls++;
	c->tid = tid();
	c->phase = gt.phase;
	c->cycle = gt.cycle;
	c->tag = gt.tag;
	c->position = gt.position;
	c->serialises = gt.serialises;
	c->busy = gt.busy;
	return c;
}

void truth__call(const char *name, unsigned long long before, unsigned long long after,
		 int result, const struct gt_arg *args, int nargs)
{
	struct gt_call *c;

	last_call = (struct gt_ref){ name, before, after, false };
	if (gt.off)
		return;
	pthread_mutex_lock(&gt.lock);
	c = new_call_locked();
	c->name = name;
	c->before = before;
	c->after = after;
	c->result = result;
	c->nargs = nargs < GT_MAX_ARGS ? nargs : GT_MAX_ARGS;
	memcpy(c->args, args, c->nargs * sizeof(*args));
	pthread_mutex_unlock(&gt.lock);
}

/* A call NCCL made into libcuda on this thread, inside an NCCL entry point. */
void truth__nested(const struct specsim_call_note *note)
{
	struct gt_call *c;

	if (gt.off)
		return;
	pthread_mutex_lock(&gt.lock);
	c = new_call_locked();
	c->name = note->name;
	c->parent = note->parent;
	c->depth = 1;
	c->before = note->before_ns;
	c->after = note->after_ns;
	c->result = note->result;
	c->nargs = note->nargs < GT_MAX_ARGS ? note->nargs : GT_MAX_ARGS;
	for (int i = 0; i < c->nargs; i++)
		c->args[i] = (struct gt_arg){ note->keys[i], note->vals[i], NULL };
	pthread_mutex_unlock(&gt.lock);
}

void truth__phase_span(int cycle, enum gt_phase phase, unsigned long long start,
		       unsigned long long end)
{
	if (gt.off)
		return;
	pthread_mutex_lock(&gt.lock);
	gt.spans = grow(gt.spans, &gt.cap_spans, gt.nr_spans + 1, sizeof(*gt.spans));
	gt.spans[gt.nr_spans++] = (struct gt_span){ cycle, phase, start, end };
	pthread_mutex_unlock(&gt.lock);
}

void truth__cycle_bounds(const struct gt_bounds *b)
{
	if (gt.off)
		return;
	pthread_mutex_lock(&gt.lock);
	gt.bounds = grow(gt.bounds, &gt.cap_bounds, gt.nr_bounds + 1, sizeof(*gt.bounds));
	gt.bounds[gt.nr_bounds] = *b;
	gt.bounds[gt.nr_bounds++].tid = tid();
	pthread_mutex_unlock(&gt.lock);
}

/* Appends one preformatted JSON object; the pid and rank are added. */
void truth__line(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	if (gt.off)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(buf) - 64)
		return;
	pthread_mutex_lock(&gt.lock);
	gt.text = grow(gt.text, &gt.text_cap, gt.text_len + n + 64, 1);
	gt.text_len += sprintf(gt.text + gt.text_len, "{%s,\"pid\":%d,\"rank\":%d}\n", buf, gt.pid,
			       gt.rank);
	pthread_mutex_unlock(&gt.lock);
}

void truth__stage(const char *stage, unsigned long long start, unsigned long long end)
{
	truth__line("\"stage\":\"%s\",\"start\":%llu,\"end\":%llu", stage, start, end);
}

long long truth__count(const char *name)
{
	long long n = 0;

	pthread_mutex_lock(&gt.lock);
	for (size_t i = 0; i < gt.nr_calls; i++)
		n += !strcmp(gt.calls[i].name, name);
	pthread_mutex_unlock(&gt.lock);
	return n;
}

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* The catalogue's name for a symbol: cuMemFree_v2 -> cuMemFree. */
static void put_base(FILE *f, const char *name)
{
	size_t len = strlen(name);

	if (len > 3 && name[len - 3] == '_' && name[len - 2] == 'v' && name[len - 1] >= '2' &&
	    name[len - 1] <= '9')
		len -= 3;
	fprintf(f, "\"base\":\"%.*s\"", (int)len, name);
}

static void put_call(FILE *f, const struct gt_call *c)
{
	fprintf(f, "{\"name\":\"%s\",", c->name);
	put_base(f, c->name);
	fprintf(f, ",\"pid\":%d,\"tid\":%d,\"rank\":%d,\"before\":%llu,\"after\":%llu,"
		   "\"result\":%d,\"phase\":\"%s\",\"cycle\":%d,\"depth\":%d",
		gt.pid, c->tid, gt.rank, c->before, c->after, c->result, phase_names[c->phase],
		c->cycle, c->depth);
	if (c->parent)
		fprintf(f, ",\"parent\":\"%s\"", c->parent);
	if (c->tag)
		fprintf(f, ",\"tag\":\"%s\"", c->tag);
	if (c->position)
		fprintf(f, ",\"position\":\"%s\"", c->position);
	if (c->serialises)
		fprintf(f, ",\"serialises_with\":%llu", c->serialises);
	if (c->busy >= 0)
		fprintf(f, ",\"stream_busy\":%s", c->busy ? "true" : "false");
	fputs(",\"args\":{", f);
	for (int i = 0; i < c->nargs; i++) {
		fprintf(f, "%s\"%s\":", i ? "," : "", c->args[i].key);
		if (c->args[i].str)
			put_string(f, c->args[i].str);
		else
			fprintf(f, "%lld", c->args[i].val);
	}
	fputs("}}\n", f);
}

static void put_ref(FILE *f, const char *key, const struct gt_ref *r)
{
	fprintf(f, "\"%s\":{\"name\":\"%s\",\"edge\":\"%s\",\"before\":%llu,\"after\":%llu}",
		key, r->name ? r->name : "", r->entry ? "entry" : "return", r->before, r->after);
}

static void put_bounds(FILE *f, const struct gt_bounds *b)
{
	static const char *const names[LP_NR] = { "draft", "verify", "accept", "extend" };

	fprintf(f, "{\"cycle_bounds\":%d,\"rank\":%d,\"pid\":%d,\"tid\":%d,", b->cycle, gt.rank,
		gt.pid, b->tid);
	put_ref(f, "start", &b->start);
	fputc(',', f);
	put_ref(f, "end", &b->end);
	fputs(",\"phases\":{", f);
	for (int p = 0; p < LP_NR; p++) {
		fprintf(f, "%s\"%s\":{", p ? "," : "", names[p]);
		put_ref(f, "start", &b->phase_start[p]);
		fputc(',', f);
		put_ref(f, "end", &b->phase_end[p]);
		fputc('}', f);
	}
	fprintf(f, "},\"draft_launches\":%d,\"verify_launches\":%d,\"extend_launches\":%d,"
		   "\"syncs\":%d}\n",
		b->draft_launches, b->verify_launches, b->extend_launches, b->syncs);
}

static int by_before(const void *a, const void *b)
{
	const struct gt_call *x = a, *y = b;

	if (x->before != y->before)
		return (x->before > y->before) - (x->before < y->before);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

FILE *truth__create(const char *path)
{
	/* never through a link, never waiting on a FIFO, nothing truncated before it is checked */
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
	struct stat st;
	FILE *f;

	if (fd < 0) {
		if (errno == ELOOP)
			fprintf(stderr, "specsim-server: %s is a symbolic link: not followed\n",
				path);
		else
			perror(path);
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    st.st_uid != geteuid()) {
		fprintf(stderr,
			"specsim-server: %s is not a file of this user's own: not written\n", path);
		close(fd);
		return NULL;
	}
	f = ftruncate(fd, 0) ? NULL : fdopen(fd, "w");
	if (!f) {
		perror(path);
		close(fd);
	}
	return f;
}

/* Calls in the order they were entered, then phases, cycle bounds, the other lines. */
int truth__write(const char *path)
{
	FILE *f = truth__create(path);

	if (!f)
		return -1;
	pthread_mutex_lock(&gt.lock);
	qsort(gt.calls, gt.nr_calls, sizeof(*gt.calls), by_before);
	for (size_t i = 0; i < gt.nr_calls; i++)
		put_call(f, &gt.calls[i]);
	for (size_t i = 0; i < gt.nr_spans; i++)
		fprintf(f, "{\"cycle\":%d,\"phase\":\"%s\",\"start\":%llu,\"end\":%llu,"
			   "\"pid\":%d,\"rank\":%d}\n",
			gt.spans[i].cycle, phase_names[gt.spans[i].phase], gt.spans[i].start,
			gt.spans[i].end, gt.pid, gt.rank);
	for (size_t i = 0; i < gt.nr_bounds; i++)
		put_bounds(f, &gt.bounds[i]);
	if (gt.text_len)
		fwrite(gt.text, 1, gt.text_len, f);
	pthread_mutex_unlock(&gt.lock);
	if (fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}
