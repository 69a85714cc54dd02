// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Ranks from what a process shows: titles, environments, device nodes; the model's choice. */
#include "call_seq.h"
#include "rankinfo.h"

static int title_rank(const char *title)
{
	int rank = -1;

	return rankinfo__parse_title(title, strlen(title) + 1, &rank) ? rank : -1;
}

static void test_sglang_titles(void **state)
{
	assert_int_equal(title_rank("sglang::scheduler_TP0"), 0);
	assert_int_equal(title_rank("sglang::scheduler_TP1"), 1);
	assert_int_equal(title_rank("sglang::scheduler_TP7_EP7"), 7);
	assert_int_equal(title_rank("sglang::scheduler_DP1_TP3"), 3);
	assert_int_equal(title_rank("sglang::scheduler_TP2_PP1"), 2);
	assert_int_equal(title_rank("sglang::scheduler"), 0);	/* one GPU: no tag */
	assert_int_equal(title_rank("sglang::gpu_worker_TP5_PP0"), 5);
	assert_int_equal(title_rank("sglang::semi_pd_scheduler_PREFILL_TP1"), 1);
	assert_int_equal(title_rank("sglang::scheduler_TP12  "), 12);	/* padded */
}

static void test_vllm_titles(void **state)
{
	assert_int_equal(title_rank("VLLM::Worker_TP0"), 0);
	assert_int_equal(title_rank("VLLM::Worker_TP3"), 3);
	assert_int_equal(title_rank("VLLM::Worker_PP1_TP2"), 2);
	assert_int_equal(title_rank("VLLM::Worker_DP1_PP0_TP1_EP1"), 1);
	assert_int_equal(title_rank("VLLM::Worker"), 0);
	assert_int_equal(title_rank("MYPREFIX::Worker_TP4"), 4);
	assert_int_equal(title_rank("VllmWorker_TP1"), 1);
	assert_int_equal(title_rank("VllmWorker TP2"), 2);
}

static void test_garbage_titles(void **state)
{
	static const char *const bad[] = {
		"", "python3", "sglang::tokenizer", "sglang::detokenizer_handler_0",
		"sglang::schedul", "sglang::schedulerX_TP1", "sglang::scheduler_TP",
		"sglang::scheduler_TPx", "sglang::scheduler_TP1x", "sglang::scheduler_TP123456",
		"sglang::scheduler_TP99999", "sglang::scheduler_TP1_TP2", "sglang::scheduler_XX1",
		"sglang::scheduler_tp1", "sglang::scheduler__TP1", "sglang::scheduler_TP-1",
		"VLLM::EngineCore_DP0", "VLLM::APIServer_0", "::Worker_TP1", "VLLM::Workers_TP1",
		"VL LM::Worker_TP1", "VLLM::Worker_TP1_", "VLLM::Worker_TP 1",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rank = -7;

		if (rankinfo__parse_title(bad[i], strlen(bad[i]) + 1, &rank))
			fail_msg("'%s' parsed as rank %d", bad[i], rank);
		assert_int_equal(rank, -7);
	}
}

static void test_title_bounds(void **state)
{
	/* a cmdline as setproctitle leaves it (NULs after the title), and one cut short */
	static const char cmdline[] = "sglang::scheduler_TP3\0\0\0\0";
	static const char cut[] = { 's', 'g', 'l', 'a', 'n', 'g', ':', ':', 'W' };
	int rank = -1;

	assert_true(rankinfo__parse_title(cmdline, sizeof(cmdline), &rank));
	assert_int_equal(rank, 3);
	assert_false(rankinfo__parse_title(cut, sizeof(cut), &rank));
	/* argv as exec left it: the first string is the program */
	assert_false(rankinfo__parse_title("/usr/bin/python3\0-m\0sglang", 27, &rank));
}

static bool env_parse(const char *env, size_t len, struct rank_seen *seen)
{
	memset(seen, 0, sizeof(*seen));
	seen->rank = seen->nranks = -7;
	return rankinfo__parse_environ(env, len, seen);
}

static void test_environ(void **state)
{
	static const char both[] = "PATH=/bin\0RANK=3\0WORLD_SIZE=4\0LOCAL_RANK=1\0";
	static const char local[] = "LOCAL_RANK=2\0LOCAL_WORLD_SIZE=8\0HOME=/root\0";
	static const char only[] = "RANK=5\0";
	static const char bad_size[] = "RANK=4\0WORLD_SIZE=4\0LOCAL_RANK=0\0";
	static const char garbage[] = "RANK=x\0RANKS=1\0MY_RANK=2\0RANK=\0WORLD_SIZE=2\0";
	static const char unterminated[] = { 'R', 'A', 'N', 'K', '=', '1' };
	struct rank_seen seen;

	assert_true(env_parse(both, sizeof(both), &seen));
	assert_int_equal(seen.rank, 3);
	assert_int_equal(seen.nranks, 4);
	assert_int_equal(seen.from, SP_RANK_ENVIRON);
	assert_string_equal(seen.what, "RANK=3 WORLD_SIZE=4");
	assert_true(env_parse(local, sizeof(local), &seen));
	assert_int_equal(seen.rank, 2);
	assert_int_equal(seen.nranks, 8);
	assert_true(env_parse(only, sizeof(only), &seen));
	assert_int_equal(seen.rank, 5);
	assert_int_equal(seen.nranks, -1);
	/* a world that cannot hold RANK: LOCAL_RANK alone is taken */
	assert_true(env_parse(bad_size, sizeof(bad_size), &seen));
	assert_int_equal(seen.rank, 0);
	assert_int_equal(seen.nranks, -1);
	assert_false(env_parse(garbage, sizeof(garbage), &seen));
	assert_true(env_parse(unterminated, sizeof(unterminated), &seen));
	assert_int_equal(seen.rank, 1);
	assert_false(env_parse("", 0, &seen));
}

