// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "elfnote.h"

#define BUILD_ID_MAX_BYTES ((ELFNOTE_BUILD_ID_LEN - 1) / 2)

static void hex_encode(char *out, const unsigned char *bytes, size_t nr_bytes)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < nr_bytes; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 0xf];
	}
	out[2 * nr_bytes] = '\0';
}

static bool build_id__from_notes(char *out, Elf_Data *data)
{
	size_t off = 0, next, name_off, desc_off, nr_bytes;
	const char *base;
	GElf_Nhdr nhdr;

	if (!data || !data->d_buf)
		return false;
	base = data->d_buf;
	while ((next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == sizeof("GNU") &&
		    !memcmp(base + name_off, "GNU", sizeof("GNU")) && nhdr.n_descsz) {
			nr_bytes = nhdr.n_descsz;
			if (nr_bytes > BUILD_ID_MAX_BYTES)
				nr_bytes = BUILD_ID_MAX_BYTES;
			hex_encode(out, (const unsigned char *)base + desc_off, nr_bytes);
			return true;
		}
		off = next;
	}
	return false;
}

/* Sections first; PT_NOTE segments cover files whose section headers were stripped. */
void elfnote__build_id(Elf *elf, char out[ELFNOTE_BUILD_ID_LEN])
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Phdr phdr;
	size_t nr_phdrs, i;
	Elf_Type type;

	out[0] = '\0';
	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_NOTE &&
		    build_id__from_notes(out, elf_getdata(scn, NULL)))
			return;
	}
	if (elf_getphdrnum(elf, &nr_phdrs))
		return;
	for (i = 0; i < nr_phdrs; i++) {
		if (!gelf_getphdr(elf, i, &phdr) || phdr.p_type != PT_NOTE)
			continue;
		type = phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
		if (build_id__from_notes(out, elf_getdata_rawchunk(elf, phdr.p_offset,
								   phdr.p_filesz, type)))
			return;
	}
}

int elfnote__build_id_file(const char *path, char out[ELFNOTE_BUILD_ID_LEN])
{
	struct stat st;
	Elf *elf;
	int fd, ret = 0;

	out[0] = '\0';
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOEXEC;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		elfnote__build_id(elf, out);
	else
		ret = -ENOEXEC;
	elf_end(elf);
	close(fd);
	return ret;
}
