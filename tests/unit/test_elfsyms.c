// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * elf_syms against the NVIDIA libraries on this machine, checked against a
 * second parser here (plain <elf.h> + pread) and against readelf.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "elfsyms.h"

#define STUB_PATH "/usr/local/cuda/lib64/stubs/libcuda.so"
#define NCCL_PATH "/usr/local/cuda/lib64/libnccl.so.2"
#define LIBC_PATH "/lib/x86_64-linux-gnu/libc.so.6"

struct loaded_lib {
	const char *path;
	char real[PATH_MAX];
	bool present;
	int load_rc;
	char err[512];
	struct elf_syms syms;
};

static struct loaded_lib stub_lib = { .path = STUB_PATH };
static struct loaded_lib nccl_lib = { .path = NCCL_PATH };
static struct loaded_lib libc_lib = { .path = LIBC_PATH };

/* The second implementation: just enough of the file, read by hand. */
struct raw_sym {
	const char *name;
	Elf64_Addr value;
};

struct raw_elf {
	Elf64_Ehdr ehdr;
	Elf64_Phdr *phdrs;
	Elf64_Shdr *shdrs;
	char *strtab;
	struct raw_sym *funcs;	/* defined functions, sorted by name */
	size_t nr_funcs;
};

static void *pread_alloc(int fd, size_t size, off_t offset)
{
	char *buf = malloc(size + 1);

	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, size, offset), (ssize_t)size);
	buf[size] = '\0';
	return buf;
}

