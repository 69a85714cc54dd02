// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The Python stack reader on its own, for tests: uprobes on a libcuda's blocking
 * syncs, a Python program started under them, every hit printed as one JSON line
 * with its frames named (file, function, line) the way specprobe names them.
 *   pystack_probe LIBCUDA PYTHON SCRIPT [ARGS...]
 * The program prints "ready" when it has loaded the library, waits for a line,
 * makes its calls, prints "done" and waits for end of input before exiting.
 * PYSTACK_PROBE_QUIET=1 prints only the hit count and the reader's mean time;
 * PYSTACK_PROBE_NO_PY=1 writes the records without reading the Python stack.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "pycode.h"
#include "pyprocs.h"
#include "pystack_probe.skel.h"

static const char *const sync_funcs[] = {
	"cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize",
};

struct pystack_probe_rec {
	__u32 tid;
	__u32 nr;
	__u64 cookie;
	__u64 read_ns;
	struct sp_py_frame frames[SP_STACK_PY];
};

#define NR_SYNC_FUNCS (sizeof(sync_funcs) / sizeof(sync_funcs[0]))

static struct bpf_link *links[NR_SYNC_FUNCS];
static pid_t child;
static bool quiet;		/* PYSTACK_PROBE_QUIET: count hits, print no frames */
static unsigned long long hits, read_ns_sum;

/* The line instr runs in a decoded record; -1 when none. */
static int line_of(const struct sp_pycode_rec *rec, __u32 instr)
{
	const char *p = (const char *)(rec + 1) + rec->file_len + rec->name_len;
	const struct sp_pyline *lines;
	size_t off = p - (const char *)rec;
	int line = -1;
	__u32 i;

	lines = (const struct sp_pyline *)((const char *)rec + ((off + 7) & ~(size_t)7));
	for (i = 0; i < rec->nr_lines && lines[i].instr <= instr; i++)
		line = lines[i].line;
	return line;
}

static void print_frame(const struct sp_py_frame *f, bool first)
{
	static char buf[65536];
	const struct sp_pycode_rec *rec = (const void *)buf;
	int size = pycode__record(child, f->code, buf, sizeof(buf));

	if (size < 0) {
		printf("%s{\"error\":%d}", first ? "" : ",", size);
		return;
	}
	printf("%s{\"file\":\"%s\",\"function\":\"%s\",\"line\":%d,\"instr\":%u}",
	       first ? "" : ",", (const char *)(rec + 1),
	       (const char *)(rec + 1) + rec->file_len, line_of(rec, f->instr), f->instr);
}

static int on_record(void *ctx, void *data, size_t len)
{
	const struct pystack_probe_rec *r = data;
	__u32 i;

	hits++;
	read_ns_sum += r->read_ns;
	if (quiet)
		return 0;
	printf("{\"tid\":%u,\"fn\":\"%s\",\"read_ns\":%llu,\"frames\":[", r->tid,
	       sync_funcs[r->cookie % NR_SYNC_FUNCS], (unsigned long long)r->read_ns);
	for (i = 0; i < r->nr && i < SP_STACK_PY; i++)
		print_frame(&r->frames[i], i == 0);
	printf("]}\n");
	return 0;
}

