// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* specsim-server options: defaults in env, strict numbers, checks at the end. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct env env = {
	.cycles = 100,
	.draft_k = 3,
	.draft_mode = DRAFT_PER_STEP,
	.draft_ns = 200000,
	.verify_ns = 1500000,
	.accept_ns = 100000,
	.extend_ns = 300000,
	.allreduce_ns = 20000,
	.host_ns = 30000,
	.ranks = 1,
	.batch_sizes = { 1, 2, 4, 8 },
	.nr_batch_sizes = 4,
	.layers = 4,
	.draft_kernels = 4,
	.eager = 3,
	.verify_pieces = 1,
	.accept_mode = ACCEPT_SYNC,
	.ready_fd = -1,
	.go_fd = -1,
};

enum {
	OPT_DRAFT_MODE = 256, OPT_DRAFT_US, OPT_VERIFY_US, OPT_ACCEPT_US, OPT_EXTEND_US,
	OPT_ALLREDUCE_US, OPT_HOST_US, OPT_BATCH_SIZES, OPT_BATCH, OPT_LAYERS, OPT_DRAFT_KERNELS,
	OPT_SERVE_METRICS, OPT_SERVE_FAULT,
	OPT_EAGER, OPT_PLANT_SYNC, OPT_PAGEABLE, OPT_FREE, OPT_ACCEPT_MODE, OPT_GPU_LOG,
	OPT_EXERCISE, OPT_READY, OPT_GO, OPT_WAIT_SIGNAL, OPT_DELAY, OPT_WAIT_AT, OPT_RATE,
	OPT_RATE_CALL, OPT_RATE_TRUTH, OPT_WORKER, OPT_READY_FD, OPT_GO_FD, OPT_UID_FILE,
	OPT_EXTRA_DRAFT, OPT_VERIFY_PIECES, OPT_BATCH_SCHEDULE, OPT_PLANT, OPT_CLEAN_SYNCS, OPT_HANG,
	OPT_TORCH, OPT_RANK_HINT, OPT_CAPTURE_ORDER, OPT_EAGER_LOOP, OPT_EAGER_SAME, OPT_EAGER_TRIM_JOINED,
	OPT_VERIFY_MODE, OPT_FOREVER, OPT_USAGE,
};

