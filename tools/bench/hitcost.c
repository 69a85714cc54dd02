// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Where the time of one probe hit goes, side by side in one run. The function
 * specprobe calibrates on (push %rbp; mov %rsp,%rbp, like a driver entry point)
 * is called in a tight loop with nothing attached, with each program of the
 * ladder in hitcost.bpf.c (bare trap, counter, filter, thread state, timestamp,
 * ring record, stack read, return trap) and with specprobe's own on_entry and
 * on_return under the specs of real catalogue rows. All attach with uprobe_multi
 * links, as specprobe does. Then once more with kernel BPF statistics on, which
 * gives the time spent inside each program; the rest of a hit is the trap.
 *   [HITCOST_RING_MB=N] hitcost ROUNDS CALLS [STATS_CALLS]   one JSON line per round and variant, then
 *                                        one per variant from the statistics pass
 *                                        (STATS_CALLS calls each; 0: no such pass)
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "calibrate.h"
#include "catalog.h"
#include "multilink.h"
#include "specprobe.skel.h"
#include "hitcost.skel.h"

#ifndef SP_HAS_STACKS	/* an older specprobe.h (a BASE build): no stack records */
#define SP_SPEC_STACK 0
#endif

#define MULTI_ATTACH UPROBE_MULTI_ATTACH
#define SP_RET_SESSION 2	/* variant.sp_ret: entry and return as one session program */

struct variant {
	const char *name;
	const char *entry;	/* ladder program, or NULL */
	const char *ret;	/* ladder return program, or NULL */
	const char *row;	/* catalogue row for specprobe's programs, or NULL */
	int sp_ret;		/* also specprobe's return probe (SP_RET_SESSION: as a session) */
	int sp_stack;		/* and its stack record (SP_SPEC_STACK) */
	int depth;		/* called this many frame-pointer frames deep */
	int data_in_rbp;	/* called from code that keeps data in rbp (no frame pointers) */
};

static const struct variant variants[] = {
	{ "none" },
	{ "trap", "step_empty" },
	{ "count", "step_count" },
	{ "filter", "step_filter" },
	{ "filter_bits", "step_filter_bits" },
	{ "thread_hash", "step_thread_hash" },
	{ "thread_task", "step_thread_task" },
	{ "ktime", "step_ktime" },
	{ "ring", "step_ring" },
	{ "ring_discard", "step_ring_discard" },
	{ "ring_small", "step_ring_small" },
	{ "ring_line", "step_ring_line" },
	{ "stack", "step_stack" },
	{ "count+ret_trap", "step_count", "step_ret_empty" },
	{ "sp_launch", .row = "cuLaunchKernel" },
	{ "sp_graph", .row = "cuGraphLaunch" },
	{ "sp_d2d_copy", .row = "cuMemcpyDtoDAsync" },
	{ "sp_query_entry", .row = "cuEventQuery" },
	{ "sp_query", .row = "cuEventQuery", .sp_ret = 1 },
	{ "sp_sync", .row = "cuStreamSynchronize", .sp_ret = 1 },
#ifdef SP_HAS_SESSIONS
	{ "sp_query_session", .row = "cuEventQuery", .sp_ret = SP_RET_SESSION },
	{ "sp_sync_session", .row = "cuStreamSynchronize", .sp_ret = SP_RET_SESSION },
#endif
	{ "sp_sync_stack", .row = "cuStreamSynchronize", .sp_ret = 1, .sp_stack = 1 },
	{ "sp_sync_stack_deep", .row = "cuStreamSynchronize", .sp_ret = 1, .sp_stack = 1,
	  .depth = 40 },
	{ "sp_sync_stack_nofp", .row = "cuStreamSynchronize", .sp_ret = 1, .sp_stack = 1,
	  .data_in_rbp = 1 },
};
#define NR_VARIANTS (int)(sizeof(variants) / sizeof(variants[0]))

struct bench {
	struct specprobe_bpf *sp;
	struct hitcost_bpf *ladder;
	struct ring_buffer *rings;
	char path[PATH_MAX];
	__u64 offset;
	volatile int stop;
	__u64 records;
	__u64 stacks, frames;	/* stack records read and their native frames */
};