static int attach_all(struct pystack_probe_bpf *skel, const char *lib)
{
	size_t i;

	for (i = 0; i < NR_SYNC_FUNCS; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = sync_funcs[i], .bpf_cookie = i);

		links[i] = bpf_program__attach_uprobe_opts(skel->progs.pystack_hit, -1, lib, 0,
							   &opts);
		if (!links[i]) {
			fprintf(stderr, "pystack_probe: cannot attach %s in %s: %s\n",
				sync_funcs[i], lib, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Start argv with its stdin and stdout on pipes: to_child, from_child. */
static int spawn(char **argv, FILE **to_child, FILE **from_child)
{
	int in[2], out[2];

	if (pipe(in) || pipe(out))
		return -1;
	child = fork();
	if (child < 0)
		return -1;
	if (child == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*to_child = fdopen(in[1], "w");
	*from_child = fdopen(out[0], "r");
	return *to_child && *from_child ? 0 : -1;
}

static int expect_line(FILE *f, const char *want)
{
	char line[256];

	if (!fgets(line, sizeof(line), f) || strncmp(line, want, strlen(want))) {
		fprintf(stderr, "pystack_probe: the program did not print \"%s\"\n", want);
		return -1;
	}
	return 0;
}

/* Where offsets came from; read from the target, do they equal the headers' table? */
static void report_offsets(const struct py_proc *proc)
{
	const struct py_offsets *row = py_offsets__table(proc->off.minor);

	fprintf(stderr, "pystack_probe: CPython %x, %s\n", proc->version,
		proc->debug_offsets ? "offsets from _Py_DebugOffsets" : "offsets from the table");
	if (proc->debug_offsets && row)
		fprintf(stderr, "pystack_probe: _Py_DebugOffsets %s the headers' table\n",
			memcmp(row, &proc->off, sizeof(*row)) ? "differ from" : "equal");
}

/* Drain the ring while the program runs, until it prints "done"; then once more. */
static int run_until_done(struct ring_buffer *rb, FILE *from_child)
{
	struct pollfd pfd = { .fd = fileno(from_child), .events = POLLIN };
	int ret;

	for (;;) {
		/* hits do not wake the reader: it looks every 10 ms */
		ret = ring_buffer__consume(rb);
		if (ret < 0 && ret != -EINTR)
			return ret;
		if (poll(&pfd, 1, 10) > 0)
			break;
	}
	if (expect_line(from_child, "done"))
		return -1;
	ret = ring_buffer__consume(rb);
	return ret < 0 ? ret : 0;
}

static int trace_child(struct pystack_probe_bpf *skel, FILE *to_child, FILE *from_child)
{
	struct ring_buffer *rb;
	int ret;

	if (expect_line(from_child, "ready"))
		return -1;
	ret = pyprocs__add(bpf_map__fd(skel->maps.py_procs), child);
	if (ret) {
		fprintf(stderr, "pystack_probe: pid %d: no Python configured: %s\n", child,
			strerror(-ret));
		return -1;
	}
	report_offsets(pyprocs__find(child));
	rb = ring_buffer__new(bpf_map__fd(skel->maps.records), on_record, NULL, NULL);
	if (!rb)
		return -1;
	fprintf(to_child, "go\n");
	fflush(to_child);
	ret = run_until_done(rb, from_child);
	ring_buffer__free(rb);
	if (quiet)
		printf("{\"hits\":%llu,\"mean_read_ns\":%.0f}\n", hits,
		       hits ? (double)read_ns_sum / hits : 0.0);
	return ret < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct pystack_probe_bpf *skel;
	FILE *to_child = NULL, *from_child = NULL;
	int status = 0, ret = 1;

	if (argc < 4) {
		fprintf(stderr, "usage: pystack_probe LIBCUDA PYTHON SCRIPT [ARGS...]\n");
		return 2;
	}
	quiet = getenv("PYSTACK_PROBE_QUIET");
	skel = pystack_probe_bpf__open();
	if (skel) {
		skel->rodata->read_python = !getenv("PYSTACK_PROBE_NO_PY");
		if (pystack_probe_bpf__load(skel)) {
			pystack_probe_bpf__destroy(skel);
			skel = NULL;
		}
	}
	if (!skel) {
		fprintf(stderr, "pystack_probe: cannot load the BPF program: %s\n",
			strerror(errno));
		return 1;
	}
	if (attach_all(skel, argv[1]) || spawn(argv + 2, &to_child, &from_child))
		goto out;
	if (!trace_child(skel, to_child, from_child))
		ret = 0;
	fclose(to_child);
	to_child = NULL;
	waitpid(child, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "pystack_probe: the program failed (status %d)\n", status);
		ret = 1;
	}
out:
	if (to_child)
		fclose(to_child);
	if (from_child)
		fclose(from_child);
	for (size_t i = 0; i < NR_SYNC_FUNCS; i++)
		bpf_link__destroy(links[i]);
	pystack_probe_bpf__destroy(skel);
	return ret;
}