static const char doc[] =
	"Simulated EAGLE-style speculative decoding server over the look-alike libcuda.so.1 "
	"and libnccl.so.2.\n\n"
	"Per cycle: k draft cuGraphLaunch (or one, or eager kernels), the verify cuGraphLaunch "
	"(or its pieces), the accept (eager cuLaunchKernel, cuMemcpyDtoHAsync_v2 to pinned "
	"memory, a sync), then the draft-extend cuGraphLaunch.\n\n"
	"EXAMPLES:\n"
	"  specsim-server --cycles 200 --ground-truth /tmp/gt.jsonl\n"
	"  specsim-server --forever --serve-metrics vllm 8000 &   # specprobe top -p $!\n"
	"  specsim-server --ranks 4 --plant-sync 5 --ready-file r --go-file go\n"
	"  specsim-server --draft-mode eager --verify-pieces 2 --batch-schedule 1,4,4\n"
	"  specsim-server --plant ctx@draft-verify/5 --plant pageable-copy@accept\n"
	"  specsim-server --torch -k 5 --plant side-stream/2 --plant pageable-copy/3\n"
	"  specsim-server --eager-loop -k 6 --plant stream@draft-verify/4\n"
	"  specsim-server --verify-mode eager -k 4 --plant event@draft-verify/3\n"
	"  specsim-server --cycles 0 --rate-test 1000000\n";

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "Decode loop:", 1 },
	{ "cycles", 'n', "N", 0, "decode cycles (default 100: about 0.3 s)", 1 },
	{ "forever", OPT_FOREVER, NULL, 0,
	  "decode until stopped (SIGINT, SIGTERM), not --cycles: a target to attach to with "
	  "-p; the cycle under way ends and the truth is whole", 1 },
	{ "draft-k", 'k', "K", 0, "draft steps per cycle (default 3)", 1 },
	{ "draft-mode", OPT_DRAFT_MODE, "MODE", 0,
	  "per-step (one graph per draft step), one-graph, or eager (--draft-kernels "
	  "cuLaunchKernel per step, no graph) (default per-step)", 1 },
	{ "verify-mode", OPT_VERIFY_MODE, "MODE", 0,
	  "graph, or eager (the target's kernels launched one by one over k + 1 tokens, as "
	  "a batch too large for the captured graphs runs; accept then launches no kernel of "
	  "its own) (default graph)", 1 },
	{ "extra-draft-every", OPT_EXTRA_DRAFT, "N", 0,
	  "every N-th cycle one more draft step (k + 1 launches; 0 = never)", 1 },
	{ "verify-pieces", OPT_VERIFY_PIECES, "P", 0,
	  "the verify forward as P graphs captured apart, launched back to back (default 1)",
	  1 },
	{ "draft-us", OPT_DRAFT_US, "US", 0, "GPU time of one draft step (default 200)", 1 },
	{ "verify-us", OPT_VERIFY_US, "US", 0, "GPU time of the verify kernels (default 1500)", 1 },
	{ "accept-us", OPT_ACCEPT_US, "US", 0, "GPU time of the eager accept kernels (100)", 1 },
	{ "extend-us", OPT_EXTEND_US, "US", 0, "GPU time of draft-extend (default 300)", 1 },
	{ "allreduce-us", OPT_ALLREDUCE_US, "US", 0, "GPU time of one all-reduce (default 20)", 1 },
	{ "host-us", OPT_HOST_US, "US", 0,
	  "host time preparing inputs before each graph launch, slept (default 30)", 1 },
	{ "batch-sizes", OPT_BATCH_SIZES, "LIST", 0, "batch sizes captured (default 1,2,4,8)", 1 },
	{ "batch", OPT_BATCH, "B", 0, "batch size replayed (default: the first captured)", 1 },
	{ "batch-schedule", OPT_BATCH_SCHEDULE, "LIST", 0,
	  "batch size per cycle, LIST in turn (each among --batch-sizes)", 1 },
	{ "layers", OPT_LAYERS, "L", 0, "target layers, an all-reduce each (default 4)", 1 },
	{ "draft-kernels", OPT_DRAFT_KERNELS, "N", 0, "kernels per draft step (default 4)", 1 },
	{ "eager", OPT_EAGER, "N", 0, "eager cuLaunchKernel calls in accept (default 3)", 1 },
	{ "accept-mode", OPT_ACCEPT_MODE, "MODE", 0,
	  "sync (cuStreamSynchronize), event (record + cuEventSynchronize) or deferred "
	  "(the event of the previous cycle) (default sync)", 1 },
	{ "ranks", 'r', "R", 0, "tensor-parallel ranks, one process each (default 1)", 1 },
	{ "torch", OPT_TORCH, NULL, 0,
	  "PyTorch's loop (torch.compile reduce-overhead): everything on the legacy stream, "
	  "one graph per draft step, graph-input copies, a CPU scalar copied in and synced, "
	  "nonzero() and item() in accept", 1 },
	{ "eager-loop", OPT_EAGER_LOOP, NULL, 0,
	  "no CUDA graph (assisted generation, a server without graphs): per draft token the "
	  "draft's kernels, a copy to the host and a sync; the target's kernels over k + 1 "
	  "tokens and the accept sync; a KV-cache trim. k moves within [1, --draft-k]: +2 "
	  "after full acceptance, -1 after a rejection; with --torch as PyTorch runs it: the "
	  "legacy stream, item() into pinned memory, tolist() into pageable memory, the "
	  "trim as fill kernels", 1 },
	{ "eager-same", OPT_EAGER_SAME, NULL, 0,
	  "--eager-loop drafting with the target's kernels (draft = target)", 1 },
	{ "eager-trim-joined", OPT_EAGER_TRIM_JOINED, NULL, 0,
	  "--eager-loop with a trim of kernels alone, run straight into the next draft", 1 },
	{ "capture-order", OPT_CAPTURE_ORDER, "ORDER", 0,
	  "verify-first (every verify graph, then the drafts, as SGLang captures) or run "
	  "(each batch size's draft steps and then its verify, in the order of a cycle, "
	  "as torch.compile's cudagraph trees record them) (default verify-first)", 1 },
	{ NULL, 0, NULL, 0, "Planted problems:", 2 },
	{ "plant-sync", OPT_PLANT_SYNC, "N", 0,
	  "cuStreamSynchronize between draft and verify every N cycles", 2 },
	{ "pageable-copies", OPT_PAGEABLE, NULL, 0, "the accept copy goes to pageable memory", 2 },
	{ "free-in-loop", OPT_FREE, "N", OPTION_ARG_OPTIONAL,
	  "cuMemAlloc_v2 + cuMemFree_v2 after verify every N cycles (default 1)", 2 },
	{ "plant", OPT_PLANT, "KIND[@POS][/N]", 0,
	  "plant a call (repeatable). KIND: ctx, stream, event, sync-copy, pageable-copy, "
	  "unknown-host, free, alloc, legacy, poll, capture-sync, side-stream, side-stream-pre "
	  "(--torch). POS: draft-verify (default), after-verify, accept, extend, outside. N: "
	  "every N-th cycle (default 1; outside without /N: once, before the loop)", 2 },
	{ "hang", OPT_HANG, "RANK@CYCLE/MS", 0,
	  "before CYCLE every rank calls an eager all-reduce; RANK's blocks MS ms in it", 2 },
	{ "clean-syncs", OPT_CLEAN_SYNCS, NULL, 0,
	  "each cycle, syncs that wait for nothing: an event already complete, an idle stream",
	  2 },
	{ NULL, 0, NULL, 0, "Output and start:", 3 },
	{ "ground-truth", 'g', "FILE", 0,
	  "JSON Lines per rank: FILE.rankN, or FILE with %d replaced by the rank", 3 },
	{ "gpu-log", OPT_GPU_LOG, NULL, 0,
	  "add one line per simulated GPU work item (on by itself when CUDA_INJECTION64_PATH "
	  "is set)", 3 },
	{ "gpu-truth", OPT_GPU_LOG, NULL, OPTION_ALIAS, NULL, 3 },
	{ "exercise", OPT_EXERCISE, NULL, 0, "call every entry point once before the loop", 3 },
	{ "ready-file", OPT_READY, "FILE", 0, "created with the pids once set up", 3 },
	{ "go-file", OPT_GO, "FILE", 0, "start once FILE exists", 3 },
	{ "wait-start", OPT_GO, "FILE", OPTION_ALIAS, NULL, 3 },
	{ "wait-signal", OPT_WAIT_SIGNAL, NULL, 0, "start on SIGUSR1 (to the first pid)", 3 },
	{ "start-delay-ms", OPT_DELAY, "MS", 0, "sleep before starting", 3 },
	{ "wait-at", OPT_WAIT_AT, "WHERE", 0,
	  "loop (after capture, default) or init (before cuInit)", 3 },
	{ "rank-hint", OPT_RANK_HINT, "HOW", 0,
	  "what each rank process shows of its rank: none (default), title (SGLang's "
	  "sglang::scheduler_TPn in its cmdline and comm) or environ (RANK, LOCAL_RANK, "
	  "WORLD_SIZE; --ranks 2 and more)", 3 },
	{ "quiet", 'q', NULL, 0, "no summary on stdout", 3 },
	{ "serve-metrics", OPT_SERVE_METRICS, "vllm|sglang PORT", 0,
	  "rank 0 answers GET /metrics on PORT (all addresses) in that server's Prometheus "
	  "format: drafts, draft and accepted tokens (vllm), accept length and rate gauges "
	  "(sglang), generated tokens; one request decoded, each cycle's accepted tokens drawn "
	  "from 0..k and written to the truth ({\"accept_cycle\":N,\"accepted\":A})", 3 },
	{ "serve-metrics-fault", OPT_SERVE_FAULT, "KIND", 0,
	  "html (an HTML page), huge (a 9 MiB body), slow (answers after 2 s), reset (counters "
	  "back to 0 half way, a restart), few-drafts (counts every other draft)", 3 },
	{ NULL, 0, NULL, 0, "Throughput:", 4 },
	{ "rate-test", OPT_RATE, "N", 0, "after the loop, N cheap async calls back to back", 4 },
	{ "rate-call", OPT_RATE_CALL, "CALL", 0, "launch, record, query or graph (default launch)",
	  4 },
	{ "rate-truth", OPT_RATE_TRUTH, NULL, 0, "note every rate-test call in the truth", 4 },
	{ "help", 'h', NULL, 0, "give this help list", -1 },
	{ NULL, '?', NULL, OPTION_HIDDEN, NULL, -1 },
	{ "usage", OPT_USAGE, NULL, 0, "give a short usage message", -1 },
	{ "rank-worker", OPT_WORKER, "R", OPTION_HIDDEN, NULL, 5 },
	{ "ready-fd", OPT_READY_FD, "FD", OPTION_HIDDEN, NULL, 5 },
	{ "go-fd", OPT_GO_FD, "FD", OPTION_HIDDEN, NULL, 5 },
	{ "uid-file", OPT_UID_FILE, "FILE", OPTION_HIDDEN, NULL, 5 },
	{},
};

