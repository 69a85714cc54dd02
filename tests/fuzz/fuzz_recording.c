// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The recording reader and the decoder as `specprobe dump` drives them: any
 * bytes as a recording, each decoded call and GPU record printed as text and as JSON.
 */
#include <errno.h>
#include "dump_fmt.h"
#include "fuzz_input.h"
#include "pipeline.h"

static int print_call(void *ctx, const struct tf_header *hdr, const struct sp_call *call)
{
	FILE *out = fuzz_devnull();

	dump_fmt__name(hdr, call->entry.probe);
	dump_fmt__text(out, hdr, call);
	dump_fmt__json_stack(out, hdr, pipeline__callstacks(ctx), call);
	return 0;
}

static int print_gpu(void *ctx, const struct sp_rec_hdr *rec, size_t size)
{
	FILE *out = fuzz_devnull();

	(void)ctx;
	dump_fmt__gpu(out, rec, size, "kernel", false);
	dump_fmt__gpu(out, rec, size, NULL, true);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct pipeline_opts calls_only = { .analyse = false };
	struct pipeline_consumer printer = { .call = print_call, .gpu_record = print_gpu };
	struct pipeline *p;
	char err[512];

	p = pipeline__open(fuzz_input_path(data, size), &calls_only, err, sizeof(err));
	if (!p)
		return 0;
	printer.ctx = p;
	pipeline__add(p, &printer);
	/* as dump does: what was read before a cut or a corrupt record is still finished */
	pipeline__read_all(p);
	pipeline__error(p);
	pipeline__finish(p);
	pipeline__free(p);
	return 0;
}
