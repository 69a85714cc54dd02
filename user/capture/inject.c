// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A call on the stopped thread (inject.h): the thread's state goes below its
 * stack pointer as a signal frame (its registers, XSAVE area and signal mask),
 * its registers are set to call a function, and the function's return leads
 * into rt_sigreturn over that frame. The first call, mmap of one code page,
 * returns straight into libc's sigreturn trampoline; later ones go through a
 * stub in that page that stores the result first. specprobe watches the
 * thread's system calls: at each rt_sigreturn it reads the result and either
 * sets up the next call (that rt_sigreturn skipped) or lets it run, which puts
 * the thread back. A specprobe killed at any point leaves a thread that runs
 * on into one of those rt_sigreturns.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include "elfsyms.h"
#include "gpurings.h"
#include "gpushm.h"
#include "inject.h"

#define CALL_LIMIT_NS (5ull * 1000000000)	/* a call not back by then is abandoned */
#define STOP_TRIES 40		/* interrupts tried until one finds a thread at rest */
#define STACK_NEEDED (64u << 10)	/* below the stack pointer, for dlopen's own use */
#define FRAME_NEEDED (24u << 10)	/* the frame with the largest XSAVE area, and the data */
#define XSTATE_MAX (64u << 10)
#define NR_RT_SIGRETURN 15
#ifndef FP_XSTATE_MAGIC1
#define FP_XSTATE_MAGIC1 0x46505853u
#endif
#ifndef FP_XSTATE_MAGIC2
#define FP_XSTATE_MAGIC2 0x46505845u
#endif
#define UC_FP_XSTATE 0x1
#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#define K_ERESTARTSYS 512
#define K_ERESTARTNOINTR 513
#define K_ERESTARTNOHAND 514
#define K_ERESTART_RESTARTBLOCK 516
#define NR_RESTART_SYSCALL 219
#define STUB_TAG "specprobe-inject-stub-1"
#define MAX_PENDING 8

/* glibc's __restore_rt: mov $15, %rax; syscall */
static const unsigned char restore_rt[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };

/* call *%rbx; mov %rax, (%r12); mov %r13, %rsp; mov $15, %eax; syscall; ud2 */
static const unsigned char stub_code[] = {
	0xff, 0xd3, 0x49, 0x89, 0x04, 0x24, 0x4c, 0x89, 0xec, 0xb8, 0x0f, 0x00, 0x00, 0x00,
	0x0f, 0x05, 0x0f, 0x0b,
};
#define STUB_TAG_AT 32		/* the tag after the code: a page of ours, for a later attach */

/* The kernel's x86-64 signal frame, from rt_sigreturn's point of view. */
struct k_sigcontext {
	__u64 r8, r9, r10, r11, r12, r13, r14, r15;
	__u64 rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	__u16 cs, gs, fs, ss;
	__u64 err, trapno, oldmask, cr2;
	__u64 fpstate;
	__u64 reserved1[8];
};

struct k_ucontext {
	__u64 uc_flags;
	__u64 uc_link;
	__u64 ss_sp;
	__s32 ss_flags;
	__u32 ss_pad;
	__u64 ss_size;
	struct k_sigcontext mc;
	__u64 uc_sigmask;
};

_Static_assert(sizeof(struct k_sigcontext) == 256, "sigcontext layout");
_Static_assert(sizeof(struct k_ucontext) == 304, "ucontext layout");

/* Blocking system calls a thread at rest sits in, holding no lock of its own. */
static const long at_rest[] = {
	SYS_futex, SYS_poll, SYS_epoll_wait, SYS_select, SYS_nanosleep, SYS_clock_nanosleep,
	SYS_read, SYS_ioctl, SYS_wait4, SYS_accept, SYS_accept4, SYS_recvfrom, SYS_recvmsg,
	SYS_sched_yield, SYS_pause,
};

struct mapping {
	__u64 start, end, pgoff;
	char perms[5];
	char path[512];
};

struct maps {
	struct mapping *m;
	size_t nr;
};

