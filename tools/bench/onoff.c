// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * specprobe's own work, measured against the trap in one process: while a
 * specprobe record or top traces PID, flip PID's bit in the programs' traced set
 * every PERIOD ms. With the bit clear a hit takes the trap and one load, the
 * floor; with it set, everything specprobe does for a call. The target's cycle
 * times, split by the state they ran in and paired with the neighbouring periods
 * (tools/gpu/onoff_stats.py), give the ratio with far finer pairing than rounds
 * of attach and detach can.
 *   onoff -p PID [-t PERIOD_MS] [-d SECONDS] [-m MAP_ID] [-s] [-v VAR]    (root)
 * Prints "on|off MONOTONIC_NS" at every flip; leaves the bit set when done. The map
 * is the newest specprobe .bss unless -m names one. -s turns on the kernel's BPF
 * run-time statistics meanwhile and prints "prog NAME ON_RUNS ON_NS OFF_RUNS OFF_NS"
 * for specprobe's entry and return programs at the end: runs and time inside them
 * while the bit was set, and while it was clear. A build with a u64 array "prof" in
 * its .bss (a profiling build's counters) gets it printed at the end as "prof N...".
 * -v VAR flips the programs' u64 switch VAR (e.g. quiet_pinned) between 1 and 0
 * instead, with the bit left set: one of specprobe's ways against the other.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "specprobe.h"

#define BSS_NAME	"specprob.bss"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The map id's fd, its info in *info, if it is named like specprobe's .bss; else -1. */
static int open_bss(__u32 id, struct bpf_map_info *info)
{
	__u32 len = sizeof(*info);
	int fd = bpf_map_get_fd_by_id(id);

	if (fd < 0)
		return -1;
	memset(info, 0, sizeof(*info));
	if (!bpf_obj_get_info_by_fd(fd, info, &len) && !strcmp(info->name, BSS_NAME))
		return fd;
	close(fd);
	return -1;
}

/* want_id, or the newest map named like specprobe's .bss: its fd, info in *info. */
static int find_bss(__u32 want_id, struct bpf_map_info *info)
{
	__u32 id = 0, best = want_id;
	int fd;

	while (!want_id && !bpf_map_get_next_id(id, &id)) {
		fd = open_bss(id, info);
		if (fd >= 0) {
			close(fd);
			best = id;
		}
	}
	fd = best ? open_bss(best, info) : -1;
	return fd >= 0 ? fd : -ENOENT;
}

/* Where the variable name lies in the map's value, from the map's BTF; its size in *size. */
static long var_offset(const struct bpf_map_info *info, const char *name, __u32 *size)
{
	struct btf *btf = btf__load_from_kernel_by_id(info->btf_id);
	const struct btf_type *sec;
	const struct btf_var_secinfo *vs;
	long off = -ENOENT;

	if (!btf)
		return -errno;
	sec = btf__type_by_id(btf, info->btf_value_type_id);
	if (!sec || !btf_is_datasec(sec))
		goto out;
	vs = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *var = btf__type_by_id(btf, vs->type);

		if (var && !strcmp(btf__name_by_offset(btf, var->name_off), name)) {
			off = vs->offset;
			*size = vs->size;
			break;
		}
	}
out:
	btf__free(btf);
	return off;
}

static void set_bit_on(__u64 *word, __u64 bit, bool on)
{
	if (on)
		__atomic_fetch_or(word, bit, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_and(word, ~bit, __ATOMIC_SEQ_CST);
}

#define NR_PROGS	3

struct prog_stat {
	const char *name;
	__u64 cnt, ns;
};

/* Per program: the last reading, and the sums while on [1] and off [0]. */
struct prog_stats {
	struct prog_stat last[NR_PROGS], sum[2][NR_PROGS];
};

/* Run counts and time of every loaded program named like each of stats[]: summed. */
static void read_prog_stats(struct prog_stat *stats, int n)
{
	__u32 id = 0;

	for (int i = 0; i < n; i++)
		stats[i].cnt = stats[i].ns = 0;
	while (!bpf_prog_get_next_id(id, &id)) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			for (int i = 0; i < n; i++)
				if (!strcmp(info.name, stats[i].name)) {
					stats[i].cnt += info.run_cnt;
					stats[i].ns += info.run_time_ns;
				}
		close(fd);
	}
}

/* A flip: what ran since the last one counts to the state that held until now. */
static void stats_flip(struct prog_stats *ps, bool was_on)
{
	struct prog_stat now[NR_PROGS];

	memcpy(now, ps->last, sizeof(now));
	read_prog_stats(now, NR_PROGS);
	for (int i = 0; i < NR_PROGS; i++) {
		ps->sum[was_on][i].cnt += now[i].cnt - ps->last[i].cnt;
		ps->sum[was_on][i].ns += now[i].ns - ps->last[i].ns;
	}
	memcpy(ps->last, now, sizeof(now));
}

