/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Where the dynamic loader would find a library for a program about to be
 * started: DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.cache, then the
 * default directories, as ld.so(8) orders them.
 */
#ifndef __LDSEARCH_H
#define __LDSEARCH_H

#include <stddef.h>

/* The program execvp() would run for name (PATH search); 0, -errno, or -ENOTREG (a FIFO...). */
int ldsearch__program(const char *name, char *out, size_t out_sz);
/*
 * Path of soname as the loader would resolve it for program (an ELF file, or a
 * script whose #! interpreter is one); 0, or -ENOENT when nothing is found.
 */
int ldsearch__library(const char *program, const char *soname, char *out, size_t out_sz);
/* Look soname up in an ld.so.cache file (new format, after an old one or alone). */
int ldsearch__cache(const char *cache_path, const char *soname, char *out, size_t out_sz);

#endif /* __LDSEARCH_H */
