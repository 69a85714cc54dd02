// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Exported functions of a shared library and their file offsets (libelf). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elfnote.h"
#include "elfsyms.h"
#include "outfile.h"

/* PT_LOAD headers, to turn a symbol's vaddr into a file offset for uprobes. */
struct load_segs {
	GElf_Phdr *phdrs;
	size_t nr;
};

/* A function as found, plus what decides which of two same-named copies wins. */
struct sym_entry {
	struct elf_func func;
	bool hidden;		/* non-default version (name@VER, not name@@VER) */
	size_t index;		/* position in .dynsym, to make qsort stable */
};

struct sym_list {
	struct sym_entry *entries;
	size_t nr;
};

static void set_err(char *err, size_t err_sz, const char *fmt, ...)
{
	va_list ap;

	if (!err || !err_sz)
		return;
	va_start(ap, fmt);
	vsnprintf(err, err_sz, fmt, ap);
	va_end(ap);
}

static int load_segs__read(struct load_segs *segs, Elf *elf)
{
	size_t nr_phdrs, i;
	GElf_Phdr phdr;

	if (elf_getphdrnum(elf, &nr_phdrs))
		return -EINVAL;
	segs->phdrs = calloc(nr_phdrs ? nr_phdrs : 1, sizeof(*segs->phdrs));
	if (!segs->phdrs)
		return -ENOMEM;
	for (i = 0; i < nr_phdrs; i++) {
		if (!gelf_getphdr(elf, i, &phdr))
			return -EINVAL;
		if (phdr.p_type == PT_LOAD)
			segs->phdrs[segs->nr++] = phdr;
	}
	return 0;
}

static bool load_segs__offset(const struct load_segs *segs, __u64 vaddr, __u64 *offset)
{
	size_t i;

	for (i = 0; i < segs->nr; i++) {
		const GElf_Phdr *ph = &segs->phdrs[i];

		if (vaddr >= ph->p_vaddr && vaddr - ph->p_vaddr < ph->p_memsz) {
			*offset = vaddr - ph->p_vaddr + ph->p_offset;
			return true;
		}
	}
	return false;
}

static Elf_Scn *find_section(Elf *elf, GElf_Word type, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, shdr) && shdr->sh_type == type)
			return scn;
	}
	return NULL;
}

/* .gnu.version for the symbols; NULL when the library has no versions. */
static Elf_Data *find_versyms(Elf *elf)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_section(elf, SHT_GNU_versym, &shdr);

	return scn ? elf_getdata(scn, NULL) : NULL;
}

static bool is_hidden_version(Elf_Data *versyms, size_t index)
{
	GElf_Versym ver;

	if (!versyms || !gelf_getversym(versyms, index, &ver))
		return false;
	return ver & 0x8000;	/* VERSYM_HIDDEN */
}

static bool is_defined_func(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	if (type != STT_FUNC && type != STT_GNU_IFUNC)
		return false;
	return sym->st_shndx != SHN_UNDEF && sym->st_value != 0;
}

static int sym_list__add(struct sym_list *list, const char *name, const GElf_Sym *sym,
			 __u64 offset, bool hidden, size_t index)
{
	struct sym_entry *e = &list->entries[list->nr];

	e->func.name = strdup(name);
	if (!e->func.name)
		return -ENOMEM;
	e->func.vaddr = sym->st_value;
	e->func.offset = offset;
	e->hidden = hidden;
	e->index = index;
	list->nr++;
	return 0;
}