struct target {
	pid_t pid, tid;
	int mem;			/* /proc/PID/mem */
	struct maps maps;
	char *err;
	size_t err_sz;
	/* in the process */
	__u64 fn_mmap, fn_errno, fn_memfd, fn_dlopen, fn_close, trampoline;
	__u64 stub, slot, frame, data, call_sp;
	bool seized;
	bool moved;		/* its registers were changed: it must go through its frame */
	bool at_sigreturn;	/* stopped entering an rt_sigreturn over its frame */
	struct user_regs_struct saved;
	int pending[MAX_PENDING];	/* signals that came during the calls, sent again after */
	int nr_pending;
};

static int fail(struct target *t, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct target *t, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->err, t->err_sz, fmt, ap);
	va_end(ap);
	return ret;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int read_maps(pid_t pid, struct maps *out)
{
	char path[64], line[1024];
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	out->nr = 0;
	while (fgets(line, sizeof(line), f)) {
		struct mapping mp = { 0 };
		int at = 0;

		if (sscanf(line, "%llx-%llx %4s %llx %*s %*s %n", (unsigned long long *)&mp.start,
			   (unsigned long long *)&mp.end, mp.perms,
			   (unsigned long long *)&mp.pgoff, &at) < 4)
			continue;
		snprintf(mp.path, sizeof(mp.path), "%s", line + at);
		mp.path[strcspn(mp.path, "\n")] = '\0';
		if (out->nr == cap) {
			struct mapping *grown = realloc(out->m, (cap ? cap * 2 : 256) * sizeof(mp));

			if (!grown) {
				fclose(f);
				return -ENOMEM;
			}
			out->m = grown;
			cap = cap ? cap * 2 : 256;
		}
		out->m[out->nr++] = mp;
	}
	fclose(f);
	return 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The first mapping (file offset 0) of a library whose file name starts with prefix. */
static const struct mapping *find_lib(const struct maps *mp, const char *prefix)
{
	for (size_t i = 0; i < mp->nr; i++)
		if (!mp->m[i].pgoff && mp->m[i].path[0] == '/' &&
		    !strncmp(base_name(mp->m[i].path), prefix, strlen(prefix)))
			return &mp->m[i];
	return NULL;
}

static const struct mapping *find_named(const struct maps *mp, const char *needle)
{
	for (size_t i = 0; i < mp->nr; i++)
		if (!mp->m[i].pgoff && strstr(mp->m[i].path, needle))
			return &mp->m[i];
	return NULL;
}

/* Where file offset off of lib's file is mapped; 0: nowhere. */
static __u64 file_addr(const struct maps *mp, const struct mapping *lib, __u64 off)
{
	for (size_t i = 0; i < mp->nr; i++) {
		const struct mapping *m = &mp->m[i];

		if (!strcmp(m->path, lib->path) && off >= m->pgoff &&
		    off < m->pgoff + (m->end - m->start))
			return m->start + off - m->pgoff;
	}
	return 0;
}

/* Functions of a mapped library, read through its mapping (any mount namespace). */
static int lib_syms(const struct target *t, const struct mapping *lib, struct elf_syms *syms)
{
	char path[96], why[256];

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", t->pid,
		 (unsigned long long)lib->start, (unsigned long long)lib->end);
	return elf_syms__load(path, syms, why, sizeof(why));
}

static __u64 sym_addr(const struct target *t, const struct mapping *lib,
		      const struct elf_syms *syms, const char *name)
{
	const struct elf_func *f = elf_syms__find(syms, name);

	return f ? file_addr(&t->maps, lib, f->offset) : 0;
}

