// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "ldsearch.h"
#include "outfile.h"

#define CACHE_OLD_MAGIC "ld.so-1.7.0"
#define CACHE_NEW_MAGIC "glibc-ld.so.cache1.1"
#define CACHE_NEW_HDR	48	/* magic+version, nlibs, len_strings, flags, extension, unused */
#define CACHE_NEW_ENTRY 24	/* flags, key, value, osversion, hwcap */
#define CACHE_OLD_ENTRY 12	/* flags, key, value */
#define CACHE_ELF_X8664 0x0303	/* FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 */

static const char *const default_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
	"/lib", "/usr/lib",
};

int ldsearch__program(const char *name, char *out, size_t out_sz)
{
	const char *path = getenv("PATH");
	char *dirs, *dir, *save = NULL;
	int ret = -ENOENT;

	if (strchr(name, '/')) {
		struct stat st;

		snprintf(out, out_sz, "%s", name);
		if (!stat(out, &st) && !S_ISREG(st.st_mode))
			return -ENOTREG;
		return access(out, X_OK) ? -errno : 0;
	}
	dirs = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (!dirs)
		return -ENOMEM;
	for (dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		struct stat st;

		snprintf(out, out_sz, "%s/%s", *dir ? dir : ".", name);
		if (!stat(out, &st) && S_ISREG(st.st_mode) && !access(out, X_OK)) {
			ret = 0;
			break;
		}
	}
	free(dirs);
	return ret;
}

