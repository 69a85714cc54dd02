/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Exported functions of a shared library and their file offsets (libelf). */
#ifndef __ELFSYMS_H
#define __ELFSYMS_H

#include <stddef.h>
#include <linux/types.h>

struct elf_func {
	char *name;
	__u64 vaddr;		/* st_value */
	__u64 offset;		/* st_value - p_vaddr + p_offset of the containing PT_LOAD */
};

struct elf_syms {
	struct elf_func *funcs;	/* defined STT_FUNC/STT_GNU_IFUNC in .dynsym, sorted by name */
	size_t nr_funcs;
	char build_id[41];	/* hex from NT_GNU_BUILD_ID, "" if none */
	__u64 r_debug_vaddr;	/* the dynamic loader's _r_debug (st_value), 0 elsewhere */
};

/* Read path; 0 or -errno with a one-line reason in err. */
int elf_syms__load(const char *path, struct elf_syms *syms, char *err, size_t err_sz);
const struct elf_func *elf_syms__find(const struct elf_syms *syms, const char *name);
void elf_syms__free(struct elf_syms *syms);

/* A data object (STT_OBJECT) of an executable or library: where it sits before load bias. */
struct elf_object {
	__u64 vaddr;		/* st_value, from .dynsym or else .symtab */
	__u64 load_vaddr;	/* where file offset 0 sits: bias = mapping start - this */
};

/* 0, -ENOENT when path defines no such object, or -errno. */
int elf_syms__object(const char *path, const char *name, struct elf_object *obj);

#endif /* __ELFSYMS_H */