static int mem_write(const struct target *t, __u64 addr, const void *buf, size_t len)
{
	return pwrite(t->mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EFAULT;
}

static int mem_read(const struct target *t, __u64 addr, void *buf, size_t len)
{
	return pread(t->mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EFAULT;
}

/* libc's sigreturn trampoline, found by its bytes in libc's code. */
static __u64 find_trampoline(const struct target *t, const struct mapping *libc)
{
	for (size_t i = 0; i < t->maps.nr; i++) {
		const struct mapping *m = &t->maps.m[i];
		size_t len = m->end - m->start;
		unsigned char *buf;
		__u64 found = 0;

		if (strcmp(m->path, libc->path) || m->perms[2] != 'x' || len > (64u << 20))
			continue;
		buf = malloc(len);
		if (buf && !mem_read(t, m->start, buf, len)) {
			unsigned char *hit = memmem(buf, len, restore_rt, sizeof(restore_rt));

			if (hit)
				found = m->start + (hit - buf);
		}
		free(buf);
		if (found)
			return found;
	}
	return 0;
}

static bool status_field(pid_t pid, pid_t tid, const char *field, char *out, size_t out_sz)
{
	char path[80], line[512];
	size_t len = strlen(field);
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, len) || line[len] != ':')
			continue;
		snprintf(out, out_sz, "%s", line + len + 1 + strspn(line + len + 1, " \t"));
		out[strcspn(out, "\n")] = '\0';
		found = true;
	}
	fclose(f);
	return found;
}

static bool rest_call(long nr)
{
	for (size_t i = 0; i < sizeof(at_rest) / sizeof(at_rest[0]); i++)
		if (at_rest[i] == nr)
			return true;
	return false;
}

/* The thread's system call as /proc says, -1 when running or in none. */
static long task_syscall(pid_t pid, pid_t tid)
{
	char path[80], buf[64];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	return nr;
}

/* A thread sitting in a blocking call, the main thread first: 0 when none. */
static pid_t pick_thread(pid_t pid)
{
	char path[64];
	struct dirent *e;
	pid_t best = 0;
	DIR *d;

	if (rest_call(task_syscall(pid, pid)))
		return pid;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	while (d && !best && (e = readdir(d))) {
		pid_t tid = atoi(e->d_name);

		if (tid > 0 && rest_call(task_syscall(pid, tid)))
			best = tid;
	}
	if (d)
		closedir(d);
	return best;
}

/* Wait for a stop of the thread; -ESRCH when it (or its process) is gone. */
static int wait_stop(pid_t tid, int *status, __u64 deadline)
{
	for (;;) {
		pid_t got = waitpid(tid, status, __WALL | WNOHANG);

		if (got == tid)
			return WIFSTOPPED(*status) ? 0 : -ESRCH;
		if (got < 0 && errno != EINTR)
			return -ESRCH;
		if (deadline && now_ns() > deadline)
			return -ETIMEDOUT;
		usleep(got == 0 ? 20 : 0);
	}
}

/* The registers the thread gets back, its interrupted system call to be made again. */
static void restart_regs(struct user_regs_struct *r)
{
	long ret = (long)r->rax;

	if ((long)r->orig_rax < 0)
		return;
	switch (-ret) {
	case K_ERESTARTSYS:
	case K_ERESTARTNOINTR:
	case K_ERESTARTNOHAND:
		r->rax = r->orig_rax;
		r->rip -= 2;
		break;
	case K_ERESTART_RESTARTBLOCK:
		r->rax = NR_RESTART_SYSCALL;
		r->rip -= 2;
		break;
	default:
		break;
	}
}

/*
 * The frame the thread returns through: under the red zone, the result slot
 * and the strings, then the XSAVE area and the ucontext, the calls' stack
 * below.
 */
