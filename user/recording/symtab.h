/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Function symbols of an ELF file by address (.symtab, else .dynsym), for naming frames. */
#ifndef __SYMTAB_H
#define __SYMTAB_H

#include <linux/types.h>

struct symtab;

/*
 * path's functions when its build id is build_id (a file without one matches
 * only ""). NULL when it cannot be read, is no ELF or is another build.
 */
struct symtab *symtab__load(const char *path, const char *build_id);
/*
 * The function whose code holds file offset off (a return address less one
 * is in the calling function), and off's distance from its start (the
 * address's own, in *from_start). NULL if none.
 */
const char *symtab__lookup(const struct symtab *t, __u64 off, __u64 *from_start);
void symtab__free(struct symtab *t);

#endif /* __SYMTAB_H */
