// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Exported driver entry points for modules, libraries and kernel names, plus
 * the extras that give a function its simulated duration. Any image loads and
 * any name resolves: a function is made on first lookup and kept, so the same
 * name always gives the same handle, as with the real driver.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

struct specsim_func *sim_func_resolve(CUfunction f)
{
	if (!f)
		return NULL;
	if (f->magic == SIM_MAGIC_FUNC)
		return f;
	/* CUDA 12 lets a CUkernel stand in for a CUfunction */
	if (((struct specsim_kernel *)f)->magic == SIM_MAGIC_KERNEL)
		return &((struct specsim_kernel *)f)->func;
	return NULL;
}

static void func_init(struct specsim_func *fn, const char *name)
{
	fn->magic = SIM_MAGIC_FUNC;
	fn->name = strdup(name);
	fn->dur_ns = sim_dev.default_kernel_ns;
}

static CUresult module_new(CUmodule *out, const char *name)
{
	struct specsim_module *m;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->magic = SIM_MAGIC_MODULE;
	m->name = strdup(name);
	*out = m;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	CHECK_INIT();
	if (!fname)
		return CUDA_ERROR_INVALID_VALUE;
	return module_new(module, fname);
}

SIM_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	char name[32];

	CHECK_INIT();
	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, sizeof(name), "image@%p", image);
	return module_new(module, name);
}

SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
				       unsigned int numOptions, CUjit_option *options,
				       void **optionValues)
{
	char name[32];

	CHECK_INIT();
	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, sizeof(name), "image@%p", image);
	return module_new(module, name);
}

SIM_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	char name[32];

	CHECK_INIT();
	if (!fatCubin)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, sizeof(name), "fatbin@%p", fatCubin);
	return module_new(module, name);
}

SIM_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct specsim_func *fn;

	CHECK_INIT();
	if (!hmod || hmod->magic != SIM_MAGIC_MODULE)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!hfunc || !name)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&names_lock);
	for (fn = hmod->funcs; fn && strcmp(fn->name, name); fn = fn->next)
		;
	if (!fn && (fn = calloc(1, sizeof(*fn)))) {
		func_init(fn, name);
		fn->next = hmod->funcs;
		hmod->funcs = fn;
	}
	pthread_mutex_unlock(&names_lock);
	if (!fn)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*hfunc = fn;
	return CUDA_SUCCESS;
}

static CUresult library_new(CUlibrary *library, const char *name)
{
	struct specsim_library *lib;

	if (!library)
		return CUDA_ERROR_INVALID_VALUE;
	lib = calloc(1, sizeof(*lib));
	if (!lib)
		return CUDA_ERROR_OUT_OF_MEMORY;
	lib->magic = SIM_MAGIC_LIBRARY;
	lib->name = strdup(name);
	*library = lib;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
				      CUjit_option *jitOptions, void **jitOptionsValues,
				      unsigned int numJitOptions, CUlibraryOption *libraryOptions,
				      void **libraryOptionValues, unsigned int numLibraryOptions)
{
	char name[32];

	CHECK_INIT();
	if (!code)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, sizeof(name), "library@%p", code);
	return library_new(library, name);
}

SIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
					  CUjit_option *jitOptions, void **jitOptionsValues,
					  unsigned int numJitOptions,
					  CUlibraryOption *libraryOptions,
					  void **libraryOptionValues,
					  unsigned int numLibraryOptions)
{
	CHECK_INIT();
	if (!fileName)
		return CUDA_ERROR_INVALID_VALUE;
	return library_new(library, fileName);
}

SIM_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	struct specsim_kernel *k;

	CHECK_INIT();
	if (!library || library->magic != SIM_MAGIC_LIBRARY)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!pKernel || !name)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&names_lock);
	for (k = library->kernels; k && strcmp(k->func.name, name); k = k->next)
		;
	if (!k && (k = calloc(1, sizeof(*k)))) {
		k->magic = SIM_MAGIC_KERNEL;
		func_init(&k->func, name);
		k->next = library->kernels;
		library->kernels = k;
	}
	pthread_mutex_unlock(&names_lock);
	if (!k)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pKernel = k;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	CHECK_INIT();
	if (!kernel || kernel->magic != SIM_MAGIC_KERNEL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!pFunc)
		return CUDA_ERROR_INVALID_VALUE;
	*pFunc = &kernel->func;
	return CUDA_SUCCESS;
}

SIM_EXPORT int specsimSetFunctionDurationNs(CUfunction f, long long ns)
{
	struct specsim_func *fn = sim_func_resolve(f);

	if (!fn || ns < 0)
		return CUDA_ERROR_INVALID_VALUE;
	__atomic_store_n(&fn->dur_ns, ns, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

SIM_EXPORT int specsimSetFunctionHook(CUfunction f, specsim_run_fn run)
{
	struct specsim_func *fn = sim_func_resolve(f);

	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	fn->run = run;
	return CUDA_SUCCESS;
}