static int write_frame(struct target *t)
{
	struct k_ucontext uc = { 0 };
	struct user_regs_struct r = t->saved;
	unsigned char *xs = malloc(XSTATE_MAX + 8);
	struct iovec iov = { xs, XSTATE_MAX };
	char mask[64];
	struct {
		__u32 magic1, extended_size;
		__u64 xfeatures;
		__u32 xstate_size;
	} __attribute__((packed)) sw = { 0 };
	__u32 xsize, magic2 = FP_XSTATE_MAGIC2;
	__u64 top = (r.rsp - 256) & ~63ull, fp;
	int ret;

	if (!xs)
		return fail(t, -ENOMEM, "out of memory");
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov)) {
		free(xs);
		return fail(t, -errno, "reading the thread's vector state: %s", strerror(errno));
	}
	if (iov.iov_len < 512 + 64) {
		free(xs);
		return fail(t, -ENOTSUP, "no XSAVE state to put back");
	}
	/*
	 * ptrace gives XCR0 in the software bytes; a signal frame has its own
	 * there: magic1, the frame's sizes and the features it holds.
	 */
	xsize = iov.iov_len;
	sw.xfeatures = *(__u64 *)(xs + 464);
	sw.magic1 = FP_XSTATE_MAGIC1;
	sw.extended_size = xsize + sizeof(magic2);
	sw.xstate_size = xsize;
	memset(xs + 464, 0, 48);
	memcpy(xs + 464, &sw, sizeof(sw));
	t->data = top - 512;
	t->slot = t->data;
	fp = (t->data - xsize - 8) & ~63ull;
	t->frame = (fp - sizeof(uc)) & ~15ull;
	t->call_sp = (t->frame - 128) & ~15ull;
	restart_regs(&r);
	uc.uc_flags = UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	uc.ss_flags = 3;	/* no valid mode: rt_sigreturn leaves the altstack as it is */
	uc.mc = (struct k_sigcontext){
		.r8 = r.r8, .r9 = r.r9, .r10 = r.r10, .r11 = r.r11, .r12 = r.r12, .r13 = r.r13,
		.r14 = r.r14, .r15 = r.r15, .rdi = r.rdi, .rsi = r.rsi, .rbp = r.rbp,
		.rbx = r.rbx, .rdx = r.rdx, .rax = r.rax, .rcx = r.rcx, .rsp = r.rsp,
		.rip = r.rip, .eflags = r.eflags, .cs = r.cs, .ss = r.ss, .fpstate = fp,
	};
	if (!status_field(t->pid, t->tid, "SigBlk", mask, sizeof(mask))) {
		free(xs);
		return fail(t, -ESRCH, "the thread is gone");
	}
	uc.uc_sigmask = strtoull(mask, NULL, 16);
	ret = mem_write(t, fp, xs, xsize) ?: mem_write(t, fp + xsize, &magic2, sizeof(magic2));
	ret = ret ?: mem_write(t, t->frame, &uc, sizeof(uc));
	free(xs);
	return ret ? fail(t, ret, "writing below the thread's stack pointer failed") : 0;
}

/* Registers that call fn(args) through the stub; the rt_sigreturn at its end puts the thread back. */
static void stub_regs(const struct target *t, struct user_regs_struct *r, __u64 fn,
		      const __u64 *args, int nr_args)
{
	*r = t->saved;
	r->rip = t->stub;
	r->rsp = t->call_sp;
	r->rbx = fn;
	r->r12 = t->slot;
	r->r13 = t->frame;
	r->rax = 0;
	r->orig_rax = -1;
	if (nr_args > 0)
		r->rdi = args[0];
	if (nr_args > 1)
		r->rsi = args[1];
	if (nr_args > 2)
		r->rdx = args[2];
}

static void keep_signal(struct target *t, int sig)
{
	if (t->nr_pending < MAX_PENDING)
		t->pending[t->nr_pending++] = sig;
}

/*
 * Run the thread until it enters rt_sigreturn, the end of every call; on the
 * way, the result of the system call nr when it exits. Signals that come
 * are held for later. 0 at that rt_sigreturn.
 */
