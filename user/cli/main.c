// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe: trace CUDA driver and NCCL calls of unmodified processes. */
#include <stdio.h>
#include <string.h>
#include <argp.h>
#include "cli.h"
#include "heap.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "record", cmd_record, "record calls of running processes to a file" },
	{ "dump", cmd_dump, "print a recording as text or JSON lines" },
	{ "report", cmd_report, "decode cycles, phases and graphs of a recording or a live run" },
	{ "diff", cmd_diff, "compare two recordings: cycle time, phases, setup; is the change real" },
	{ "top", cmd_top, "live view: cycles/s, flagged syncs and hung calls per rank" },
	{ "merge", cmd_merge, "merge recordings of several hosts or ranks onto one clock" },
	{ "export", cmd_export, "write a recording as a Perfetto trace (.pftrace)" },
	{ "list", cmd_list, "show which entry points were found, attached and missing" },
	{ "demo", cmd_demo, "trace the bundled simulated GPU server and show what was captured" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: specprobe COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\noptions:\n  -h, --help     this list\n  -V, --version  print specprobe's "
		"version\n\n'specprobe COMMAND --help' describes each command.\n");
}

int main(int argc, char **argv)
{
	/* a usage error exits 2, as an unknown command does (argp's default is 64) */
	argp_err_exit_status = 2;
	heap__tune();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("specprobe %s\n", SPECPROBE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		static char name[64];

		if (strcmp(argv[1], commands[i].name))
			continue;
		/* argp names the program after argv[0] in usage and errors */
		snprintf(name, sizeof(name), "specprobe %s", commands[i].name);
		argv[1] = name;
		return commands[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "specprobe: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