static int link_multi(struct bench *b, struct bpf_program *prog, int retprobe)
{
	__u64 cookie = 0;

	return multilink__create(bpf_program__fd(prog), b->path, &b->offset, &cookie, 1,
				 retprobe ? MULTILINK_RETURN : MULTILINK_ENTRY);
}

static int count_record(void *ctx, void *data, size_t size)
{
	struct bench *b = ctx;
	const struct sp_rec_hdr *h = data;

	b->records++;
#ifdef SP_HAS_STACKS
	if (size >= sizeof(struct sp_stack_rec) && h->type == SP_REC_STACK) {
		b->stacks++;
		b->frames += ((const struct sp_stack_rec *)data)->nr_native;
	}
#endif
	(void)h;
	return 0;
}

/*
 * The calls made depth frames down a chain of frame pointers, so a stack
 * walk has that many frames to go (a server's stack is rarely shallower).
 */
static __attribute__((noinline, optimize("no-omit-frame-pointer"))) __u64
time_deep(int depth, __u32 calls)
{
	volatile __u64 ns;

	if (depth > 0)
		ns = time_deep(depth - 1, calls);
	else
		ns = calibrate__time_calls(calls);
	return ns;
}

/*
 * The calls made below a frame whose caller keeps data in rbp, as libcudart
 * does: a walk up the frame pointers reaches a value that is no address.
 */
__u64 time_below_data_rbp(__u32 calls);
#ifdef __x86_64__
__asm__(".text\n"
	".globl time_below_data_rbp\n"
	".type time_below_data_rbp, @function\n"
	"time_below_data_rbp:\n"
	"	push %rbp\n"
	"	mov $0x10000, %rbp\n"	/* a low page no program maps */
	"	call calibrate__time_calls\n"
	"	pop %rbp\n"
	"	ret\n"
	".size time_below_data_rbp, . - time_below_data_rbp\n");
#else
__u64 time_below_data_rbp(__u32 calls)
{
	return calibrate__time_calls(calls);
}
#endif

static __u64 time_calls_of(const struct variant *v, __u32 calls)
{
	if (v->depth)
		return time_deep(v->depth, calls);
	if (v->data_in_rbp)
		return time_below_data_rbp(calls);
	return calibrate__time_calls(calls);
}

/* The reader as specprobe runs it: poll with a 100 ms timeout, then consume. */
static void *reader(void *arg)
{
	struct bench *b = arg;

	while (!b->stop) {
		ring_buffer__poll(b->rings, 100);
		ring_buffer__consume(b->rings);
	}
	return NULL;
}

static struct bpf_program *ladder_prog(struct bench *b, const char *name)
{
	return bpf_object__find_program_by_name(b->ladder->obj, name);
}

/* Attach variant v: up to two link fds in fds (-1 when unused); 0 or -errno. */
static int attach(struct bench *b, const struct variant *v, int fds[2])
{
	fds[0] = fds[1] = -1;
	if (v->row) {
		const struct catalog_entry *e = catalog__find(v->row);
		struct sp_probe_spec spec;
		__u32 key = 0;

		if (!e)
			return -ENOENT;
		catalog__spec(e, &spec);
		if (v->sp_stack)
			spec.flags |= SP_SPEC_STACK;
		if (bpf_map_update_elem(bpf_map__fd(b->sp->maps.specs), &key, &spec, BPF_ANY))
			return -errno;
#ifdef SP_HAS_SESSIONS
		if (v->sp_ret == SP_RET_SESSION) {
			__u64 cookie = 0;

			fds[0] = multilink__create(bpf_program__fd(b->sp->progs.on_session), b->path,
						   &b->offset, &cookie, 1, MULTILINK_SESSION);
			return fds[0] < 0 ? fds[0] : 0;
		}
#endif
		fds[0] = link_multi(b, b->sp->progs.on_entry, 0);
		if (fds[0] >= 0 && v->sp_ret)
			fds[1] = link_multi(b, b->sp->progs.on_return, 1);
	} else if (v->entry) {
		fds[0] = link_multi(b, ladder_prog(b, v->entry), 0);
		if (fds[0] >= 0 && v->ret)
			fds[1] = link_multi(b, ladder_prog(b, v->ret), 1);
	}
	if (fds[0] < -1 || fds[1] < -1)
		return fds[0] < -1 ? fds[0] : fds[1];
	return 0;
}

