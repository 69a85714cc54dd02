// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The recording reader and the decoder as `specprobe dump` drives them: any
 * bytes as a recording, each decoded call and GPU record printed as text and
 * as JSON; then `merge` of it. Inputs are mutated by the fields readers index
 * by (fuzz_fields.h) as well as by bytes.
 */
#include "fuzz_fields.h"
#include "fuzz_readers.h"

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	return fields_mutate(data, size, max_size, seed, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_read_records(fuzz_input_path(data, size));
	return 0;
}
