// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Which libcupti the agent uses: the target's own, so it matches the CUDA the
 * target runs. Order: SPECPROBE_CUPTI alone when set; one already loaded; one
 * beside the CUDA libraries the process maps (PyTorch's
 * site-packages/nvidia/<package>/lib included); the dynamic loader's search;
 * the CUDA toolkit's.
 */
#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cuptiload.h"

#define MAX_DIRS 16

/* Newest first: a folder holding several takes the newest it has. */
static const char *const sonames[] = {
	"libcupti.so.13", "libcupti.so.12", "libcupti.so.11", "libcupti.so",
};
#define NR_SONAMES (sizeof(sonames) / sizeof(sonames[0]))

static const char *const toolkit_dirs[] = {
	"/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64",
};

static int open_path(const char *path, struct cupti_api *api, char *out, size_t out_sz)
{
	api->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!api->handle)
		return -1;
	snprintf(out, out_sz, "%s", path);
	return 0;
}

/* The file a handle came from, through one of its symbols. */
static void name_loaded(void *handle, const char *fallback, char *out, size_t out_sz)
{
	void *sym = dlsym(handle, "cuptiGetVersion");
	Dl_info info;

	if (sym && dladdr(sym, &info) && info.dli_fname)
		snprintf(out, out_sz, "%s", info.dli_fname);
	else
		snprintf(out, out_sz, "%s", fallback);
}

static int find_loaded(struct cupti_api *api, char *out, size_t out_sz)
{
	for (size_t i = 0; i < NR_SONAMES; i++) {
		api->handle = dlopen(sonames[i], RTLD_NOW | RTLD_NOLOAD);
		if (api->handle) {
			name_loaded(api->handle, sonames[i], out, out_sz);
			return 0;
		}
	}
	return -1;
}

/* A libcupti.so* in dir: the known names first, then any. */
static int try_dir(const char *dir, struct cupti_api *api, char *out, size_t out_sz)
{
	char path[PATH_MAX];
	struct dirent *e;
	int ret = -1;
	DIR *d;

	for (size_t i = 0; i < NR_SONAMES; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, sonames[i]);
		if (!access(path, R_OK) && !open_path(path, api, out, out_sz))
			return 0;
	}
	d = opendir(dir);
	if (!d)
		return -1;
	while (ret && (e = readdir(d)))
		if (!strncmp(e->d_name, "libcupti.so", 11)) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			ret = open_path(path, api, out, out_sz);
		}
	closedir(d);
	return ret;
}

/* PyTorch's wheels: .../nvidia/<package>/lib; CUPTI is in a sibling package. */
static int try_nvidia_siblings(const char *dir, struct cupti_api *api, char *out, size_t out_sz)
{
	static const char *const first[] = { "cuda_cupti", "cu13" };
	char nvidia[PATH_MAX], lib[PATH_MAX];
	size_t len = strlen(dir);
	struct dirent *e;
	char *slash;
	int ret = -1;
	DIR *d;

	if (len < 4 || strcmp(dir + len - 4, "/lib") || len - 4 >= sizeof(nvidia))
		return -1;
	memcpy(nvidia, dir, len - 4);
	nvidia[len - 4] = '\0';
	slash = strrchr(nvidia, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if (!(slash = strrchr(nvidia, '/')) || strcmp(slash, "/nvidia"))
		return -1;
	for (size_t i = 0; i < sizeof(first) / sizeof(first[0]); i++) {
		if (snprintf(lib, sizeof(lib), "%s/%s/lib", nvidia, first[i]) < (int)sizeof(lib) &&
		    !try_dir(lib, api, out, out_sz))
			return 0;
	}
	d = opendir(nvidia);
	if (!d)
		return -1;
	while (ret && (e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    snprintf(lib, sizeof(lib), "%s/%s/lib", nvidia, e->d_name) < (int)sizeof(lib))
			ret = try_dir(lib, api, out, out_sz);
	closedir(d);
	return ret;
}

static bool cuda_library(const char *base)
{
	return !strncmp(base, "libcuda.so", 10) || !strncmp(base, "libcudart.so", 12) ||
	       !strncmp(base, "libnccl.so", 10);
}

/* Folders of the CUDA libraries the process maps, each once. */
static int mapped_cuda_dirs(char dirs[][PATH_MAX], int max)
{
	char line[PATH_MAX + 128];
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/'), *base;
		bool seen = false;

		line[strcspn(line, "\n")] = '\0';
		if (!path || !(base = strrchr(path, '/')) || !cuda_library(base + 1))
			continue;
		*base = '\0';
		for (int i = 0; i < n && !seen; i++)
			seen = !strcmp(dirs[i], path);
		if (!seen)
			snprintf(dirs[n++], PATH_MAX, "%s", path);
	}
	fclose(f);
	return n;
}

static int find_beside_cuda(struct cupti_api *api, char *out, size_t out_sz)
{
	char (*dirs)[PATH_MAX] = calloc(MAX_DIRS, PATH_MAX);
	int n = dirs ? mapped_cuda_dirs(dirs, MAX_DIRS) : 0, ret = -1;

	for (int i = 0; ret && i < n; i++)
		ret = try_dir(dirs[i], api, out, out_sz);
	for (int i = 0; ret && i < n; i++)
		ret = try_nvidia_siblings(dirs[i], api, out, out_sz);
	free(dirs);
	return ret;
}

static int find_searched(struct cupti_api *api, char *out, size_t out_sz)
{
	for (size_t i = 0; i < NR_SONAMES; i++) {
		api->handle = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
		if (api->handle) {
			name_loaded(api->handle, sonames[i], out, out_sz);
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof(toolkit_dirs) / sizeof(toolkit_dirs[0]); i++)
		if (!try_dir(toolkit_dirs[i], api, out, out_sz))
			return 0;
	return -1;
}

int cupti__load(const char *explicit, struct cupti_api *api, char *path, size_t path_sz)
{
	memset(api, 0, sizeof(*api));
	if (explicit && explicit[0]) {
		/* named: that one or none, never another behind the user's back */
		if (!open_path(explicit, api, path, path_sz))
			return 0;
		snprintf(path, path_sz, "%s", dlerror());
		return -ENOENT;
	}
	if (!find_loaded(api, path, path_sz) || !find_beside_cuda(api, path, path_sz) ||
	    !find_searched(api, path, path_sz))
		return 0;
	snprintf(path, path_sz, "none loaded, beside CUDA's libraries, searched or in "
		 "/usr/local/cuda");
	return -ENOENT;
}

#define BIND(field, name)                                                 \
	do {                                                              \
		*(void **)&api->field = dlsym(api->handle, name);         \
		if (!api->field) {                                        \
			snprintf(missing, missing_sz, "%s", name);        \
			return -ENOENT;                                   \
		}                                                         \
	} while (0)

int cupti__bind(struct cupti_api *api, char *missing, size_t missing_sz)
{
	BIND(get_version, "cuptiGetVersion");
	BIND(subscribe, "cuptiSubscribe");
	BIND(unsubscribe, "cuptiUnsubscribe");
	BIND(enable, "cuptiActivityEnable");
	BIND(disable, "cuptiActivityDisable");
	BIND(register_callbacks, "cuptiActivityRegisterCallbacks");
	BIND(register_timestamp, "cuptiActivityRegisterTimestampCallback");
	BIND(next_record, "cuptiActivityGetNextRecord");
	BIND(dropped, "cuptiActivityGetNumDroppedRecords");
	BIND(flush_all, "cuptiActivityFlushAll");
	BIND(result_string, "cuptiGetResultString");
	return 0;
}