static int run_to_sigreturn(struct target *t, long nr, __u64 *sys_ret)
{
	__u64 deadline = now_ns() + CALL_LIMIT_NS;

	for (;;) {
		struct __ptrace_syscall_info info;
		int status, sig = 0, ret;

		t->at_sigreturn = false;
		if (ptrace(PTRACE_SYSCALL, t->tid, 0, 0))
			return -ESRCH;
		ret = wait_stop(t->tid, &status, deadline);
		if (ret)
			return ret;
		sig = WSTOPSIG(status);
		if (sig != (SIGTRAP | 0x80)) {
			/* a signal for the thread: after the calls; a group or event stop: go on */
			if (status >> 16 == 0)
				keep_signal(t, sig);
			continue;
		}
		if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, (void *)sizeof(info), &info) <= 0)
			return -ESRCH;
		if (info.op == PTRACE_SYSCALL_INFO_ENTRY && info.entry.nr == NR_RT_SIGRETURN) {
			t->at_sigreturn = true;
			return 0;
		}
		if (info.op == PTRACE_SYSCALL_INFO_EXIT && nr >= 0 && sys_ret)
			*sys_ret = info.exit.rval;
	}
}

/* At an rt_sigreturn: skip it and call fn(args) through the stub; its result. */
static int call(struct target *t, __u64 fn, const __u64 *args, int nr_args, __u64 *result)
{
	struct user_regs_struct r;
	int ret;

	stub_regs(t, &r, fn, args, nr_args);
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r))
		return -ESRCH;
	t->moved = true;
	ret = run_to_sigreturn(t, -1, NULL);
	if (ret)
		return ret;
	return mem_read(t, t->slot, result, sizeof(*result));
}

/* A page of ours from an earlier attach: the stub at its start, the tag after. */
static __u64 find_stub(const struct target *t)
{
	for (size_t i = 0; i < t->maps.nr; i++) {
		const struct mapping *m = &t->maps.m[i];
		char buf[STUB_TAG_AT + sizeof(STUB_TAG)];

		if (m->end - m->start != 4096 || m->path[0] || strcmp(m->perms, "r-xp") ||
		    mem_read(t, m->start, buf, sizeof(buf)))
			continue;
		if (!memcmp(buf, stub_code, sizeof(stub_code)) &&
		    !memcmp(buf + STUB_TAG_AT, STUB_TAG, sizeof(STUB_TAG)))
			return m->start;
	}
	return 0;
}

/* The first call: mmap of the stub's page, returning through libc's trampoline. */
static int map_stub(struct target *t)
{
	struct user_regs_struct r = t->saved;
	unsigned char page[STUB_TAG_AT + sizeof(STUB_TAG)] = { 0 };
	__u64 addr = 0;
	int ret;

	r.rip = t->fn_mmap;
	r.rsp = t->frame - 8;	/* the return address, then the frame rt_sigreturn reads */
	r.rdi = 0;
	r.rsi = 4096;
	r.rdx = PROT_READ | PROT_EXEC;
	r.rcx = MAP_PRIVATE | MAP_ANONYMOUS;
	r.r8 = (__u64)-1;
	r.r9 = 0;
	r.rax = 0;
	r.orig_rax = -1;
	if (mem_write(t, r.rsp, &t->trampoline, sizeof(t->trampoline)))
		return fail(t, -EFAULT, "writing below the thread's stack pointer failed");
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r))
		return fail(t, -ESRCH, "the thread is gone");
	t->moved = true;
	ret = run_to_sigreturn(t, SYS_mmap, &addr);
	if (ret)
		return fail(t, ret, "mapping a page in it: %s", strerror(-ret));
	if ((long)addr < 0 || !addr)
		return fail(t, -ENOMEM, "mapping a page in it: %s", strerror(-(long)addr));
	memcpy(page, stub_code, sizeof(stub_code));
	memcpy(page + STUB_TAG_AT, STUB_TAG, sizeof(STUB_TAG));
	/* /proc/PID/mem writes through the page's protection, as a debugger does */
	if (mem_write(t, addr, page, sizeof(page)))
		return fail(t, -EFAULT, "writing its call stub failed");
	t->stub = addr;
	return 0;
}

static int write_file_into(const struct target *t, int fd_in_target)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", t->pid, fd_in_target);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	return fd < 0 ? -errno : gpu_rings__write_agent(fd);
}

