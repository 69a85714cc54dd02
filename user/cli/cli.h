/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Subcommands and the checks they share. */
#ifndef __CLI_H
#define __CLI_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>

#define SPECPROBE_VERSION "0.1.0"
#define MAX_PIDS 256
#define MAX_LIBS 16

/* What to trace: -p, --lib or -- CMD, shared by every tracing command. */
struct target_args {
	int pids[MAX_PIDS];
	int nr_pids;
	const char *libs[MAX_LIBS];
	int nr_libs;
	char **cmd;		/* -- CMD ARGS: started under trace; NULL-terminated */
	const char *user;	/* -u: run CMD as this user */
};

/* How to record: -o, --duration, --force, --ring-mb, shared by record and live report. */
struct recording_args {
	const char *output;
	unsigned long duration_s;	/* 0: until Ctrl-C or the processes exit */
	unsigned long ring_mb;		/* 0: the default, 64 */
	bool force;
};

/* argp child for the recording options; its input is a struct recording_args. */
extern const struct argp recording_argp;

/* argp child for -p, --lib, -u, -v and -- CMD; its input is a struct target_args. */
extern const struct argp target_argp;

int cmd_record(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* Append the pids of "1,2,3" to pids; 0 or -EINVAL. */
int cli__parse_pids(const char *arg, int *pids, int *nr_pids, int max_pids);
/* Strict non-negative integer parse; 0 or -EINVAL. */
int cli__parse_ulong(const char *arg, unsigned long *val);
/* Root, BTF, tracefs-free uprobe prerequisites; 0 or -1 after printing why. */
int cli__check_bpf(void);
/* Raise RLIMIT_NOFILE: every uprobe holds file descriptors. */
void cli__raise_nofile(void);
/* Put back the limit found at start (in a launched command, before exec). */
void cli__restore_nofile(void);
/* Anything to trace: pids, libraries or a command? */
bool cli__has_targets(const struct target_args *targets);
/* Let libbpf's messages through only with -v. */
void cli__setup_libbpf(void);

#endif /* __CLI_H */