static long long parse_ll(struct argp_state *state, const char *arg, long long min,
			  long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max)
		argp_error(state, "'%s' is not a number in [%lld, %lld]", arg, min, max);
	return v;
}

static long long parse_us(struct argp_state *state, const char *arg)
{
	char *end;
	double us;

	errno = 0;
	us = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(us) || us < 0 || us > 1e9)
		argp_error(state, "'%s' is not a duration in microseconds", arg);
	return llround(us * 1000.0);
}

/* A comma-separated list of batch sizes into out[max]; returns how many. */
static int parse_sizes(struct argp_state *state, const char *arg, int *out, int max,
		       const char *opt)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max)
			argp_error(state, "%s takes at most %d sizes", opt, max);
		out[n++] = parse_ll(state, tok, 1, 4096);
	}
	free(copy);
	if (!n)
		argp_error(state, "%s needs at least one size", opt);
	return n;
}

static int pick(struct argp_state *state, const char *arg, const char *const *names, int n,
		const char *what)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(arg, names[i]))
			return i;
	argp_error(state, "unknown %s '%s'", what, arg);
	return 0;
}

static const char *const draft_modes[] = { "per-step", "one-graph", "eager" };
static const char *const verify_modes[] = { "graph", "eager" };
static const char *const capture_orders[] = { "verify-first", "run" };
static const char *const accept_modes[] = { "sync", "event", "deferred" };
static const char *const serve_formats[] = { "vllm", "sglang" };
static const char *const serve_faults[] = { "html", "huge", "slow", "reset", "few-drafts" };