static void test_device(void **state)
{
	int gpu = -1;

	assert_true(rankinfo__parse_device("/dev/nvidia3", &gpu));
	assert_int_equal(gpu, 3);
	assert_false(rankinfo__parse_device("/dev/nvidiactl", &gpu));
	assert_false(rankinfo__parse_device("/dev/nvidia-uvm", &gpu));
	assert_false(rankinfo__parse_device("/dev/nvidia", &gpu));
	assert_false(rankinfo__parse_device("/dev/nvidia1 (deleted)", &gpu));
	assert_false(rankinfo__parse_device("socket:[1234]", &gpu));
	assert_int_equal(gpu, 3);
}

static void rank_rec(struct call_seq *s, __u32 tgid, int rank, int nranks, __u32 from,
		     const char *what)
{
	struct sp_rank_rec r = { .type = SP_REC_RANK, .size = sizeof(r), .tgid = tgid,
				 .ts = s->now, .rank = rank, .nranks = nranks, .from = from };

	strncpy(r.what, what, sizeof(r.what) - 1);
	model__record(s->m, &r, sizeof(r));
}

static const struct model_proc *proc_of(struct call_seq *s, __u32 tgid)
{
	const struct model_view *v = model__view(s->m);

	for (size_t i = 0; i < v->nr_procs; i++)
		if (v->procs[i]->tgid == tgid)
			return v->procs[i];
	fail_msg("no process %u", tgid);
	return NULL;
}

/* Records before the first call wait for it; a more trusted one replaces; NCCL init wins. */
static void test_model_sources(void **state)
{
	const struct model_proc *p;
	struct call_seq s;

	seq_init(&s, 0);
	rank_rec(&s, 100, 3, -1, SP_RANK_DEVICE, "/dev/nvidia3");
	rank_rec(&s, 100, 1, -1, SP_RANK_TITLE, "sglang::scheduler_TP1\x1b");
	rank_rec(&s, 100, 2, -1, SP_RANK_DEVICE, "/dev/nvidia2");	/* less trusted: kept out */
	stream_sync(&s, 10);
	p = proc_of(&s, 100);
	assert_int_equal(p->rank, 1);
	assert_int_equal(p->nranks, -1);
	assert_int_equal(p->rank_from, RANK_FROM_TITLE);
	assert_string_equal(p->rank_what, "sglang::scheduler_TP1?");
	assert_string_equal(rank_from__name(p->rank_from), "title");
	rank_rec(&s, 100, 0, 2, SP_RANK_ENVIRON, "RANK=0 WORLD_SIZE=2");
	assert_int_equal(p->rank, 0);
	assert_int_equal(p->nranks, 2);
	assert_string_equal(rank_from__name(p->rank_from), "environ");
	rank_rec(&s, 100, 1, 4, 99, "unknown source");	/* not a source this reader knows */
	assert_int_equal(p->rank, 0);
	/* ncclCommInitRank(comm*, nranks, id, rank) */
	seq_call(&s, "ncclCommInitRank", 100, 0, NULL, 3, 0x10ull, 4ull, 3ull);
	assert_int_equal(p->rank, 3);
	assert_int_equal(p->nranks, 4);
	assert_string_equal(rank_from__name(p->rank_from), "nccl-init");
	assert_string_equal(p->rank_what, "");
	rank_rec(&s, 100, 1, -1, SP_RANK_NCCL_COMM, "comm");
	assert_int_equal(p->rank, 3);
	seq_free(&s);
}

/* A GPU's number is a rank only beside other ranks: alone, it is dropped at the end. */
static void test_lone_device_rank(void **state)
{
	struct decode_stats st = { 0 };
	const struct model_proc *p;
	struct call_seq s;

	seq_init(&s, 0);
	rank_rec(&s, 100, 0, -1, SP_RANK_DEVICE, "/dev/nvidia0");
	stream_sync(&s, 10);
	model__finish(s.m, &st);
	p = proc_of(&s, 100);
	assert_int_equal(p->rank, -1);
	assert_int_equal(p->rank_from, RANK_FROM_NONE);
	seq_free(&s);

	seq_init(&s, 0);
	rank_rec(&s, 100, 0, -1, SP_RANK_DEVICE, "/dev/nvidia0");
	rank_rec(&s, 200, 1, -1, SP_RANK_DEVICE, "/dev/nvidia1");
	stream_sync(&s, 10);
	s.tgid = s.tid = 200;
	stream_sync(&s, 10);
	model__finish(s.m, &st);
	assert_int_equal(proc_of(&s, 100)->rank, 0);
	assert_int_equal(proc_of(&s, 200)->rank, 1);
	assert_int_equal(proc_of(&s, 200)->rank_from, RANK_FROM_DEVICE);
	seq_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sglang_titles),
		cmocka_unit_test(test_vllm_titles),
		cmocka_unit_test(test_garbage_titles),
		cmocka_unit_test(test_title_bounds),
		cmocka_unit_test(test_environ),
		cmocka_unit_test(test_device),
		cmocka_unit_test(test_lone_device_rank),
		cmocka_unit_test(test_model_sources),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
