/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Subcommands and the options they share (argp). */
#ifndef __CLI_H
#define __CLI_H

#include <argp.h>
#include <stdbool.h>
#include <stddef.h>
#include "trace_args.h"

#define SPECPROBE_VERSION "0.1.0"
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
int cmd_export(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_merge(int argc, char **argv);

struct pipeline;
struct outfile;

/*
 * The export's steps, shared by export and record --perfetto. The trace is
 * opened first, when the caller chooses (written aside and renamed into
 * place once whole: never through a symlink, an existing file only with
 * force, never the recording input or a segment of it, by device and inode);
 * export__write reads the recording, writes and renames the trace, leaves
 * nothing on failure and frees p. Errors are logged in one line.
 */
int export__open_output(struct outfile *out, const char *path, bool force, const char *input);
struct pipeline *export__open_input(const char *input);
int export__write(struct pipeline *p, const char *input, struct outfile *out);

/* argp_parse with -h/--help and --usage added (argp's own give -? alone): 0 or -EINVAL. */
int cli__argp_parse(const struct argp *argp, int argc, char **argv);

/* A bare number where a command or recording is expected: a usage error suggesting -p. */
void cli__pid_hint(struct argp_state *state, const char *arg, const char *what);

/* An argument past "--": the command to start under trace (the -p/-- child takes it). */
bool cli__after_dashdash(const struct argp_state *state);

/* No -o on a live command: PREFIX-PID.sprb here (PID the first traced, or ours for -- CMD). */
void cli__default_output(struct recording_args *rec, const struct target_args *targets,
			 const char *prefix);

/* Append the pids of "1,2,3" to pids; 0 or -EINVAL. */
int cli__parse_pids(const char *arg, int *pids, int *nr_pids, int max_pids);

#endif /* __CLI_H */