/* "#!/usr/bin/env python3" is left alone: env finds its program by PATH, like us. */
static int script_interpreter(const char *program, char *out, size_t out_sz)
{
	char line[PATH_MAX + 3], *end;
	int ret = -ENOEXEC, fd = infile__open(program);
	FILE *f;

	if (fd < 0)
		return fd;
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return -errno;
	}
	if (fgets(line, sizeof(line), f) && line[0] == '#' && line[1] == '!') {
		char *interp = line + 2 + strspn(line + 2, " \t");
		bool more;

		end = interp + strcspn(interp, " \t\n");
		/* the word after env, if the line goes on: never past its end */
		more = *end == ' ' || *end == '\t';
		*end = '\0';
		if (!strcmp(interp, "/usr/bin/env") || !strcmp(interp, "/bin/env")) {
			char *word = more ? end + 1 + strspn(end + 1, " \t") : end;

			word[strcspn(word, " \t\n")] = '\0';
			ret = *word ? ldsearch__program(word, out, out_sz) : -ENOEXEC;
		} else if (*interp) {
			snprintf(out, out_sz, "%s", interp);
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

/* DT_RPATH and DT_RUNPATH of an ELF file, $ORIGIN expanded; strings are malloc'd. */
static int elf_search_paths(const char *program, char **rpath, char **runpath)
{
	char origin[PATH_MAX], *slash;
	Elf_Scn *scn = NULL;
	int fd, ret = 0;
	Elf *elf;

	*rpath = *runpath = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = infile__open(program);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		close(fd);
		return -ENOEXEC;
	}
	if (!realpath(program, origin))
		snprintf(origin, sizeof(origin), "%s", program);
	slash = strrchr(origin, '/');
	if (slash)
		*slash = '\0';
	while ((scn = elf_nextscn(elf, scn)) && !ret) {
		GElf_Shdr shdr;
		Elf_Data *data;

		/* a zero entry size would divide by zero: no table to read */
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNAMIC || !shdr.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize; i++) {
			const char *value;
			char **slot;
			GElf_Dyn dyn;

			if (!gelf_getdyn(data, i, &dyn))
				break;
			if (dyn.d_tag != DT_RPATH && dyn.d_tag != DT_RUNPATH)
				continue;
			slot = dyn.d_tag == DT_RPATH ? rpath : runpath;
			value = elf_strptr(elf, shdr.sh_link, dyn.d_un.d_val);
			if (!value || *slot)
				continue;
			*slot = malloc(strlen(value) * (strlen(origin) + 1) + 1);
			if (!*slot) {
				ret = -ENOMEM;
				break;
			}
			/* $ORIGIN and ${ORIGIN}: the directory of the program */
			for (char *o = *slot; ; ) {
				const char *tok = strstr(value, "$ORIGIN");
				const char *braced = strstr(value, "${ORIGIN}");
				size_t skip = 7;

				if (braced && (!tok || braced < tok)) {
					tok = braced;
					skip = 9;
				}
				if (!tok) {
					strcpy(o, value);
					break;
				}
				memcpy(o, value, tok - value);
				o += tok - value;
				o = stpcpy(o, origin);
				value = tok + skip;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return ret;
}

/* First directory of a colon-separated list holding soname. */
static int search_dirs(const char *list, const char *soname, char *out, size_t out_sz)
{
	char *dirs, *dir, *save = NULL;
	int ret = -ENOENT;

	if (!list || !*list)
		return -ENOENT;
	dirs = strdup(list);
	if (!dirs)
		return -ENOMEM;
	for (dir = strtok_r(dirs, ":;", &save); dir; dir = strtok_r(NULL, ":;", &save)) {
		snprintf(out, out_sz, "%s/%s", *dir ? dir : ".", soname);
		if (!access(out, R_OK)) {
			ret = 0;
			break;
		}
	}
	free(dirs);
	return ret;
}

static uint32_t load_u32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int ldsearch__cache(const char *cache_path, const char *soname, char *out, size_t out_sz)
{
	const unsigned char *map, *hdr;
	size_t size, base = 0;
	int ret = -ENOENT, fd;
	struct stat st;

	fd = open(cache_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size < CACHE_NEW_HDR) {
		close(fd);
		return -ENOENT;
	}
	size = st.st_size;
	map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	/* an old-format table may come first; the new one follows, 8-byte aligned */
	if (!memcmp(map, CACHE_OLD_MAGIC, sizeof(CACHE_OLD_MAGIC) - 1)) {
		size_t nlibs = load_u32(map + sizeof(CACHE_OLD_MAGIC) - 1);

		base = sizeof(CACHE_OLD_MAGIC) - 1 + 4 + nlibs * CACHE_OLD_ENTRY;
		base = (base + 7) & ~(size_t)7;
	}
	hdr = map + base;
	if (base + CACHE_NEW_HDR > size || memcmp(hdr, CACHE_NEW_MAGIC, sizeof(CACHE_NEW_MAGIC) - 1))
		goto out;
	for (size_t i = 0, n = load_u32(hdr + 20); i < n; i++) {
		const unsigned char *e = hdr + CACHE_NEW_HDR + i * CACHE_NEW_ENTRY;
		size_t key, value;

		if (e + CACHE_NEW_ENTRY > map + size)
			break;
		/* string offsets count from the new table's start */
		key = base + load_u32(e + 4);
		value = base + load_u32(e + 8);
		if ((load_u32(e) & 0xffff) != CACHE_ELF_X8664 || key >= size || value >= size)
			continue;
		if (strnlen((const char *)map + key, size - key) == size - key ||
		    strcmp((const char *)map + key, soname))
			continue;
		if (strnlen((const char *)map + value, size - value) < size - value &&
		    !access((const char *)map + value, R_OK)) {
			snprintf(out, out_sz, "%s", (const char *)map + value);
			ret = 0;
			break;
		}
	}
out:
	munmap((void *)map, size);
	return ret;
}

int ldsearch__library(const char *program, const char *soname, char *out, size_t out_sz)
{
	char interp[PATH_MAX], *rpath, *runpath;
	int ret;

	if (!script_interpreter(program, interp, sizeof(interp)))
		program = interp;
	if (elf_search_paths(program, &rpath, &runpath))
		rpath = runpath = NULL;
	/* DT_RPATH counts only when there is no DT_RUNPATH */
	ret = runpath ? -ENOENT : search_dirs(rpath, soname, out, out_sz);
	if (ret)
		ret = search_dirs(getenv("LD_LIBRARY_PATH"), soname, out, out_sz);
	if (ret)
		ret = search_dirs(runpath, soname, out, out_sz);
	if (ret)
		ret = ldsearch__cache("/etc/ld.so.cache", soname, out, out_sz);
	for (size_t i = 0; ret && i < sizeof(default_dirs) / sizeof(default_dirs[0]); i++)
		ret = search_dirs(default_dirs[i], soname, out, out_sz);
	free(rpath);
	free(runpath);
	return ret;
}
