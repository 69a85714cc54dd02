// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Any bytes as a library whose exported functions and a data object are read
 * (elfsyms.c), and
 * as a program whose DT_RPATH/DT_RUNPATH or #! line says where the loader
 * would look for libcuda (ldsearch.c).
 */
#include <string.h>
#include "elfsyms.h"
#include "fuzz_input.h"
#include "ldsearch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_path(data, size);
	struct elf_syms syms;
	struct elf_object obj;
	char err[512], found[4096];

	if (!elf_syms__load(path, &syms, err, sizeof(err))) {
		for (size_t i = 0; i < syms.nr_funcs; i++)
			if (elf_syms__find(&syms, syms.funcs[i].name) != &syms.funcs[i])
				abort();	/* sorted and unique: each name finds itself */
		elf_syms__free(&syms);
	}
	if (!elf_syms__object(path, "_PyRuntime", &obj) && !obj.vaddr)
		abort();	/* a symbol found has an address */
	/* a file name nobody has, so that no directory searched can hold it */
	ldsearch__library(path, "libspecprobe-fuzz-none.so.1", found, sizeof(found));
	return 0;
}