static void detach(int fds[2])
{
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Program ids of variant v's entry and return programs (0: none). */
static void prog_fds(struct bench *b, const struct variant *v, int out[2])
{
	out[0] = out[1] = -1;
	if (v->row) {
		out[0] = bpf_program__fd(b->sp->progs.on_entry);
		if (v->sp_ret)
			out[1] = bpf_program__fd(b->sp->progs.on_return);
#ifdef SP_HAS_SESSIONS
		if (v->sp_ret == SP_RET_SESSION) {
			out[0] = bpf_program__fd(b->sp->progs.on_session);
			out[1] = -1;
		}
#endif
	} else if (v->entry) {
		out[0] = bpf_program__fd(ladder_prog(b, v->entry));
		if (v->ret)
			out[1] = bpf_program__fd(ladder_prog(b, v->ret));
	}
}

static void prog_stats(int fd, __u64 *run_ns, __u64 *runs)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	*run_ns = *runs = 0;
	if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len)) {
		*run_ns = info.run_time_ns;
		*runs = info.run_cnt;
	}
}

static double time_variant(struct bench *b, const struct variant *v, __u32 calls, int stats)
{
	__u64 before[2][2], after[2][2], ns;
	int fds[2], progs[2], ret;

	ret = attach(b, v, fds);
	if (ret) {
		fprintf(stderr, "attaching %s: %s\n", v->name, strerror(-ret));
		exit(1);
	}
	calibrate__time_calls(calls / 10 + 1);	/* thread state made, caches warm */
	prog_fds(b, v, progs);
	for (int i = 0; i < 2; i++)
		prog_stats(progs[i], &before[i][0], &before[i][1]);
	b->stacks = b->frames = 0;
	ns = time_calls_of(v, calls);
	for (int i = 0; i < 2; i++)
		prog_stats(progs[i], &after[i][0], &after[i][1]);
	detach(fds);
	if (stats) {
		printf("{\"stats\":\"%s\",\"ns\":%.2f", v->name, (double)ns / calls);
		if (b->stacks)
			printf(",\"frames\":%.1f", (double)b->frames / b->stacks);
		for (int i = 0; i < 2; i++) {
			__u64 runs = after[i][1] - before[i][1];

			printf(",\"%s_prog_ns\":%.2f", i ? "return" : "entry",
			       runs ? (double)(after[i][0] - before[i][0]) / runs : 0.0);
		}
		printf("}\n");
	}
	return (double)ns / calls;
}

/*
 * Mark this process traced in a loaded object, whichever filter it has: a
 * "traced" hash (older builds, run as BASE) or bits in the global traced_bits.
 */
static int trace_self(struct bpf_object *obj, __u32 self)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "traced");
	const struct btf_var_secinfo *var;
	const struct btf_type *sec;
	struct btf *btf;
	__u8 one = 1;
	__u64 *bits;
	size_t size;

	if (map)
		return bpf_map_update_elem(bpf_map__fd(map), &self, &one, BPF_ANY) ? -errno : 0;
	btf = bpf_object__btf(obj);
	bpf_object__for_each_map(map, obj) {
		const char *name = bpf_map__name(map);

		if (strlen(name) < 4 || strcmp(name + strlen(name) - 4, ".bss"))
			continue;
		sec = btf__type_by_id(btf, btf__find_by_name_kind(btf, ".bss", BTF_KIND_DATASEC));
		bits = (__u64 *)bpf_map__initial_value(map, &size);
		if (!sec || !bits)
			return -ENOENT;
		var = btf_var_secinfos(sec);
		for (int i = 0; i < btf_vlen(sec); i++, var++) {
			if (strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, var->type)->name_off),
				   "traced_bits"))
				continue;
			bits = (__u64 *)((char *)bits + var->offset);
			__atomic_fetch_or(&bits[self / 64], 1ULL << (self & 63), __ATOMIC_SEQ_CST);
			return 0;
		}
	}
	return -ENOENT;
}

