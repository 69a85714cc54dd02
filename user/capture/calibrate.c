// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "calibrate.h"

/* Written in assembly so the compiler cannot drop the frame the driver's entry points have. */
int sp_calibration_target(int x);
__asm__(".text\n"
	".globl sp_calibration_target\n"
	".type sp_calibration_target, @function\n"
	"sp_calibration_target:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	lea 1(%rdi), %eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size sp_calibration_target, .-sp_calibration_target\n");

int calibrate__target(char *path, size_t path_sz, __u64 *offset)
{
	unsigned long long start, end, pgoff, addr = (unsigned long)sp_calibration_target;
	char line[PATH_MAX + 128];
	ssize_t len;
	int ret = -ENOENT;
	FILE *f;

	len = readlink("/proc/self/exe", path, path_sz - 1);
	if (len < 0)
		return -errno;
	path[len] = '\0';
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %*s %llx", &start, &end, &pgoff) != 3)
			continue;
		if (addr >= start && addr < end) {
			*offset = addr - start + pgoff;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* A frame pointer, as the callers of a driver usually keep: a stack walk goes through it. */
__attribute__((optimize("no-omit-frame-pointer"))) __u64 calibrate__time_calls(__u32 calls)
{
	/* through a volatile pointer: every call is made */
	int (*volatile fn)(int) = sp_calibration_target;
	struct timespec t0, t1;
	int acc = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (__u32 i = 0; i < calls; i++)
		acc = fn(acc);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0.tv_sec) * 1000000000ull + t1.tv_nsec - t0.tv_nsec;
}