const char *serve_fault_name(enum serve_fault f)
{
	return f ? serve_faults[f - 1] : "none";
}
static const char *const wait_ats[] = { "loop", "init" };
static const char *const rank_hints[] = { "none", "title", "environ" };
static const char *const rate_calls[] = { "launch", "record", "query", "graph" };
static const char *const plant_kinds[] = {
	[PLANT_CTX] = "ctx",
	[PLANT_STREAM] = "stream",
	[PLANT_EVENT] = "event",
	[PLANT_SYNC_COPY] = "sync-copy",
	[PLANT_PAGEABLE_COPY] = "pageable-copy",
	[PLANT_UNKNOWN_HOST] = "unknown-host",
	[PLANT_FREE] = "free",
	[PLANT_ALLOC] = "alloc",
	[PLANT_LEGACY] = "legacy",
	[PLANT_POLL] = "poll",
	[PLANT_CAPTURE_SYNC] = "capture-sync",
	[PLANT_SIDE_STREAM] = "side-stream",
	[PLANT_SIDE_STREAM_PRE] = "side-stream-pre",
	[PLANT_FREE_HOST] = "free-host",
};
static const char *const plant_positions[] = {
	[POS_DRAFT_VERIFY] = "draft-verify",
	[POS_AFTER_VERIFY] = "after-verify",
	[POS_ACCEPT] = "accept",
	[POS_EXTEND] = "extend",
	[POS_OUTSIDE] = "outside",
};
_Static_assert(ARRAY_SIZE(plant_kinds) == PLANT_NR, "a name per plant kind");
_Static_assert(ARRAY_SIZE(plant_positions) == POS_NR, "a name per position");