static int open_all(struct bench *b)
{
	__u32 self = getpid();
	__u8 one = 1;
	int ret;

	ret = calibrate__target(b->path, sizeof(b->path), &b->offset);
	if (ret)
		return ret;
	b->sp = specprobe_bpf__open();
	b->ladder = hitcost_bpf__open();
	if (!b->sp || !b->ladder)
		return -errno;
	b->sp->rodata->wake_bytes = (64ull << 20) / 8;	/* as specprobe sets it: ring / 8 */
	if (getenv("HITCOST_RING_MB")) {	/* the ladder's ring: does its size matter? */
		__u32 mb = strtoul(getenv("HITCOST_RING_MB"), NULL, 10);

		bpf_map__set_max_entries(b->ladder->maps.ring, mb << 20);
		bpf_map__set_max_entries(b->sp->maps.events, mb << 20);
		b->sp->rodata->wake_bytes = (mb << 20) / 8;
	}
	bpf_program__set_expected_attach_type(b->sp->progs.on_entry, MULTI_ATTACH);
	bpf_program__set_expected_attach_type(b->sp->progs.on_return, MULTI_ATTACH);
#ifdef SP_HAS_SESSIONS
	bpf_program__set_expected_attach_type(b->sp->progs.on_session, UPROBE_SESSION_ATTACH);
#endif
	for (int i = 0; i < NR_VARIANTS; i++) {
		const char *names[2] = { variants[i].entry, variants[i].ret };

		for (int k = 0; k < 2; k++)
			if (names[k])
				bpf_program__set_expected_attach_type(ladder_prog(b, names[k]),
								      MULTI_ATTACH);
	}
	ret = specprobe_bpf__load(b->sp);
	if (!ret)
		ret = hitcost_bpf__load(b->ladder);
	if (ret)
		return ret;
	ret = trace_self(b->sp->obj, self);
	if (!ret)
		ret = trace_self(b->ladder->obj, self);
	if (!ret)
		ret = bpf_map_update_elem(bpf_map__fd(b->ladder->maps.traced), &self, &one, BPF_ANY)
			? -errno : 0;
	if (ret)
		return ret;
	b->rings = ring_buffer__new(bpf_map__fd(b->sp->maps.events), count_record, b, NULL);
	if (!b->rings || ring_buffer__add(b->rings, bpf_map__fd(b->ladder->maps.ring),
					  count_record, b))
		return -errno;
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	__u32 calls = argc > 2 ? strtoul(argv[2], NULL, 10) : 200000;
	__u32 stats_calls = argc > 3 ? strtoul(argv[3], NULL, 10) : calls;
	struct bench b = { 0 };
	pthread_t thread;
	int ret, stats_fd;

	if (rounds < 1 || calls < 1000 || (stats_calls && stats_calls < 1000)) {
		fprintf(stderr, "usage: hitcost ROUNDS CALLS [STATS_CALLS] (CALLS >= 1000)\n");
		return 2;
	}
	ret = open_all(&b);
	if (ret) {
		fprintf(stderr, "loading the BPF programs: %s (root? kernel 6.6+?)\n", strerror(-ret));
		return 1;
	}
	pthread_create(&thread, NULL, reader, &b);
	/* rounds rotate the order, so no variant always runs right after another */
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < NR_VARIANTS; k++) {
			const struct variant *v = &variants[(k + r) % NR_VARIANTS];

			printf("{\"round\":%d,\"variant\":\"%s\",\"ns\":%.2f}\n", r, v->name,
			       time_variant(&b, v, calls, 0));
		}
		fflush(stdout);
	}
	/* statistics cost time of their own: a pass apart */
	stats_fd = stats_calls ? bpf_enable_stats(BPF_STATS_RUN_TIME) : -1;
	if (stats_calls && stats_fd < 0)
		fprintf(stderr, "no BPF run-time statistics: %s\n", strerror(errno));
	for (int k = 1; stats_fd >= 0 && k < NR_VARIANTS; k++)
		time_variant(&b, &variants[k], stats_calls, 1);
	if (stats_fd >= 0)
		close(stats_fd);
	b.stop = 1;
	pthread_join(thread, NULL);
	ring_buffer__consume(b.rings);
	printf("{\"records\":%llu}\n", (unsigned long long)b.records);
	ring_buffer__free(b.rings);
	hitcost_bpf__destroy(b.ladder);
	specprobe_bpf__destroy(b.sp);
	return 0;
}