/* The agent loaded from a memfd of the process: nothing lands on its filesystem. */
static int load_agent(struct target *t)
{
	static const char name[] = GPUSHM_AGENT_MEMFD;
	char path[64];
	__u64 args[2], fd, handle, closed;
	int ret;

	if (mem_write(t, t->data + 16, name, sizeof(name)))
		return fail(t, -EFAULT, "writing into its stack failed");
	args[0] = t->data + 16;
	args[1] = MFD_CLOEXEC;
	ret = call(t, t->fn_memfd, args, 2, &fd);
	if (ret || (long)fd < 0)
		return fail(t, ret ?: -EIO, "memfd_create in it failed");
	ret = write_file_into(t, (int)fd);
	if (ret)
		return fail(t, ret, "writing the agent into its memfd: %s", strerror(-ret));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)fd);
	if (mem_write(t, t->data + 64, path, strlen(path) + 1))
		return fail(t, -EFAULT, "writing into its stack failed");
	args[0] = t->data + 64;
	args[1] = RTLD_NOW | RTLD_LOCAL;
	ret = call(t, t->fn_dlopen, args, 2, &handle);
	args[0] = fd;
	ret = ret ?: call(t, t->fn_close, args, 1, &closed);
	if (ret)
		return fail(t, ret, "loading the agent: %s", strerror(-ret));
	if (!handle)
		return fail(t, -ENOEXEC, "its dlopen refused the agent (an older glibc than 2.34?)");
	return 0;
}

/* The agent's attach function in the process: its memfd mapping plus the symbol's offset. */
static __u64 attach_fn(struct target *t)
{
	const struct mapping *agent;
	struct elf_syms syms = { 0 };
	__u64 addr = 0;

	if (read_maps(t->pid, &t->maps))
		return 0;
	agent = find_named(&t->maps, "memfd:" GPUSHM_AGENT_MEMFD);
	if (agent && !lib_syms(t, agent, &syms))
		addr = sym_addr(t, agent, &syms, GPUSHM_ATTACH_FN);
	elf_syms__free(&syms);
	return addr;
}

/* What the process offers: its libc's functions and trampoline, CUDA, a stub from before. */
static int survey(struct target *t)
{
	const struct mapping *libc, *libdl;
	struct elf_syms syms = { 0 }, dl = { 0 };
	char field[256];

	if (status_field(t->pid, t->pid, "TracerPid", field, sizeof(field)) && atoi(field))
		return fail(t, -EPERM, "another tracer (pid %d) is attached to it", atoi(field));
	if (status_field(t->pid, t->pid, "x86_Thread_features", field, sizeof(field)) &&
	    strstr(field, "shstk"))
		return fail(t, -ENOTSUP, "it runs with a shadow stack, which an injected call "
				       "would break");
	if (read_maps(t->pid, &t->maps))
		return fail(t, -ESRCH, "its memory map cannot be read");
	libc = find_lib(&t->maps, "libc.so");
	if (!libc)
		libc = find_lib(&t->maps, "libc-");
	if (!libc)
		return fail(t, -ENOTSUP, "no libc.so in it (statically linked?): nothing to load "
				       "the agent with");
	if (!find_lib(&t->maps, "libcuda.so"))
		return fail(t, -EAGAIN, "no CUDA in it yet");
	if (lib_syms(t, libc, &syms))
		return fail(t, -ENOTSUP, "its libc's symbols cannot be read");
	t->fn_mmap = sym_addr(t, libc, &syms, "mmap");
	t->fn_errno = sym_addr(t, libc, &syms, "__errno_location");
	t->fn_memfd = sym_addr(t, libc, &syms, "memfd_create");
	t->fn_close = sym_addr(t, libc, &syms, "close");
	t->fn_dlopen = sym_addr(t, libc, &syms, "dlopen");
	elf_syms__free(&syms);
	/* before glibc 2.34 dlopen lives in libdl */
	libdl = t->fn_dlopen ? NULL : find_lib(&t->maps, "libdl.so");
	if (libdl && !lib_syms(t, libdl, &dl))
		t->fn_dlopen = sym_addr(t, libdl, &dl, "dlopen");
	elf_syms__free(&dl);
	if (!t->fn_mmap || !t->fn_errno || !t->fn_memfd || !t->fn_close || !t->fn_dlopen)
		return fail(t, -ENOTSUP, "its libc lacks mmap, memfd_create or dlopen (glibc "
				       "older than 2.27?)");
	t->trampoline = find_trampoline(t, libc);
	if (!t->trampoline)
		return fail(t, -ENOTSUP, "no sigreturn trampoline in its libc");
	t->stub = find_stub(t);
	return 0;
}

