// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Catalogue against the real NVIDIA binaries: every entry point there resolves, once. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "elfsyms.h"
#include "probes.h"

#define STUB "/usr/local/cuda/lib64/stubs/libcuda.so"
#define NCCL "/usr/local/cuda/lib64/libnccl.so.2"

static bool resolve_one(const char *path, struct targets *t, struct probe_set *ps)
{
	char err[256];

	if (access(path, R_OK)) {
		printf("SKIP: %s not found on this machine\n", path);
		return false;
	}
	assert_int_equal(targets__add_lib_file(t, path, err, sizeof(err)), 0);
	assert_int_equal(probes__resolve(t, ps, err, sizeof(err)), 0);
	return true;
}

/* Each catalogue row of this library that the file exports in any variant got a probe. */
static void check_every_entry_resolves(const char *path, enum sp_lib lib, int *expected)
{
	struct targets t = { 0 };
	struct probe_set ps = { 0 };
	struct elf_syms syms = { 0 };
	char err[256];
	int rows = 0;

	if (!resolve_one(path, &t, &ps))
		skip();
	assert_int_equal(elf_syms__load(path, &syms, err, sizeof(err)), 0);
	for (int i = 0; i < catalog_len; i++) {
		bool exported = false;

		if (catalog[i].lib != lib)
			continue;
		for (size_t s = 0; s < syms.nr_funcs && !exported; s++)
			exported = catalog__match(syms.funcs[s].name, lib) == &catalog[i];
		if (exported) {
			rows++;
			assert_true(probes__has_entry(&ps, 0, &catalog[i]));
		}
	}
	/* one probe per file offset */
	for (int i = 0; i < ps.nr_probes; i++)
		for (int j = i + 1; j < ps.nr_probes; j++)
			assert_false(ps.probes[i].offset == ps.probes[j].offset);
	*expected = rows;
	elf_syms__free(&syms);
	probes__free(&ps);
	targets__free(&t);
}

static void test_stub_driver(void **state)
{
	int rows = 0;

	check_every_entry_resolves(STUB, SP_LIB_CUDA, &rows);
	/* the stub exports every catalogued driver entry point */
	int cuda_rows = 0;
	for (int i = 0; i < catalog_len; i++)
		cuda_rows += catalog[i].lib == SP_LIB_CUDA;
	assert_int_equal(rows, cuda_rows);
}

static void test_nccl_aliases_share_a_probe(void **state)
{
	struct targets t = { 0 };
	struct probe_set ps = { 0 };
	int rows = 0, all_reduce = 0;

	check_every_entry_resolves(NCCL, SP_LIB_NCCL, &rows);
	assert_true(rows > 0);
	if (!resolve_one(NCCL, &t, &ps))
		skip();
	for (int i = 0; i < ps.nr_probes; i++) {
		if (ps.probes[i].entry != catalog__find("ncclAllReduce"))
			continue;
		all_reduce++;
		/* named by ncclAllReduce, pncclAllReduce folded into it */
		assert_string_equal(ps.probes[i].symbol, "ncclAllReduce");
		assert_true(ps.probes[i].nr_aliases >= 1);
	}
	assert_int_equal(all_reduce, 1);
	probes__free(&ps);
	targets__free(&t);
}

static void test_variants_get_their_own_probe(void **state)
{
	struct targets t = { 0 };
	struct probe_set ps = { 0 };
	int launch = 0;

	if (!resolve_one(STUB, &t, &ps))
		skip();
	for (int i = 0; i < ps.nr_probes; i++)
		launch += ps.probes[i].entry == catalog__find("cuLaunchKernel");
	assert_int_equal(launch, 2);	/* cuLaunchKernel and cuLaunchKernel_ptsz */
	probes__free(&ps);
	targets__free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stub_driver),
		cmocka_unit_test(test_nccl_aliases_share_a_probe),
		cmocka_unit_test(test_variants_get_their_own_probe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
