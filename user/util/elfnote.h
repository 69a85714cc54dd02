/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* An ELF file's GNU build id (libelf): what says two copies of a library are the same build. */
#ifndef __ELFNOTE_H
#define __ELFNOTE_H

#include <libelf.h>

#define ELFNOTE_BUILD_ID_LEN	41	/* hex of up to 20 bytes, NUL included */

/* From NT_GNU_BUILD_ID of an open ELF, as hex; "" if it has none. */
void elfnote__build_id(Elf *elf, char out[ELFNOTE_BUILD_ID_LEN]);
/* The same for a file; 0 or -errno ("" in out then). */
int elfnote__build_id_file(const char *path, char out[ELFNOTE_BUILD_ID_LEN]);

#endif /* __ELFNOTE_H */
