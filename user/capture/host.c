// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/resource.h>
#include <bpf/libbpf.h>
#include "host.h"
#include "log.h"

int host__check_bpf(void)
{
	if (geteuid() != 0) {
		log_error("tracing needs root (BPF and uprobes): run specprobe with sudo");
		return -1;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		log_error("no kernel BTF at /sys/kernel/btf/vmlinux: the kernel needs CONFIG_DEBUG_INFO_BTF=y");
		return -1;
	}
	return 0;
}

static struct rlimit nofile_at_start;
static bool nofile_saved;

bool host__has_targets(const struct target_args *targets)
{
	return targets->nr_pids || targets->nr_libs || targets->cmd;
}

void host__restore_nofile(void)
{
	if (nofile_saved)
		setrlimit(RLIMIT_NOFILE, &nofile_at_start);
}

void host__raise_nofile(void)
{
	struct rlimit lim;

	if (getrlimit(RLIMIT_NOFILE, &lim))
		return;
	nofile_at_start = lim;
	nofile_saved = true;
	lim.rlim_cur = lim.rlim_max;
	/* root may raise the hard limit too; an uprobe needs one or two descriptors */
	if (lim.rlim_max < 65536) {
		struct rlimit want = { 65536, 65536 };

		if (!setrlimit(RLIMIT_NOFILE, &want))
			return;
	}
	setrlimit(RLIMIT_NOFILE, &lim);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !log_verbose)
		return 0;
	if (!log_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void host__setup_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
