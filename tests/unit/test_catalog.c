// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The argument table: names, variants, specs the BPF side reads. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "catalog.h"

static void test_variants_match_their_base(void **state)
{
	static const char *const cases[][2] = {
		{ "cuLaunchKernel", "cuLaunchKernel" },
		{ "cuLaunchKernel_ptsz", "cuLaunchKernel" },
		{ "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync" },
		{ "cuMemcpyDtoHAsync_v2_ptsz", "cuMemcpyDtoHAsync" },
		{ "cuMemcpyHtoD_v2_ptds", "cuMemcpyHtoD" },
		{ "cuGraphInstantiateWithFlags_ptsz", "cuGraphInstantiateWithFlags" },
		{ "cuCtxSynchronize_v2", "cuCtxSynchronize" },
		{ "cuGetProcAddress_v2", "cuGetProcAddress" },
		{ "cuMemcpy_ptds", "cuMemcpy" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct catalog_entry *e = catalog__match(cases[i][0], SP_LIB_CUDA);

		assert_non_null(e);
		assert_string_equal(e->name, cases[i][1]);
	}
}

static void test_non_catalogued_names_do_not_match(void **state)
{
	assert_null(catalog__match("cuCtxGetDevice", SP_LIB_CUDA));
	/* asked before every graph replay, answered by the capture's begin and end */
	assert_null(catalog__match("cuStreamIsCapturing", SP_LIB_CUDA));
	assert_null(catalog__match("cuStreamGetCaptureInfo_v3", SP_LIB_CUDA));
	assert_null(catalog__match("cuLaunchCooperativeKernelMultiDevice", SP_LIB_CUDA));
	assert_null(catalog__match("cuMemAllocHostX", SP_LIB_CUDA));
	/* a name in the wrong library is not probed there */
	assert_null(catalog__match("ncclAllReduce", SP_LIB_CUDA));
	assert_null(catalog__match("cuLaunchKernel", SP_LIB_NCCL));
}

static void test_nccl_profiling_alias(void **state)
{
	const struct catalog_entry *e = catalog__match("pncclAllReduce", SP_LIB_NCCL);

	assert_non_null(e);
	assert_ptr_equal(e, catalog__find("ncclAllReduce"));
}

/* Every row parses, and the indices it names are arguments it has. */
static void test_every_row_is_consistent(void **state)
{
	for (int i = 0; i < catalog_len; i++) {
		const struct catalog_entry *e = &catalog[i];
		int nargs = catalog__nargs(e);
		char name[32], fmt;

		assert_true(nargs <= SP_MAX_ARGS);
		for (int a = 0; a < nargs; a++) {
			assert_true(catalog__arg(e, a, name, sizeof(name), &fmt));
			assert_non_null(strchr("hzud", fmt));
		}
		if (e->data_kind != SP_DATA_NONE)
			assert_true(e->data_arg < nargs && e->data_arg < SP_REG_ARGS);
		if (e->out_arg != SP_NO_ARG) {
			assert_true(e->out_arg < nargs && e->out_arg < SP_REG_ARGS);
			assert_true(e->completion);
			assert_non_null(e->out_name);
		}
		assert_ptr_equal(catalog__find(e->name), e);
	}
}

static void test_specs_follow_the_table(void **state)
{
	struct sp_probe_spec spec;

	/* cuLaunchKernel: entry only, blockDimZ/shmem/stream on the stack */
	catalog__spec(catalog__find("cuLaunchKernel"), &spec);
	assert_int_equal(spec.flags, SP_SPEC_DIMS);	/* grid, block, shmem: 32-bit in the ring */
	assert_int_equal(spec.stack_args, 3);
	assert_int_equal(spec.nr_args, 9);
	assert_int_equal(spec.data_arg, SP_NO_ARG);
	/* cuLaunchKernelEx: the CUlaunchConfig is read at entry */
	catalog__spec(catalog__find("cuLaunchKernelEx"), &spec);
	assert_int_equal(spec.data_arg, 0);
	assert_int_equal(spec.data_len, SP_DATA_SMALL);
	assert_int_equal(spec.stack_args, 0);
	/* ncclAllReduce: stream is argument 7 */
	/* device-to-device copies are only work: no return probe */
	catalog__spec(catalog__find("cuMemcpyDtoDAsync"), &spec);
	assert_int_equal(spec.flags, 0);
	assert_int_equal(spec.nr_args, 4);
	catalog__spec(catalog__find("cuMemcpyDtoHAsync"), &spec);
	assert_true(spec.flags & SP_SPEC_COMPLETION);
	/* an async host copy names its host pointer: entry only when that is pinned */
	assert_int_equal(spec.host_arg, 0);
	catalog__spec(catalog__find("cuMemcpyHtoDAsync"), &spec);
	assert_int_equal(spec.host_arg, 1);
	/* a synchronous copy always waits: it keeps its return */
	catalog__spec(catalog__find("cuMemcpyDtoH"), &spec);
	assert_int_equal(spec.host_arg, SP_NO_ARG);
	/* pinning adds to the set (host_arg: the bytes), freeing empties it */
	catalog__spec(catalog__find("cuMemHostAlloc"), &spec);
	assert_int_equal(spec.flags & (SP_SPEC_PINS | SP_SPEC_UNPINS), SP_SPEC_PINS);
	assert_int_equal(spec.host_arg, 1);
	assert_int_equal(spec.out_arg, 0);
	catalog__spec(catalog__find("cuMemFreeHost"), &spec);
	assert_int_equal(spec.flags & (SP_SPEC_PINS | SP_SPEC_UNPINS), SP_SPEC_UNPINS);
	catalog__spec(catalog__find("cuMemHostRegister"), &spec);
	assert_int_equal(spec.flags & (SP_SPEC_PINS | SP_SPEC_UNPINS), 0);
	catalog__spec(catalog__find("ncclAllReduce"), &spec);
	assert_int_equal(spec.stack_args, 1);
	assert_true(spec.flags & SP_SPEC_ENCLOSES);	/* it launches through libcuda */
	/* its return shows a rank stuck in it */
	assert_true(spec.flags & SP_SPEC_COMPLETION);
	/* ncclReduce: comm 7 and stream 8 */
	catalog__spec(catalog__find("ncclReduce"), &spec);
	assert_int_equal(spec.stack_args, 2);
	/* syncs have completions; no record wakes the reader but the fill threshold */
	catalog__spec(catalog__find("cuStreamSynchronize"), &spec);
	assert_int_equal(spec.flags, SP_SPEC_COMPLETION | SP_SPEC_ENCLOSES);
	/* capture end reads *phGraph at return */
	catalog__spec(catalog__find("cuStreamEndCapture"), &spec);
	assert_int_equal(spec.out_arg, 1);
	/* names are strings */
	catalog__spec(catalog__find("cuModuleGetFunction"), &spec);
	assert_int_equal(spec.data_arg, 2);
	assert_int_equal(spec.data_len, SP_DATA_LARGE);
	assert_true(spec.flags & SP_SPEC_DATA_STR);
}

/* Call sites by default: what blocks or may synchronise, never a launch or a collective. */
static void test_stack_default(void **state)
{
	static const char *const with[] = {
		"cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuStreamQuery",
		"cuEventQuery", "cuMemcpyDtoH", "cuMemcpyDtoHAsync", "cuMemcpyHtoDAsync",
		"cuMemAlloc", "cuMemFree", "cuMemsetD8", "ncclCommInitRank",
	};
	static const char *const without[] = {
		"cuLaunchKernel", "cuLaunchKernelEx", "cuGraphLaunch", "cuMemcpyDtoDAsync",
		"cuMemsetD8Async", "cuEventRecord", "ncclAllReduce", "cuStreamEndCapture",
	};

	for (size_t i = 0; i < sizeof(with) / sizeof(with[0]); i++)
		assert_true(catalog__stack_default(catalog__find(with[i])));
	for (size_t i = 0; i < sizeof(without) / sizeof(without[0]); i++)
		assert_false(catalog__stack_default(catalog__find(without[i])));
}

static void test_argument_names(void **state)
{
	const struct catalog_entry *e = catalog__find("cuLaunchKernel");
	char name[32], fmt;

	assert_int_equal(catalog__nargs(e), 9);
	assert_true(catalog__arg(e, 8, name, sizeof(name), &fmt));
	assert_string_equal(name, "stream");
	assert_int_equal(fmt, 'h');
	assert_true(catalog__arg(e, 1, name, sizeof(name), &fmt));
	assert_string_equal(name, "gx");
	assert_int_equal(fmt, 'u');
	assert_false(catalog__arg(e, 9, name, sizeof(name), &fmt));
	assert_int_equal(catalog__nargs(catalog__find("cuCtxSynchronize")), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_variants_match_their_base),
		cmocka_unit_test(test_non_catalogued_names_do_not_match),
		cmocka_unit_test(test_nccl_profiling_alias),
		cmocka_unit_test(test_every_row_is_consistent),
		cmocka_unit_test(test_specs_follow_the_table),
		cmocka_unit_test(test_argument_names),
		cmocka_unit_test(test_stack_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