static int sym_list__collect(struct sym_list *list, Elf *elf, Elf_Scn *dynsym,
			     const GElf_Shdr *shdr, const struct load_segs *segs, __u64 *r_debug)
{
	Elf_Data *data = elf_getdata(dynsym, NULL);
	Elf_Data *versyms = find_versyms(elf);
	size_t nr_syms, i;
	GElf_Sym sym;
	__u64 offset;
	int err;

	if (!data || !shdr->sh_entsize)
		return -EINVAL;
	nr_syms = shdr->sh_size / shdr->sh_entsize;
	list->entries = calloc(nr_syms ? nr_syms : 1, sizeof(*list->entries));
	if (!list->entries)
		return -ENOMEM;
	for (i = 0; i < nr_syms; i++) {
		const char *name;

		if (!gelf_getsym(data, i, &sym))
			continue;
		if (GELF_ST_TYPE(sym.st_info) == STT_OBJECT && sym.st_shndx != SHN_UNDEF) {
			name = elf_strptr(elf, shdr->sh_link, sym.st_name);
			if (name && !strcmp(name, "_r_debug"))
				*r_debug = sym.st_value;
			continue;
		}
		if (!is_defined_func(&sym))
			continue;
		name = elf_strptr(elf, shdr->sh_link, sym.st_name);
		if (!name || !*name || !load_segs__offset(segs, sym.st_value, &offset))
			continue;
		err = sym_list__add(list, name, &sym, offset, is_hidden_version(versyms, i), i);
		if (err)
			return err;
	}
	return 0;
}

/* By name; among same-named copies the default version first, then .dynsym order. */
static int sym_entry__cmp(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;
	int by_name = strcmp(x->func.name, y->func.name);

	if (by_name)
		return by_name;
	if (x->hidden != y->hidden)
		return x->hidden - y->hidden;
	return (x->index > y->index) - (x->index < y->index);
}

/* Sort and move the first of each name into syms; the other copies are freed. */
static int sym_list__move_unique(struct sym_list *list, struct elf_syms *syms)
{
	size_t i;

	qsort(list->entries, list->nr, sizeof(*list->entries), sym_entry__cmp);
	syms->funcs = calloc(list->nr ? list->nr : 1, sizeof(*syms->funcs));
	if (!syms->funcs)
		return -ENOMEM;
	for (i = 0; i < list->nr; i++) {
		struct elf_func *func = &list->entries[i].func;

		if (syms->nr_funcs && !strcmp(syms->funcs[syms->nr_funcs - 1].name, func->name)) {
			free(func->name);
		} else {
			syms->funcs[syms->nr_funcs++] = *func;
		}
		func->name = NULL;
	}
	return 0;
}

static void sym_list__free(struct sym_list *list)
{
	size_t i;

	for (i = 0; i < list->nr; i++)
		free(list->entries[i].func.name);
	free(list->entries);
}

static int check_header(Elf *elf, const char *path, char *err, size_t err_sz)
{
	GElf_Ehdr ehdr;

	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		set_err(err, err_sz, "%s: not an ELF file", path);
		return -ENOEXEC;
	}
	if (gelf_getclass(elf) != ELFCLASS64 || !gelf_getehdr(elf, &ehdr) ||
	    (ehdr.e_type != ET_DYN && ehdr.e_type != ET_EXEC)) {
		set_err(err, err_sz, "%s: not a 64-bit shared library", path);
		return -ENOEXEC;
	}
	return 0;
}

static int read_funcs(Elf *elf, struct elf_syms *syms, const char *path, char *err, size_t err_sz)
{
	struct load_segs segs = { 0 };
	struct sym_list list = { 0 };
	Elf_Scn *dynsym;
	GElf_Shdr shdr;
	int ret;

	dynsym = find_section(elf, SHT_DYNSYM, &shdr);
	if (!dynsym) {
		set_err(err, err_sz, "%s: has no .dynsym", path);
		return -ENODATA;	/* not -ENOENT: the file itself exists */
	}
	ret = load_segs__read(&segs, elf);
	if (!ret)
		ret = sym_list__collect(&list, elf, dynsym, &shdr, &segs, &syms->r_debug_vaddr);
	if (!ret)
		ret = sym_list__move_unique(&list, syms);
	if (ret == -EINVAL)
		set_err(err, err_sz, "%s: malformed ELF: %s", path, elf_errmsg(-1));
	else if (ret)
		set_err(err, err_sz, "%s: %s", path, strerror(-ret));
	sym_list__free(&list);
	free(segs.phdrs);
	return ret;
}