const char *draft_mode_name(enum draft_mode m)
{
	return draft_modes[m];
}

const char *verify_mode_name(enum verify_mode m)
{
	return verify_modes[m];
}

const char *accept_mode_name(enum accept_mode m)
{
	return accept_modes[m];
}

const char *rate_call_name(enum rate_call c)
{
	return rate_calls[c];
}

const char *plant_kind_name(enum plant_kind k)
{
	return plant_kinds[k];
}

const char *plant_pos_name(enum plant_pos p)
{
	return plant_positions[p];
}

/* KIND[@POSITION][/EVERY] */
static void parse_hang(struct argp_state *state, const char *arg)
{
	long long ms;

	if (sscanf(arg, "%d@%d/%lld", &env.hang_rank, &env.hang_cycle, &ms) != 3 ||
	    env.hang_rank < 0 || env.hang_cycle < 0 || ms <= 0)
		argp_error(state, "--hang RANK@CYCLE/MS, e.g. 1@50/3000: '%s'", arg);
	env.hang_ns = ms * 1000000;
}

static void parse_plant(struct argp_state *state, const char *arg)
{
	char *copy = strdup(arg), *every = strchr(copy, '/'), *pos;
	struct plant *p = &env.plants[env.nr_plants];

	if (env.nr_plants == MAX_PLANTS)
		argp_error(state, "at most %d --plant options", MAX_PLANTS);
	if (every)
		*every++ = '\0';
	pos = strchr(copy, '@');
	if (pos)
		*pos++ = '\0';
	p->kind = pick(state, copy, plant_kinds, PLANT_NR, "--plant kind");
	p->pos = pos ? pick(state, pos, plant_positions, POS_NR, "--plant position")
		     : POS_DRAFT_VERIFY;
	p->every = every ? parse_ll(state, every, 1, 100000000) : 1;
	if (p->pos == POS_OUTSIDE && !every)
		p->every = 0;
	/* a sync during capture is made once, while the graphs are captured */
	if (p->kind == PLANT_CAPTURE_SYNC) {
		if (pos || every)
			argp_error(state, "--plant capture-sync takes no position or period");
		p->pos = POS_OUTSIDE;
		p->every = 0;
	}
	env.nr_plants++;
	free(copy);
}

static bool captured(int bs)
{
	for (int i = 0; i < env.nr_batch_sizes; i++)
		if (env.batch_sizes[i] == bs)
			return true;
	return false;
}

static bool side_plant(enum plant_kind kind)
{
	return kind == PLANT_SIDE_STREAM || kind == PLANT_SIDE_STREAM_PRE;
}

/* Side-stream work is followed by the loop's own legacy call at these positions. */
static void check_plants_torch(struct argp_state *state)
{
	bool side_at[POS_NR] = { false };

	for (int i = 0; i < env.nr_plants; i++) {
		const struct plant *p = &env.plants[i];

		if (p->pos == POS_EXTEND || (p->pos == POS_OUTSIDE && p->every))
			argp_error(state, "--torch has no extend launch: no plant @extend or "
					  "@outside/N");
		if (!side_plant(p->kind))
			continue;
		if (p->pos != POS_DRAFT_VERIFY && p->pos != POS_AFTER_VERIFY)
			argp_error(state, "--plant %s: only @draft-verify or @after-verify",
				   plant_kinds[p->kind]);
		if (side_at[p->pos])
			argp_error(state, "one side-stream plant per position");
		side_at[p->pos] = true;
	}
}

