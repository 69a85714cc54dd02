/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What tracing needs of this host: root, kernel BTF, file descriptors, libbpf's messages. */
#ifndef __HOST_H
#define __HOST_H

#include <stdbool.h>
#include "trace_args.h"

/* Root, BTF, tracefs-free uprobe prerequisites; 0 or -1 after printing why. */
int host__check_bpf(void);
/* Raise RLIMIT_NOFILE: every uprobe holds file descriptors. */
void host__raise_nofile(void);
/* Put back the limit found at start (in a launched command, before exec). */
void host__restore_nofile(void);
/* Anything to trace: pids, libraries or a command? */
bool host__has_targets(const struct target_args *targets);
/* Let libbpf's messages through only with -v. */
void host__setup_libbpf(void);

#endif /* __HOST_H */