int elf_syms__load(const char *path, struct elf_syms *syms, char *err, size_t err_sz)
{
	Elf *elf = NULL;
	int fd, ret;

	memset(syms, 0, sizeof(*syms));
	set_err(err, err_sz, "%s", "");
	if (elf_version(EV_CURRENT) == EV_NONE) {
		set_err(err, err_sz, "%s: libelf: %s", path, elf_errmsg(-1));
		return -EINVAL;
	}
	/* never waits on a FIFO: anything but a regular file is refused */
	fd = infile__open(path);
	if (fd < 0) {
		set_err(err, err_sz, "%s: %s", path, infile__strerror(-fd));
		return fd == -ENOTREG ? -EINVAL : fd;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ret = check_header(elf, path, err, err_sz);
	if (!ret)
		ret = read_funcs(elf, syms, path, err, err_sz);
	if (!ret)
		elfnote__build_id(elf, syms->build_id);
	else
		elf_syms__free(syms);
	elf_end(elf);
	close(fd);
	return ret;
}

static int func_name__cmp(const void *key, const void *elem)
{
	const struct elf_func *func = elem;

	return strcmp(key, func->name);
}

const struct elf_func *elf_syms__find(const struct elf_syms *syms, const char *name)
{
	if (!syms || !syms->funcs || !name)
		return NULL;
	return bsearch(name, syms->funcs, syms->nr_funcs, sizeof(*syms->funcs), func_name__cmp);
}

void elf_syms__free(struct elf_syms *syms)
{
	size_t i;

	if (!syms)
		return;
	for (i = 0; i < syms->nr_funcs; i++)
		free(syms->funcs[i].name);
	free(syms->funcs);
	memset(syms, 0, sizeof(*syms));
}

/* A defined STT_OBJECT called name in the symbol table scn (header shdr), or false. */
static bool find_object_in(Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr, const char *name,
			   __u64 *vaddr)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t nr_syms, i;
	GElf_Sym sym;

	if (!data || !shdr->sh_entsize)
		return false;
	nr_syms = shdr->sh_size / shdr->sh_entsize;
	for (i = 0; i < nr_syms; i++) {
		const char *sym_name;

		if (!gelf_getsym(data, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
		    sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		sym_name = elf_strptr(elf, shdr->sh_link, sym.st_name);
		if (sym_name && !strcmp(sym_name, name)) {
			*vaddr = sym.st_value;
			return true;
		}
	}
	return false;
}

/* The address the first PT_LOAD maps file offset 0 at (before the load bias). */
static int first_load_vaddr(Elf *elf, __u64 *vaddr)
{
	size_t nr_phdrs, i;
	GElf_Phdr phdr;

	if (elf_getphdrnum(elf, &nr_phdrs))
		return -EINVAL;
	for (i = 0; i < nr_phdrs; i++) {
		if (gelf_getphdr(elf, i, &phdr) && phdr.p_type == PT_LOAD) {
			*vaddr = (phdr.p_vaddr - phdr.p_offset) & ~(__u64)0xfff;
			return 0;
		}
	}
	return -EINVAL;
}

int elf_syms__object(const char *path, const char *name, struct elf_object *obj)
{
	GElf_Word types[] = { SHT_DYNSYM, SHT_SYMTAB };
	Elf *elf = NULL;
	GElf_Shdr shdr;
	Elf_Scn *scn;
	int fd, ret = -ENOENT;
	size_t i;

	memset(obj, 0, sizeof(*obj));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = infile__open(path);
	if (fd < 0)
		return fd == -ENOTREG ? -EINVAL : fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (check_header(elf, path, NULL, 0)) {
		ret = -ENOEXEC;
		goto out;
	}
	for (i = 0; i < sizeof(types) / sizeof(types[0]) && ret; i++) {
		scn = find_section(elf, types[i], &shdr);
		if (scn && find_object_in(elf, scn, &shdr, name, &obj->vaddr))
			ret = 0;
	}
	if (!ret)
		ret = first_load_vaddr(elf, &obj->load_vaddr);
out:
	elf_end(elf);
	close(fd);
	return ret;
}