static void check_torch(struct argp_state *state)
{
	if (!env.torch) {
		for (int i = 0; i < env.nr_plants; i++)
			if (side_plant(env.plants[i].kind))
				argp_error(state, "--plant %s needs --torch",
					   plant_kinds[env.plants[i].kind]);
		return;
	}
	if (env.draft_mode != DRAFT_PER_STEP || env.accept_mode != ACCEPT_SYNC ||
	    env.extra_draft_every || env.verify_pieces != 1 || env.pageable || env.free_every)
		argp_error(state, "--torch replays per-step draft graphs and one verify graph and "
				  "syncs in accept: no --draft-mode, --accept-mode, "
				  "--extra-draft-every, --verify-pieces, --pageable-copies or "
				  "--free-in-loop");
	check_plants_torch(state);
}

static void check_eager(struct argp_state *state)
{
	if ((env.eager_same || env.eager_trim_joined) && !env.eager_loop)
		argp_error(state, "--eager-same and --eager-trim-joined need --eager-loop");
	if (env.verify_mode == VERIFY_EAGER &&
	    (env.eager_loop || env.torch || env.draft_mode == DRAFT_EAGER || env.verify_pieces != 1))
		argp_error(state, "--verify-mode eager drafts with graphs and runs verify as one "
				  "forward: no --eager-loop, --torch, --draft-mode eager or "
				  "--verify-pieces");
	if (!env.eager_loop)
		return;
	if (env.draft_mode != DRAFT_PER_STEP || env.accept_mode != ACCEPT_SYNC ||
	    env.extra_draft_every || env.verify_pieces != 1 || env.pageable || env.free_every ||
	    env.nr_batch_schedule)
		argp_error(state, "--eager-loop launches no graph and syncs in accept: no "
				  "--draft-mode, --accept-mode, --extra-draft-every, "
				  "--verify-pieces, --pageable-copies, --free-in-loop or "
				  "--batch-schedule");
	for (int i = 0; i < env.nr_plants; i++)
		if (env.plants[i].kind == PLANT_CAPTURE_SYNC)
			argp_error(state, "--eager-loop captures nothing: no --plant capture-sync");
}

static void check_all(struct argp_state *state)
{
	if (env.batch && env.nr_batch_schedule)
		argp_error(state, "use one of --batch and --batch-schedule");
	if (!env.batch)
		env.batch = env.nr_batch_schedule ? env.batch_schedule[0] : env.batch_sizes[0];
	if (!captured(env.batch))
		argp_error(state, "--batch %d is not among the captured --batch-sizes", env.batch);
	for (int i = 0; i < env.nr_batch_schedule; i++)
		if (!captured(env.batch_schedule[i]))
			argp_error(state, "--batch-schedule: %d is not among the --batch-sizes",
				   env.batch_schedule[i]);
	if (env.verify_pieces > env.layers)
		argp_error(state, "--verify-pieces %d needs at least as many --layers",
			   env.verify_pieces);
	if (env.ranks > 1 && !env.worker && env.wait_signal && env.go_file)
		argp_error(state, "use one of --wait-signal and --go-file");
	check_torch(state);
	check_eager(state);
}

/* How an option's argument lands in env. */
enum arg_kind { ARG_INT, ARG_LL, ARG_US, ARG_SET, ARG_STR, ARG_PICK };

struct opt_arg {
	int key;
	enum arg_kind kind;
	void *dst;
	long long min, max;		/* ARG_INT, ARG_LL */
	const char *const *names;	/* ARG_PICK */
	int nr_names;
	const char *what;
};

