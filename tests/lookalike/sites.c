// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Syncs from known call sites, for the call-site tests:
 *   sites ALPHA BETA GO_FILE [GAMMA]
 * waits for GO_FILE, then calls cuStreamSynchronize ALPHA times from
 * site_alpha and BETA times from site_beta (through site_beta_outer), with a
 * launch before each sync (launches record no stack by default). Built with
 * frame pointers so the kernel can walk its stack. Then GAMMA times from
 * site_gamma, whose caller keeps data in rbp as code without frame pointers
 * does: a pointer to two words that change with every call. With SITES_EXEC=N
 * set, it then execs itself with N - 1, and the new image makes the same calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "lookalike.h"

static volatile int sink;

static void __attribute__((noinline)) launch(void)
{
	cuLaunchKernel((void *)0x1000, 1, 1, 1, 32, 1, 1, 0, (CUstream)0x50, NULL, NULL);
}

void __attribute__((noinline)) site_alpha(int n)
{
	for (int i = 0; i < n; i++) {
		launch();
		sink += cuStreamSynchronize((CUstream)0x50);
	}
}

void __attribute__((noinline)) site_beta(int n)
{
	for (int i = 0; i < n; i++) {
		launch();
		sink += cuStreamSynchronize((CUstream)0x51);
	}
}

void __attribute__((noinline)) site_beta_outer(int n)
{
	site_beta(n);
	sink++;
}

static volatile long gamma_words[2];

void __attribute__((noinline)) site_gamma(int n)
{
	for (int i = 0; i < n; i++) {
		gamma_words[0]++;
		gamma_words[1]++;
		launch();
		sink += cuStreamSynchronize((CUstream)0x52);
	}
}

/* fn(n) with data in rbp: push rbp, rbp = data, call, pop rbp. */
void call_with_data_rbp(void (*fn)(int), int n, volatile long *data);
#ifdef __x86_64__
__asm__(".text\n"
	".globl call_with_data_rbp\n"
	".type call_with_data_rbp, @function\n"
	"call_with_data_rbp:\n"
	"	push %rbp\n"
	"	mov %rdx, %rbp\n"
	"	mov %rdi, %rax\n"
	"	mov %esi, %edi\n"
	"	call *%rax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size call_with_data_rbp, . - call_with_data_rbp\n");
#else
void call_with_data_rbp(void (*fn)(int), int n, volatile long *data)
{
	fn(n);
}
#endif

/* The same program again, in the same process: its code lies elsewhere now (ASLR). */
static int exec_again(char **argv)
{
	const char *left = getenv("SITES_EXEC");
	char n[16];

	if (!left || atoi(left) <= 0)
		return 0;
	snprintf(n, sizeof(n), "%d", atoi(left) - 1);
	setenv("SITES_EXEC", n, 1);
	execv("/proc/self/exe", argv);
	perror("sites: exec");
	return 1;
}

int main(int argc, char **argv)
{
	int alpha, beta, gamma;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: sites ALPHA BETA GO_FILE [GAMMA]\n");
		return 2;
	}
	alpha = atoi(argv[1]);
	beta = atoi(argv[2]);
	gamma = argc == 5 ? atoi(argv[4]) : 0;
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (int i = 0; i < 3000 && access(argv[3], F_OK); i++)
		usleep(10000);
	site_alpha(alpha);
	site_beta_outer(beta);
	if (gamma)
		call_with_data_rbp(site_gamma, gamma, gamma_words);
	return exec_again(argv);
}
