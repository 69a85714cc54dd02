// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "elfnote.h"
#include "symtab.h"

/*
 * Names stay in the file's string table, mapped: a large C++ library (libtorch)
 * has hundreds of thousands of functions, and copies of their names took more
 * memory than everything else a reader holds.
 */
struct sym {
	__u64 start;		/* vaddr */
	__u32 size;
	__u32 name;		/* offset in the string table */
};

struct symtab {
	struct sym *syms;	/* by start */
	size_t nr;
	GElf_Phdr *loads;	/* PT_LOAD: file offsets to vaddrs */
	size_t nr_loads;
	Elf *elf;		/* mapped while the table lives: the names are read from it */
	size_t strtab;		/* the names' section */
	int fd;
};

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->start != y->start)
		return (x->start > y->start) - (x->start < y->start);
	return (x->size < y->size) - (x->size > y->size);	/* the sized one first */
}

static Elf_Scn *find_section(Elf *elf, GElf_Word type, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, shdr) && shdr->sh_type == type)
			return scn;
	return NULL;
}

static int read_syms(struct symtab *t, Elf *elf)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_section(elf, SHT_SYMTAB, &shdr);
	Elf_Data *data;
	struct sym *fit;
	size_t nr;

	if (!scn)
		scn = find_section(elf, SHT_DYNSYM, &shdr);
	data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data || !shdr.sh_entsize)
		return 0;
	t->strtab = shdr.sh_link;
	nr = shdr.sh_size / shdr.sh_entsize;
	t->syms = calloc(nr ? nr : 1, sizeof(*t->syms));
	if (!t->syms)
		return -1;
	for (size_t i = 0; i < nr; i++) {
		GElf_Sym s;
		int type;

		if (!gelf_getsym(data, i, &s))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
		    !s.st_value || !s.st_name)
			continue;
		t->syms[t->nr++] = (struct sym){ s.st_value,
						 s.st_size > UINT32_MAX ? UINT32_MAX : s.st_size,
						 s.st_name };
	}
	fit = realloc(t->syms, (t->nr ? t->nr : 1) * sizeof(*t->syms));
	t->syms = fit ? fit : t->syms;
	qsort(t->syms, t->nr, sizeof(*t->syms), sym_cmp);
	return 0;
}

/* The pages the reading touched go back: a lookup maps in the one name it reads. */
static void release_pages(Elf *elf)
{
	size_t size;
	char *image = elf_rawfile(elf, &size);
	long page = sysconf(_SC_PAGESIZE);

	if (image && page > 0 && !((unsigned long)image % page))
		madvise(image, size, MADV_DONTNEED);
}

static int read_loads(struct symtab *t, Elf *elf)
{
	size_t nr;

	if (elf_getphdrnum(elf, &nr))
		return -1;
	t->loads = calloc(nr ? nr : 1, sizeof(*t->loads));
	if (!t->loads)
		return -1;
	for (size_t i = 0; i < nr; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD)
			t->loads[t->nr_loads++] = ph;
	}
	return 0;
}

struct symtab *symtab__load(const char *path, const char *build_id)
{
	char found[ELFNOTE_BUILD_ID_LEN];
	struct symtab *t = NULL;
	struct stat st;
	Elf *elf = NULL;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	/* a recording names the path: only a regular file is read (a FIFO would block) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto fail;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64)
		goto fail;
	elfnote__build_id(elf, found);
	if (strcmp(found, build_id))
		goto fail;	/* another build: its symbols would name the wrong code */
	t = calloc(1, sizeof(*t));
	if (!t || read_loads(t, elf) || read_syms(t, elf))
		goto fail;
	t->elf = elf;
	t->fd = fd;
	release_pages(elf);
	return t;
fail:
	if (t) {
		free(t->syms);
		free(t->loads);
		free(t);
	}
	elf_end(elf);
	close(fd);
	return NULL;
}

static bool off_to_vaddr(const struct symtab *t, __u64 off, __u64 *vaddr)
{
	for (size_t i = 0; i < t->nr_loads; i++) {
		const GElf_Phdr *ph = &t->loads[i];

		if (off >= ph->p_offset && off - ph->p_offset < ph->p_filesz) {
			*vaddr = off - ph->p_offset + ph->p_vaddr;
			return true;
		}
	}
	return false;
}

const char *symtab__lookup(const struct symtab *t, __u64 off, __u64 *from_start)
{
	size_t lo = 0, hi;
	__u64 vaddr, at;

	if (!t || !t->nr || !off || !off_to_vaddr(t, off, &vaddr))
		return NULL;
	at = vaddr - 1;	/* a return address may be the first byte after its call's function */
	hi = t->nr;
	while (lo < hi) {	/* first symbol starting after at */
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].start <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* among those starting at or before at, the nearest holding it */
	for (size_t i = lo; i-- > 0;) {
		const struct sym *s = &t->syms[i];

		if (!s->size || at < s->start + s->size) {
			*from_start = vaddr - s->start;
			return elf_strptr(t->elf, t->strtab, s->name);
		}
		if (lo - i > 8)
			break;
	}
	return NULL;
}

void symtab__free(struct symtab *t)
{
	if (!t)
		return;
	elf_end(t->elf);
	close(t->fd);
	free(t->syms);
	free(t->loads);
	free(t);
}