/* _Generic turns a field of the wrong type into a build error */
#define ARG(k, t, f, ...) { .key = k, .kind = t, .dst = f, __VA_ARGS__ }
#define INT_ARG(k, f, lo, hi) ARG(k, ARG_INT, _Generic(&env.f, int *: &env.f), .min = lo, .max = hi)
#define LL_ARG(k, f, lo, hi) \
	ARG(k, ARG_LL, _Generic(&env.f, long long *: &env.f), .min = lo, .max = hi)
#define US_ARG(k, f) ARG(k, ARG_US, _Generic(&env.f, long long *: &env.f))
#define SET_ARG(k, f) ARG(k, ARG_SET, _Generic(&env.f, bool *: &env.f))
#define STR_ARG(k, f) ARG(k, ARG_STR, _Generic(&env.f, const char **: &env.f))
#define PICK_ARG(k, f, list, opt) \
	ARG(k, ARG_PICK, &env.f, .names = list, .nr_names = ARRAY_SIZE(list), .what = opt)

static const struct opt_arg args[] = {
	INT_ARG('n', cycles, 0, 100000000),
	INT_ARG('k', draft_k, 1, MAX_DRAFT_K),
	INT_ARG('r', ranks, 1, 64),
	PICK_ARG(OPT_DRAFT_MODE, draft_mode, draft_modes, "--draft-mode"),
	PICK_ARG(OPT_VERIFY_MODE, verify_mode, verify_modes, "--verify-mode"),
	PICK_ARG(OPT_CAPTURE_ORDER, capture_order, capture_orders, "--capture-order"),
	INT_ARG(OPT_BATCH, batch, 1, 4096),
	INT_ARG(OPT_LAYERS, layers, 1, 1024),
	INT_ARG(OPT_DRAFT_KERNELS, draft_kernels, 1, 1024),
	INT_ARG(OPT_EAGER, eager, 0, 1024),
	INT_ARG(OPT_EXTRA_DRAFT, extra_draft_every, 0, 100000000),
	INT_ARG(OPT_VERIFY_PIECES, verify_pieces, 1, MAX_VERIFY_PIECES),
	PICK_ARG(OPT_ACCEPT_MODE, accept_mode, accept_modes, "--accept-mode"),
	US_ARG(OPT_DRAFT_US, draft_ns),
	US_ARG(OPT_VERIFY_US, verify_ns),
	US_ARG(OPT_ACCEPT_US, accept_ns),
	US_ARG(OPT_EXTEND_US, extend_ns),
	US_ARG(OPT_ALLREDUCE_US, allreduce_ns),
	US_ARG(OPT_HOST_US, host_ns),
	INT_ARG(OPT_PLANT_SYNC, plant_sync, 0, 100000000),
	SET_ARG(OPT_PAGEABLE, pageable),
	SET_ARG(OPT_CLEAN_SYNCS, clean_syncs),
	SET_ARG(OPT_TORCH, torch),
	SET_ARG(OPT_EAGER_LOOP, eager_loop),
	SET_ARG(OPT_EAGER_SAME, eager_same),
	SET_ARG(OPT_EAGER_TRIM_JOINED, eager_trim_joined),
	INT_ARG(OPT_FREE, free_every, 0, 100000000),
	STR_ARG('g', truth_path),
	SET_ARG(OPT_GPU_LOG, gpu_log),
	SET_ARG(OPT_EXERCISE, exercise),
	STR_ARG(OPT_READY, ready_file),
	STR_ARG(OPT_GO, go_file),
	SET_ARG(OPT_WAIT_SIGNAL, wait_signal),
	LL_ARG(OPT_DELAY, start_delay_ms, 0, 3600000),
	PICK_ARG(OPT_WAIT_AT, wait_at, wait_ats, "--wait-at"),
	PICK_ARG(OPT_RANK_HINT, rank_hint, rank_hints, "--rank-hint"),
	SET_ARG('q', quiet),
	LL_ARG(OPT_RATE, rate_n, 0, 1000000000000ll),
	PICK_ARG(OPT_RATE_CALL, rate_call, rate_calls, "--rate-call"),
	SET_ARG(OPT_RATE_TRUTH, rate_truth),
	INT_ARG(OPT_WORKER, rank, 0, 63),
	INT_ARG(OPT_READY_FD, ready_fd, 0, 1 << 20),
	INT_ARG(OPT_GO_FD, go_fd, 0, 1 << 20),
	STR_ARG(OPT_UID_FILE, uid_file),
};

