// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specprobe list: per library, the entry points found, attached and missing. */
#include <argp.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "cli.h"
#include "log.h"
#include "host.h"
#include "tracer.h"

static struct list_env {
	struct target_args targets;
	bool probes;
	bool no_attach;
} env;

static const char doc[] =
	"Show, per CUDA/NCCL library of the processes, which catalogued entry points\n"
	"were found, attached and missing.\n\n"
	"EXAMPLES:\n"
	"  specprobe list -p 4242\n"
	"  specprobe list --lib /usr/lib/x86_64-linux-gnu/libcuda.so.1 --probes\n"
	"  specprobe list -- python3 -c 'import torch; torch.zeros(1).cuda()'\n"
	"      (runs the command under trace; lists what it loaded once it exits)\n";

enum { OPT_NO_ATTACH = 256 };	/* long only: -n is top's --iterations */

static const struct argp_option options[] = {
	{ "probes", 'P', NULL, 0, "Also print every probe with its symbol and offset", 0 },
	{ "no-attach", OPT_NO_ATTACH, NULL, 0, "Resolve only; do not try attaching", 0 },
	{},
};

static const struct argp_child children[] = { { &target_argp, 0, NULL, 0 }, {} };

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'P':
		env.probes = true;
		break;
	case OPT_NO_ATTACH:
		env.no_attach = true;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &env.targets;
		break;
	case ARGP_KEY_END:
		if (!host__has_targets(&env.targets))
			argp_error(state, "give -p PID, --lib PATH or -- CMD");
		if (env.targets.cmd && env.no_attach)
			argp_error(state, "-- CMD runs the command under trace: it cannot be --no-attach");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int count_probes(const struct probe_set *ps, int lib, bool attached_only)
{
	int n = 0;

	for (int i = 0; i < ps->nr_probes; i++)
		n += ps->probes[i].lib == lib && (!attached_only || ps->probes[i].attached);
	return n;
}

static bool mapped(const struct targets *t, int lib)
{
	for (int i = 0; i < t->nr_maps; i++)
		if (t->maps[i].lib == (__u32)lib)
			return true;
	return false;
}

static void print_lib(const struct tracer *tr, int lib, bool attached)
{
	const struct target_lib *tl = &tr->targets.libs[lib];
	const struct probe_set *ps = &tr->probes;
	int found = 0, expected = 0, missing = 0;

	for (int i = 0; i < catalog_len; i++) {
		if (catalog[i].lib != tl->kind)
			continue;
		expected++;
		found += probes__has_entry(ps, lib, &catalog[i]);
	}
	printf("%s%s\n  build-id %s\n", tl->path,
	       env.targets.cmd && !mapped(&tr->targets, lib) ? " (probed in advance; never mapped)" : "",
	       ps->build_ids[lib][0] ? ps->build_ids[lib] : "none");
	printf("  found %d of %d catalogued entry points as %d probes; ", found, expected,
	       count_probes(ps, lib, false));
	if (attached)
		printf("attached %d\n", count_probes(ps, lib, true));
	else
		printf("not attached\n");
	for (int i = 0; i < catalog_len; i++) {
		if (catalog[i].lib != tl->kind || probes__has_entry(ps, lib, &catalog[i]))
			continue;
		printf("%s%s", missing++ ? " " : "  missing: ", catalog[i].name);
	}
	if (missing)
		putchar('\n');
	if (!env.probes)
		return;
	for (int i = 0; i < ps->nr_probes; i++) {
		const struct probe *p = &ps->probes[i];

		if (p->lib != lib)
			continue;
		printf("    %-40s +0x%-10llx %-16s %s%s\n", p->symbol, (unsigned long long)p->offset,
		       p->entry->completion ? "entry+completion" : "entry", p->attached ? "attached" : "-",
		       p->nr_aliases ? " (aliases share it)" : "");
	}
}

static int noop_record(void *ctx, const void *rec, size_t size)
{
	return 0;
}

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	exiting = 1;
}

/* Libraries the command dlopens are attached as it loads them: wait for it to finish. */
static int run_command(struct tracer *tr)
{
	if (tracer__release(tr))
		return -1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!exiting && !tracer__child_exited(tr)) {
		int ret = tracer__poll(tr, 100);

		if (ret && ret != -EINTR) {
			log_error("reading the ring buffer: %s", strerror(-ret));
			return -1;
		}
	}
	tracer__poll(tr, 0);
	if (tr->child_reaped && WIFEXITED(tr->child_status) && WEXITSTATUS(tr->child_status))
		log_warn("%s exited with status %d", env.targets.cmd[0],
			 WEXITSTATUS(tr->child_status));
	return 0;
}

int cmd_list(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, "[-- CMD [ARGS...]]", doc, children,
					  NULL, NULL };
	struct tracer_opts topts = { .ring_bytes = 1 << 16, .on_record = noop_record };
	struct tracer tr;
	bool attach;

	if (cli__argp_parse(&argp, argc, argv))
		return 2;
	attach = !env.no_attach && geteuid() == 0;
	if (!attach && !env.no_attach)
		log_warn("not root: resolving only, nothing attached");
	if (attach && host__check_bpf())
		return 1;
	host__setup_libbpf();
	host__raise_nofile();
	topts.targets = &env.targets;
	if (attach ? tracer__start(&tr, &topts) : tracer__resolve(&tr, &topts))
		return 1;
	if (env.targets.cmd && run_command(&tr)) {
		tracer__stop(&tr);
		return 1;
	}
	if (env.targets.nr_pids || env.targets.cmd)
		printf("%d process(es) traced\n", tr.targets.nr_tgids);
	for (int i = 0; i < tr.targets.nr_libs; i++)
		print_lib(&tr, i, attach);
	if (env.targets.cmd && !tr.targets.nr_maps)
		printf("%s mapped no libcuda.so or libnccl.so\n", env.targets.cmd[0]);
	tracer__stop(&tr);
	return 0;
}