static bool raw_elf__offset(const struct raw_elf *raw, Elf64_Addr vaddr, __u64 *offset)
{
	int i;

	for (i = 0; i < raw->ehdr.e_phnum; i++) {
		const Elf64_Phdr *ph = &raw->phdrs[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (ph->p_vaddr <= vaddr && vaddr < ph->p_vaddr + ph->p_memsz) {
			*offset = vaddr - ph->p_vaddr + ph->p_offset;
			return true;
		}
	}
	return false;
}

static int raw_sym__cmp(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static void raw_elf__read_funcs(struct raw_elf *raw, int fd, const Elf64_Shdr *dynsym)
{
	const Elf64_Shdr *strsec = &raw->shdrs[dynsym->sh_link];
	size_t nr_syms = dynsym->sh_size / sizeof(Elf64_Sym), i;
	Elf64_Sym *syms = pread_alloc(fd, dynsym->sh_size, dynsym->sh_offset);
	__u64 offset;

	raw->strtab = pread_alloc(fd, strsec->sh_size, strsec->sh_offset);
	raw->funcs = calloc(nr_syms + 1, sizeof(*raw->funcs));
	assert_non_null(raw->funcs);
	for (i = 0; i < nr_syms; i++) {
		int type = ELF64_ST_TYPE(syms[i].st_info);

		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (syms[i].st_shndx == SHN_UNDEF || !syms[i].st_value)
			continue;
		if (!raw_elf__offset(raw, syms[i].st_value, &offset))
			continue;
		raw->funcs[raw->nr_funcs].name = raw->strtab + syms[i].st_name;
		raw->funcs[raw->nr_funcs++].value = syms[i].st_value;
	}
	qsort(raw->funcs, raw->nr_funcs, sizeof(*raw->funcs), raw_sym__cmp);
	free(syms);
}

static void raw_elf__open(struct raw_elf *raw, const char *path)
{
	int fd = open(path, O_RDONLY);
	int i;

	assert_true(fd >= 0);
	memset(raw, 0, sizeof(*raw));
	assert_int_equal(pread(fd, &raw->ehdr, sizeof(raw->ehdr), 0), sizeof(raw->ehdr));
	assert_memory_equal(raw->ehdr.e_ident, ELFMAG, SELFMAG);
	assert_int_equal(raw->ehdr.e_ident[EI_CLASS], ELFCLASS64);
	assert_int_equal(raw->ehdr.e_phentsize, sizeof(Elf64_Phdr));
	assert_int_equal(raw->ehdr.e_shentsize, sizeof(Elf64_Shdr));
	raw->phdrs = pread_alloc(fd, raw->ehdr.e_phnum * sizeof(Elf64_Phdr), raw->ehdr.e_phoff);
	raw->shdrs = pread_alloc(fd, raw->ehdr.e_shnum * sizeof(Elf64_Shdr), raw->ehdr.e_shoff);
	for (i = 0; i < raw->ehdr.e_shnum; i++) {
		if (raw->shdrs[i].sh_type == SHT_DYNSYM) {
			raw_elf__read_funcs(raw, fd, &raw->shdrs[i]);
			break;
		}
	}
	close(fd);
}

static void raw_elf__free(struct raw_elf *raw)
{
	free(raw->phdrs);
	free(raw->shdrs);
	free(raw->strtab);
	free(raw->funcs);
}

static size_t raw_elf__nr_unique(const struct raw_elf *raw)
{
	size_t i, nr = raw->nr_funcs ? 1 : 0;

	for (i = 1; i < raw->nr_funcs; i++)
		nr += strcmp(raw->funcs[i - 1].name, raw->funcs[i].name) != 0;
	return nr;
}

/* Failures are reported by the tests, not here: cmocka only asserts inside a test. */
static void lib__load(struct loaded_lib *lib)
{
	if (!realpath(lib->path, lib->real))
		return;
	lib->present = true;
	lib->load_rc = elf_syms__load(lib->real, &lib->syms, lib->err, sizeof(lib->err));
}

static int group_setup(void **state)
{
	lib__load(&stub_lib);
	lib__load(&nccl_lib);
	lib__load(&libc_lib);
	return 0;
}

static int group_teardown(void **state)
{
	elf_syms__free(&stub_lib.syms);
	elf_syms__free(&nccl_lib.syms);
	elf_syms__free(&libc_lib.syms);
	return 0;
}

/* A macro because skip() must run in the test's own frame. */
#define require_lib(lib)                                                               \
	do {                                                                           \
		if (!(lib)->present) {                                                 \
			print_message("SKIP: %s not found on this machine\n", (lib)->path);  \
			skip();                                                        \
		}                                                                      \
		if ((lib)->load_rc)                                                    \
			fail_msg("elf_syms__load: %s (%d)", (lib)->err, (lib)->load_rc); \
	} while (0)

static void assert_found(const struct elf_syms *syms, const char *name)
{
	const struct elf_func *func = elf_syms__find(syms, name);

	if (!func)
		fail_msg("%s not found", name);
	assert_string_equal(func->name, name);
	assert_true(func->vaddr != 0);
}

static void test_stub_has_driver_entry_points(void **state)
{
	static const char *const names[] = {
		"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuGraphLaunch",
		"cuStreamSynchronize", "cuMemcpyDtoHAsync_v2",
	};
	size_t i;

	require_lib(&stub_lib);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_found(&stub_lib.syms, names[i]);
	assert_null(elf_syms__find(&stub_lib.syms, "cuNoSuchFunction"));
	assert_null(elf_syms__find(&stub_lib.syms, ""));
}

static void test_nccl_profiling_alias_shares_offset(void **state)
{
	const struct elf_func *api, *alias;

	require_lib(&nccl_lib);
	api = elf_syms__find(&nccl_lib.syms, "ncclAllReduce");
	alias = elf_syms__find(&nccl_lib.syms, "pncclAllReduce");
	assert_non_null(api);
	assert_non_null(alias);
	assert_int_equal(api->offset, alias->offset);
	assert_int_equal(api->vaddr, alias->vaddr);
}

static void check_against_raw(const struct loaded_lib *lib)
{
	struct raw_elf raw;
	struct raw_sym key, *found;
	__u64 offset;
	size_t i;

	raw_elf__open(&raw, lib->real);
	assert_int_equal(lib->syms.nr_funcs, raw_elf__nr_unique(&raw));
	for (i = 0; i < lib->syms.nr_funcs; i++) {
		const struct elf_func *func = &lib->syms.funcs[i];

		key.name = func->name;
		found = bsearch(&key, raw.funcs, raw.nr_funcs, sizeof(*raw.funcs), raw_sym__cmp);
		if (!found)
			fail_msg("%s not in the raw .dynsym", func->name);
		assert_true(raw_elf__offset(&raw, func->vaddr, &offset));
		assert_int_equal(func->offset, offset);
	}
	raw_elf__free(&raw);
}

static void test_offsets_match_program_headers(void **state)
{
	struct loaded_lib *lib = *state;

	require_lib(lib);
	check_against_raw(lib);
}

static void check_sorted_unique(const struct elf_syms *syms)
{
	size_t i;

	assert_true(syms->nr_funcs > 0);
	for (i = 1; i < syms->nr_funcs; i++) {
		if (strcmp(syms->funcs[i - 1].name, syms->funcs[i].name) >= 0)
			fail_msg("out of order: %s before %s", syms->funcs[i - 1].name,
				 syms->funcs[i].name);
	}
	for (i = 0; i < syms->nr_funcs; i++)
		assert_ptr_equal(elf_syms__find(syms, syms->funcs[i].name), &syms->funcs[i]);
}

static void test_sorted_by_name(void **state)
{
	struct loaded_lib *lib = *state;

	require_lib(lib);
	check_sorted_unique(&lib->syms);
}

/* Returns false when readelf is missing or prints no build id. */
static bool readelf_build_id(const char *path, char *out, size_t out_sz)
{
	char cmd[PATH_MAX + 64], line[512], *at;
	bool found = false;
	FILE *pipe;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	pipe = popen(cmd, "r");
	if (!pipe)
		return false;
	while (!found && fgets(line, sizeof(line), pipe)) {
		at = strstr(line, "Build ID:");
		if (at && sscanf(at, "Build ID: %40s", out) == 1)
			found = strlen(out) < out_sz;
	}
	pclose(pipe);
	return found;
}

static void check_build_id(const struct loaded_lib *lib)
{
	char expected[64] = "";
	size_t i;

	assert_int_equal(strlen(lib->syms.build_id), 40);
	for (i = 0; i < 40; i++)
		assert_non_null(strchr("0123456789abcdef", lib->syms.build_id[i]));
	if (!readelf_build_id(lib->real, expected, sizeof(expected))) {
		print_message("SKIP: readelf gave no build id for %s\n", lib->real);
		skip();
	}
	assert_string_equal(lib->syms.build_id, expected);
}

static void test_build_id_matches_readelf(void **state)
{
	struct loaded_lib *lib = *state;

	require_lib(lib);
	check_build_id(lib);
}

/* glibc lists memcpy@GLIBC_2.2.5 before memcpy@@GLIBC_2.14: the default must win. */
static bool readelf_default_version_value(const char *path, const char *name, __u64 *value)
{
	char cmd[PATH_MAX + 64], line[1024], want[128], sym[512];
	unsigned long long v;
	bool found = false;
	FILE *pipe;

	snprintf(cmd, sizeof(cmd), "readelf -W --dyn-syms '%s' 2>/dev/null", path);
	snprintf(want, sizeof(want), "%s@@", name);
	pipe = popen(cmd, "r");
	if (!pipe)
		return false;
	while (!found && fgets(line, sizeof(line), pipe)) {
		if (sscanf(line, "%*s %llx %*s %*s %*s %*s %*s %511s", &v, sym) != 2)
			continue;
		if (!strncmp(sym, want, strlen(want))) {
			*value = v;
			found = true;
		}
	}
	pclose(pipe);
	return found;
}

static void test_versioned_duplicate_keeps_default(void **state)
{
	const struct elf_func *func;
	__u64 expected;

	require_lib(&libc_lib);
	if (!readelf_default_version_value(libc_lib.real, "memcpy", &expected)) {
		print_message("SKIP: no memcpy@@ in %s\n", libc_lib.real);
		skip();
	}
	func = elf_syms__find(&libc_lib.syms, "memcpy");
	assert_non_null(func);
	assert_int_equal(func->vaddr, expected);
	check_sorted_unique(&libc_lib.syms);
}

static void test_missing_file(void **state)
{
	const char *path = "/nonexistent/specprobe/libcuda.so";
	struct elf_syms syms;
	char err[256];

	assert_int_equal(elf_syms__load(path, &syms, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent/specprobe/libcuda.so: No such file or directory");
	assert_null(syms.funcs);
	assert_int_equal(syms.nr_funcs, 0);
	elf_syms__free(&syms);
}

/* A FIFO or a folder given as a library: refused at once, never read (a FIFO would block). */
static void test_not_a_regular_file(void **state)
{
	char dir[] = "/tmp/test_elfsyms.XXXXXX", fifo[64], err[256], want[320];
	struct elf_syms syms;
	struct elf_object obj;

	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/libcuda.so.1", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10);	/* a blocking open would hang the test: fail it instead */
	assert_int_equal(elf_syms__load(fifo, &syms, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: not a regular file", fifo);
	assert_string_equal(err, want);
	assert_int_equal(elf_syms__object(fifo, "x", &obj), -EINVAL);
	assert_int_equal(elf_syms__load(dir, &syms, err, sizeof(err)), -EINVAL);
	alarm(0);
	assert_int_equal(unlink(fifo), 0);
	assert_int_equal(rmdir(dir), 0);
}

static void write_temp(char *path, const void *data, size_t size)
{
	int fd;

	strcpy(path, "/tmp/test_elfsyms.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, size), (ssize_t)size);
	close(fd);
}

static void check_load_error(const void *data, size_t size, int rc, const char *reason)
{
	char path[64], err[256], expected[320];
	struct elf_syms syms;

	write_temp(path, data, size);
	assert_int_equal(elf_syms__load(path, &syms, err, sizeof(err)), rc);
	snprintf(expected, sizeof(expected), "%s: %s", path, reason);
	assert_string_equal(err, expected);
	assert_int_equal(syms.nr_funcs, 0);
	elf_syms__free(&syms);
	unlink(path);
}

static void test_text_file_is_not_elf(void **state)
{
	static const char text[] = "gpu-host-01\n";

	check_load_error(text, sizeof(text) - 1, -ENOEXEC, "not an ELF file");
	check_load_error("", 0, -ENOEXEC, "not an ELF file");
}

static Elf64_Ehdr bare_ehdr64(Elf64_Half type)
{
	Elf64_Ehdr ehdr = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB,
			     EV_CURRENT },
		.e_type = type, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_ehsize = sizeof(Elf64_Ehdr),
	};

	return ehdr;
}

static void test_wrong_kind_of_elf(void **state)
{
	Elf32_Ehdr ehdr32 = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS32, ELFDATA2LSB,
			     EV_CURRENT },
		.e_type = ET_DYN, .e_machine = EM_386, .e_version = EV_CURRENT,
		.e_ehsize = sizeof(Elf32_Ehdr),
	};
	Elf64_Ehdr rel = bare_ehdr64(ET_REL);
	Elf64_Ehdr dyn = bare_ehdr64(ET_DYN);

	check_load_error(&ehdr32, sizeof(ehdr32), -ENOEXEC, "not a 64-bit shared library");
	check_load_error(&rel, sizeof(rel), -ENOEXEC, "not a 64-bit shared library");
	check_load_error(&dyn, sizeof(dyn), -ENODATA, "has no .dynsym");
}

/*
 * Real libraries map text at p_vaddr == p_offset, so they cannot tell a right
 * offset from a raw vaddr; this hand-made library maps its text 2 MiB above
 * its file offset, has a build id only in PT_NOTE, and one of each symbol the
 * loader must skip.
 */
#define IMG_NOTE 0x100
#define IMG_DYNSTR 0x200
#define IMG_DYNSYM 0x300
#define IMG_SHDRS 0x600
#define IMG_TEXT_VADDR 0x201000
#define IMG_TEXT_OFFSET 0x1000

struct img_sym {
	const char *name;
	unsigned char info;
	Elf64_Half shndx;
	Elf64_Addr value;
};

static const struct img_sym img_syms[] = {
	{ "gpu_func", ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 1, IMG_TEXT_VADDR + 0x40 },
	{ "dup", ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 1, IMG_TEXT_VADDR + 0x10 },
	{ "dup", ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 1, IMG_TEXT_VADDR + 0x20 },
	{ "weak_func", ELF64_ST_INFO(STB_WEAK, STT_FUNC), 1, IMG_TEXT_VADDR + 0xc0 },
	{ "ifunc_impl", ELF64_ST_INFO(STB_GLOBAL, STT_GNU_IFUNC), 1, IMG_TEXT_VADDR + 0x80 },
	{ "low_func", ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 1, 0x500 },
	{ "undef_func", ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), SHN_UNDEF, 0 },
	{ "data_obj", ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), 1, IMG_TEXT_VADDR + 0x100 },
	{ "zero_func", ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 1, 0 },
	{ "unmapped_func", ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 1, 0x900000 },
	{ "edge_func", ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 1, IMG_TEXT_VADDR + 0x1000 },
};

#define IMG_NR_SYMS (sizeof(img_syms) / sizeof(img_syms[0]) + 1)

static void img_put_headers(unsigned char *img)
{
	Elf64_Ehdr ehdr = bare_ehdr64(ET_DYN);
	Elf64_Phdr phdrs[] = {
		{ .p_type = PT_LOAD, .p_flags = PF_R, .p_filesz = IMG_TEXT_OFFSET,
		  .p_memsz = IMG_TEXT_OFFSET, .p_align = 0x1000 },
		{ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = IMG_TEXT_OFFSET,
		  .p_vaddr = IMG_TEXT_VADDR, .p_memsz = 0x1000, .p_align = 0x1000 },
		{ .p_type = PT_NOTE, .p_flags = PF_R, .p_offset = IMG_NOTE, .p_vaddr = IMG_NOTE,
		  .p_filesz = sizeof(Elf64_Nhdr) + 4 + 20, .p_memsz = sizeof(Elf64_Nhdr) + 4 + 20,
		  .p_align = 4 },
	};
	Elf64_Shdr shdrs[] = {
		{ 0 },
		{ .sh_type = SHT_DYNSYM, .sh_offset = IMG_DYNSYM, .sh_link = 2, .sh_info = 1,
		  .sh_size = IMG_NR_SYMS * sizeof(Elf64_Sym), .sh_entsize = sizeof(Elf64_Sym),
		  .sh_addralign = 8 },
		{ .sh_type = SHT_STRTAB, .sh_offset = IMG_DYNSTR,
		  .sh_size = IMG_DYNSYM - IMG_DYNSTR, .sh_addralign = 1 },
	};

	ehdr.e_phoff = sizeof(ehdr);
	ehdr.e_phentsize = sizeof(Elf64_Phdr);
	ehdr.e_phnum = sizeof(phdrs) / sizeof(phdrs[0]);
	ehdr.e_shoff = IMG_SHDRS;
	ehdr.e_shentsize = sizeof(Elf64_Shdr);
	ehdr.e_shnum = sizeof(shdrs) / sizeof(shdrs[0]);
	memcpy(img, &ehdr, sizeof(ehdr));
	memcpy(img + ehdr.e_phoff, phdrs, sizeof(phdrs));
	memcpy(img + IMG_SHDRS, shdrs, sizeof(shdrs));
}

static void img_put_note_and_syms(unsigned char *img)
{
	Elf64_Nhdr nhdr = { .n_namesz = 4, .n_descsz = 20, .n_type = NT_GNU_BUILD_ID };
	Elf64_Sym *syms = (Elf64_Sym *)(img + IMG_DYNSYM);
	size_t i, str_off = 1;	/* dynstr starts with the empty name */

	memcpy(img + IMG_NOTE, &nhdr, sizeof(nhdr));
	memcpy(img + IMG_NOTE + sizeof(nhdr), "GNU", 4);
	for (i = 0; i < 20; i++)
		img[IMG_NOTE + sizeof(nhdr) + 4 + i] = 0xf0 | i;
	for (i = 0; i < IMG_NR_SYMS - 1; i++) {
		Elf64_Sym sym = {
			.st_name = str_off, .st_info = img_syms[i].info,
			.st_shndx = img_syms[i].shndx, .st_value = img_syms[i].value,
		};

		strcpy((char *)img + IMG_DYNSTR + str_off, img_syms[i].name);
		str_off += strlen(img_syms[i].name) + 1;
		memcpy(&syms[i + 1], &sym, sizeof(sym));
	}
	assert_true(IMG_DYNSTR + str_off <= IMG_DYNSYM);
}

static void check_img_func(const struct elf_syms *syms, const char *name, __u64 offset)
{
	const struct elf_func *func = elf_syms__find(syms, name);

	if (!func)
		fail_msg("%s not found", name);
	assert_int_equal(func->offset, offset);
}

static void test_offset_translation_and_filters(void **state)
{
	static unsigned char img[IMG_SHDRS + 3 * sizeof(Elf64_Shdr)];
	static const char *const skipped[] = {
		"undef_func", "data_obj", "zero_func", "unmapped_func", "edge_func",
	};
	struct elf_syms syms;
	char path[64], err[256];
	size_t i;

	img_put_headers(img);
	img_put_note_and_syms(img);
	write_temp(path, img, sizeof(img));
	assert_int_equal(elf_syms__load(path, &syms, err, sizeof(err)), 0);
	unlink(path);
	assert_int_equal(syms.nr_funcs, 5);
	check_img_func(&syms, "gpu_func", IMG_TEXT_OFFSET + 0x40);
	check_img_func(&syms, "dup", IMG_TEXT_OFFSET + 0x10);	/* first copy wins */
	check_img_func(&syms, "weak_func", IMG_TEXT_OFFSET + 0xc0);
	check_img_func(&syms, "ifunc_impl", IMG_TEXT_OFFSET + 0x80);
	check_img_func(&syms, "low_func", 0x500);
	for (i = 0; i < sizeof(skipped) / sizeof(skipped[0]); i++)
		assert_null(elf_syms__find(&syms, skipped[i]));
	check_sorted_unique(&syms);
	assert_string_equal(syms.build_id, "f0f1f2f3f4f5f6f7f8f9fafbfcfdfefff0f1f2f3");
	elf_syms__free(&syms);
}

static void test_free_accepts_null_and_zeroed(void **state)
{
	struct elf_syms zeroed = { 0 };

	elf_syms__free(NULL);
	elf_syms__free(&zeroed);
	elf_syms__free(&zeroed);
	assert_null(elf_syms__find(&zeroed, "cuLaunchKernel"));
	assert_null(elf_syms__find(NULL, "cuLaunchKernel"));
}

/* One test per library, named after both so the output tells them apart. */
#define lib_test(f, lib) { #f "/" #lib, f, NULL, NULL, &lib }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stub_has_driver_entry_points),
		cmocka_unit_test(test_nccl_profiling_alias_shares_offset),
		lib_test(test_offsets_match_program_headers, stub_lib),
		lib_test(test_offsets_match_program_headers, nccl_lib),
		lib_test(test_sorted_by_name, stub_lib),
		lib_test(test_sorted_by_name, nccl_lib),
		lib_test(test_build_id_matches_readelf, stub_lib),
		lib_test(test_build_id_matches_readelf, nccl_lib),
		cmocka_unit_test(test_versioned_duplicate_keeps_default),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_not_a_regular_file),
		cmocka_unit_test(test_text_file_is_not_elf),
		cmocka_unit_test(test_wrong_kind_of_elf),
		cmocka_unit_test(test_offset_translation_and_filters),
		cmocka_unit_test(test_free_accepts_null_and_zeroed),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