/* the enums are stored through an int */
_Static_assert(sizeof(enum draft_mode) == sizeof(int), "enum size");
_Static_assert(sizeof(enum capture_order) == sizeof(int), "enum size");
_Static_assert(sizeof(enum verify_mode) == sizeof(int), "enum size");

static void store(struct argp_state *state, const struct opt_arg *a, char *arg)
{
	switch (a->kind) {
	case ARG_INT:
		/* only --free-in-loop's argument is optional: alone it means 1 */
		*(int *)a->dst = arg ? parse_ll(state, arg, a->min, a->max) : 1;
		break;
	case ARG_LL:
		*(long long *)a->dst = parse_ll(state, arg, a->min, a->max);
		break;
	case ARG_US:
		*(long long *)a->dst = parse_us(state, arg);
		break;
	case ARG_SET:
		*(bool *)a->dst = true;
		break;
	case ARG_STR:
		*(const char **)a->dst = arg;
		break;
	case ARG_PICK:
		*(int *)a->dst = pick(state, arg, a->names, a->nr_names, a->what);
		break;
	}
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case OPT_BATCH_SIZES:
		env.nr_batch_sizes = parse_sizes(state, arg, env.batch_sizes, MAX_BATCH_SIZES,
						 "--batch-sizes");
		return 0;
	case OPT_PLANT:
		parse_plant(state, arg);
		return 0;
	case OPT_HANG:
		parse_hang(state, arg);
		return 0;
	case OPT_BATCH_SCHEDULE:
		env.nr_batch_schedule = parse_sizes(state, arg, env.batch_schedule, MAX_SCHEDULE,
						    "--batch-schedule");
		return 0;
	case OPT_WORKER:
		env.worker = true;
		break;
	case OPT_SERVE_METRICS:
		/* FORMAT PORT: the port is the next word */
		env.serve_format = pick(state, arg, serve_formats, ARRAY_SIZE(serve_formats),
					"--serve-metrics") + 1;
		if (state->next >= state->argc)
			argp_error(state, "--serve-metrics takes vllm|sglang PORT");
		env.serve_port = parse_ll(state, state->argv[state->next++], 1, 65535);
		return 0;
	case 'h':
	case '?':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		return 0;
	case OPT_USAGE:
		argp_state_help(state, stdout, ARGP_HELP_USAGE | ARGP_HELP_EXIT_OK);
		return 0;
	case OPT_FOREVER:
		env.forever = true;
		return 0;
	case OPT_SERVE_FAULT:
		env.serve_fault = pick(state, arg, serve_faults, ARRAY_SIZE(serve_faults),
				       "--serve-metrics-fault") + 1;
		return 0;
	case ARGP_KEY_ARG:
		argp_usage(state);
		return 0;
	case ARGP_KEY_END:
		/* an activity agent's records are checked against these lines */
		if (getenv("CUDA_INJECTION64_PATH"))
			env.gpu_log = true;
		/* a cycle count no run reaches: two months at the default timings */
		if (env.forever)
			env.cycles = INT_MAX;
		check_all(state);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(args); i++) {
		if (args[i].key == key) {
			store(state, &args[i], arg);
			return 0;
		}
	}
	return ARGP_ERR_UNKNOWN;
}

int options__parse(int argc, char **argv)
{
	static const struct argp argp = { .options = opts, .parser = parse_opt, .doc = doc };

	/* -h as well as --help and -?: argp's own help gives no -h */
	return argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, NULL);
}
