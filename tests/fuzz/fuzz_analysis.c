// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What `report`, `export` and `diff` make of any bytes given as a recording:
 * report (text and JSON) and export as their commands read, in passes of a
 * whole run in windows; one pass with the model and the analyses, its report,
 * trace, and the recording diffed against itself. Inputs are mutated by the
 * fields readers index by (fuzz_fields.h) as well as by bytes.
 */
#include "fuzz_fields.h"
#include "fuzz_readers.h"

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	return fields_mutate(data, size, max_size, seed, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_path(data, size);

	fuzz_read_whole(path);
	fuzz_read_analysis(path);
	return 0;
}