/* Seize a thread at rest and stop it inside its system call; -EAGAIN: none now. */
static int stop_thread(struct target *t)
{
	for (int i = 0; i < STOP_TRIES; i++) {
		int status, ret;

		t->tid = pick_thread(t->pid);
		if (!t->tid) {
			usleep(5000);
			continue;
		}
		if (ptrace(PTRACE_SEIZE, t->tid, 0, (void *)PTRACE_O_TRACESYSGOOD)) {
			if (errno == ESRCH)
				continue;
			return fail(t, -errno, "ptrace is not allowed (%s: Yama ptrace_scope, "
				    "seccomp or another tracer)", strerror(errno));
		}
		t->seized = true;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) ||
		    (ret = wait_stop(t->tid, &status, now_ns() + CALL_LIMIT_NS))) {
			t->seized = false;
			continue;	/* it exited: another */
		}
		if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->saved)) {
			t->seized = false;
			continue;
		}
		/* a signal came first, or it left its call meanwhile: let it go, try again */
		if (status >> 16 != PTRACE_EVENT_STOP || !rest_call((long)t->saved.orig_rax)) {
			ptrace(PTRACE_DETACH, t->tid, 0,
			       (void *)(long)(status >> 16 ? 0 : WSTOPSIG(status)));
			t->seized = false;
			usleep(2000);
			continue;
		}
		return 0;
	}
	return fail(t, -EAGAIN, "no thread of it sat in a blocking call");
}

/*
 * Room below the thread's stack pointer: for the frame and the calls; the
 * main thread's stack grows as the calls need, only the frame is written.
 */
static bool stack_room(const struct target *t)
{
	for (size_t i = 0; i < t->maps.nr; i++) {
		const struct mapping *m = &t->maps.m[i];

		if (t->saved.rsp > m->start && t->saved.rsp <= m->end)
			return t->saved.rsp - m->start >=
			       (strcmp(m->path, "[stack]") ? STACK_NEEDED : FRAME_NEEDED);
	}
	return false;
}

/* Put the thread back: rt_sigreturn runs over its frame; then the signals held. */
static void release(struct target *t)
{
	ptrace(PTRACE_DETACH, t->tid, 0, 0);
	t->seized = false;
	for (int i = 0; i < t->nr_pending; i++)
		syscall(SYS_tgkill, t->pid, t->tid, t->pending[i]);
}

/*
 * A call gone wrong or past its limit: the thread is stopped again and sent
 * to rt_sigreturn over its frame, abandoning the call.
 */
static void abandon(struct target *t)
{
	struct user_regs_struct r = t->saved;
	int status;

	if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) ||
	    wait_stop(t->tid, &status, now_ns() + CALL_LIMIT_NS))
		return;
	r.rip = t->trampoline;
	r.rsp = t->frame;
	r.orig_rax = -1;
	ptrace(PTRACE_SETREGS, t->tid, 0, &r);
	ptrace(PTRACE_DETACH, t->tid, 0, 0);
	t->seized = false;
}

/*
 * For the tests of what happens mid-injection: SPECPROBE_TEST_INJECT_PAUSE_MS
 * holds the thread stopped this long, with the agent loaded and not attached.
 */
