// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Malloc tuning: large blocks on a heap backed by transparent huge pages (heap.h). */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "heap.h"

#define HEAP_RESERVE	(1ul << 30)	/* address space only: pages come when touched */
#define HUGE_PAGE	(2ul << 20)
#define PAD_DEFAULT	(128 * 1024)	/* glibc's M_TOP_PAD */
#define MMAP_MAX	(32 << 20)	/* the largest mmap threshold glibc takes on 64-bit */

void heap__tune(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	size_t reserve = HEAP_RESERVE;
	uintptr_t start, end;
	void *volatile probe;

	/*
	 * At most an eighth of memory: little to charge where overcommit is strict.
	 * Where the heap cannot grow, malloc uses mmap and nothing is advised.
	 */
	if (pages > 0 && psize > 0 && (size_t)pages * psize / 8 < reserve)
		reserve = (size_t)pages * psize / 8;
	/*
	 * Blocks from mmap are unmapped when freed and fault again when the next
	 * array grows; on the heap, freed memory is reused and never trimmed.
	 */
	mallopt(M_MMAP_THRESHOLD, MMAP_MAX);
	mallopt(M_TRIM_THRESHOLD, reserve * 2);
	mallopt(M_TOP_PAD, reserve);
	start = (uintptr_t)sbrk(0);
	probe = malloc(PAD_DEFAULT * 4);	/* more than the top chunk: the heap grows now */
	end = (uintptr_t)sbrk(0);
	free(probe);
	mallopt(M_TOP_PAD, PAD_DEFAULT);
	start = (start + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	/* a 2 MiB page takes one fault where 512 small ones took 512 */
	if (end > start + HUGE_PAGE)
		madvise((void *)start, end - start, MADV_HUGEPAGE);
}