static void stats_print(const struct prog_stats *ps)
{
	for (int i = 0; i < NR_PROGS; i++)
		printf("prog %s %llu %llu %llu %llu\n", ps->last[i].name,
		       (unsigned long long)ps->sum[1][i].cnt, (unsigned long long)ps->sum[1][i].ns,
		       (unsigned long long)ps->sum[0][i].cnt, (unsigned long long)ps->sum[0][i].ns);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: onoff -p PID [-t PERIOD_MS] [-d SECONDS] [-m MAP_ID] [-s] [-v VAR]\n");
	exit(2);
}

/*
 * The .bss word to flip, mapped: pid's word of the traced set, or the u64 named var;
 * NULL after a message.
 */
static __u64 *map_word(unsigned long pid, const char *var, __u32 map_id,
		       struct bpf_map_info *info, void **mem)
{
	int fd = find_bss(map_id, info);
	__u32 size, want = var ? 8 : SP_PID_LIMIT / 8;
	long off;

	if (fd < 0) {
		fprintf(stderr, "onoff: no %s map: is specprobe tracing? (%s)\n", BSS_NAME,
			strerror(-fd));
		return NULL;
	}
	off = var_offset(info, var ? var : "traced_bits", &size);
	if (off < 0 || size != want || off + size > info->value_size) {
		fprintf(stderr, "onoff: map %u has no %s of %u bytes in its BTF\n", info->id,
			var ? var : "traced_bits", want);
		return NULL;
	}
	*mem = mmap(NULL, info->value_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*mem == MAP_FAILED) {
		fprintf(stderr, "onoff: mmap of map %u: %s\n", info->id, strerror(errno));
		return NULL;
	}
	return (__u64 *)((char *)*mem + off) + (var ? 0 : pid / 64);
}

/* A profiling build's counters, if its .bss has them. */
static void print_prof(const struct bpf_map_info *info, const void *mem)
{
	__u32 size;
	long off = var_offset(info, "prof", &size);

	if (off < 0 || off + size > info->value_size)
		return;
	printf("prof");
	for (__u32 i = 0; i < size / 8; i++)
		printf(" %llu", ((const unsigned long long *)((const char *)mem + off))[i]);
	printf("\n");
}

/* Flip until the time is up or a signal; the bit is left set. */
static void flip(__u64 *word, __u64 bit, unsigned long period_ms, unsigned long seconds,
		 bool stats)
{
	struct prog_stats ps = { .last = { { "on_entry" }, { "on_return" }, { "on_session" } } };
	__u64 end = now_ns() + seconds * 1000000000ull;
	int stats_fd = -1;
	bool on = true;

	if (stats) {
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0)
			fprintf(stderr, "onoff: BPF statistics: %s\n", strerror(errno));
		read_prog_stats(ps.last, NR_PROGS);
	}
	while (!stop && now_ns() < end) {
		struct timespec gap = { period_ms / 1000, (period_ms % 1000) * 1000000 };

		on = !on;
		set_bit_on(word, bit, on);
		if (stats_fd >= 0)
			stats_flip(&ps, !on);
		printf("%s %llu\n", on ? "on" : "off", (unsigned long long)now_ns());
		nanosleep(&gap, NULL);
	}
	set_bit_on(word, bit, true);
	printf("on %llu\n", (unsigned long long)now_ns());
	if (stats_fd >= 0) {
		stats_flip(&ps, on);
		stats_print(&ps);
	}
}

int main(int argc, char **argv)
{
	unsigned long pid = 0, period_ms = 250, seconds = 60, map_id = 0;
	const char *var = NULL;
	struct bpf_map_info info;
	bool stats = false;
	__u64 *word, bit;
	void *mem;
	int c;

	while ((c = getopt(argc, argv, "p:t:d:m:sv:")) != -1) {
		switch (c) {
		case 'p': pid = strtoul(optarg, NULL, 10); break;
		case 't': period_ms = strtoul(optarg, NULL, 10); break;
		case 'd': seconds = strtoul(optarg, NULL, 10); break;
		case 'm': map_id = strtoul(optarg, NULL, 10); break;
		case 's': stats = true; break;
		case 'v': var = optarg; break;
		default: usage();
		}
	}
	if (!pid || pid >= SP_PID_LIMIT || !period_ms)
		usage();
	word = map_word(pid, var, map_id, &info, &mem);
	if (!word)
		return 1;
	bit = var ? 1 : 1ULL << (pid % 64);
	if (!(*word & bit) && var) {
		fprintf(stderr, "onoff: %s is 0 in map %u: nothing to flip\n", var, info.id);
		return 1;
	}
	if (!(*word & bit)) {
		fprintf(stderr, "onoff: pid %lu is not traced by map %u\n", pid, info.id);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	flip(word, bit, period_ms, seconds, stats);
	print_prof(&info, mem);
	return 0;
}