static void test_pause(void)
{
	const char *ms = getenv("SPECPROBE_TEST_INJECT_PAUSE_MS");

	if (ms && atoi(ms) > 0) {
		fprintf(stderr, "specprobe: injection paused for %d ms\n", atoi(ms));
		usleep(atoi(ms) * 1000);
	}
}

static int calls(struct target *t, const char *cupti, struct inject_result *out)
{
	__u64 errno_at = 0, agent_fn, ring, args[1];
	__u32 saved_errno = 0;
	int ret;

	if (!stack_room(t))
		return fail(t, -EAGAIN, "thread %d has too little stack below it", t->tid);
	ret = write_frame(t);
	if (ret)
		return ret;
	if (!t->stub) {
		ret = map_stub(t);
		if (ret)
			return ret;
	} else {
		/* the stub is there: its first call starts from this stop */
		struct user_regs_struct r;

		stub_regs(t, &r, t->fn_errno, NULL, 0);
		if (ptrace(PTRACE_SETREGS, t->tid, 0, &r))
			return fail(t, -ESRCH, "the thread is gone");
		t->moved = true;
		ret = run_to_sigreturn(t, -1, NULL);
		if (ret || mem_read(t, t->slot, &errno_at, sizeof(errno_at)))
			return fail(t, ret ?: -EFAULT, "its first call failed");
	}
	if (!errno_at && call(t, t->fn_errno, NULL, 0, &errno_at))
		return fail(t, -ESRCH, "__errno_location in it failed");
	if (mem_read(t, errno_at, &saved_errno, sizeof(saved_errno)))
		return fail(t, -EFAULT, "reading its errno failed");
	agent_fn = attach_fn(t);
	out->reused = agent_fn != 0;
	if (!agent_fn) {
		ret = load_agent(t);
		if (ret)
			return ret;
		agent_fn = attach_fn(t);
		if (!agent_fn)
			return fail(t, -ENOEXEC, "the agent loaded, yet its attach is not found");
	}
	test_pause();
	args[0] = 0;
	if (cupti) {
		if (mem_write(t, t->data + 128, cupti, strnlen(cupti, 255)) ||
		    mem_write(t, t->data + 128 + strnlen(cupti, 255), "", 1))
			return fail(t, -EFAULT, "writing into its stack failed");
		args[0] = t->data + 128;
	}
	ret = call(t, agent_fn, args, 1, &ring);
	if (ret)
		return fail(t, ret, "the agent's attach: %s", strerror(-ret));
	if (mem_write(t, errno_at, &saved_errno, sizeof(saved_errno)))
		return fail(t, -EFAULT, "putting its errno back failed");
	if ((long)ring == -EBUSY)
		return fail(t, -EBUSY, "its agent serves another specprobe (or came in at cuInit)");
	if ((long)ring < 0 && (long)ring > -4096)
		return fail(t, (int)(long)ring, "the agent's attach: %s", strerror(-(long)ring));
	out->ring_addr = ring;
	return 0;
}

int inject__agent(pid_t pid, const char *cupti, struct inject_result *out, char *err,
		  size_t err_sz)
{
	struct target t = { .pid = pid, .mem = -1, .err = err, .err_sz = err_sz };
	char path[64];
	__u64 stopped;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	t.mem = open(path, O_RDWR | O_CLOEXEC);
	if (t.mem < 0)
		ret = fail(&t, errno == ENOENT ? -ESRCH : -errno, "its memory cannot be opened: %s",
			   strerror(errno));
	ret = ret ?: survey(&t);
	ret = ret ?: stop_thread(&t);
	if (ret)
		goto out;
	stopped = now_ns();
	ret = calls(&t, cupti, out);
	/* untouched, or at its rt_sigreturn: let go; caught in a call: sent to its frame */
	if (t.seized && t.moved && !t.at_sigreturn)
		abandon(&t);
	else if (t.seized)
		release(&t);
	out->stop_ns = now_ns() - stopped;
	out->tid = t.tid;
out:
	if (t.mem >= 0)
		close(t.mem);
	free(t.maps.m);
	return ret;
}
