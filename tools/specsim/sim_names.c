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

/*
 * A module or a library, size bytes with the sim_image first. An image in
 * memory is named by what it is and where; a file (what == NULL) by its name.
 */
static void *image_new(size_t size, uint32_t magic, const char *what, const void *image)
{
	struct sim_image *img = calloc(1, size);

	if (!img)
		return NULL;
	img->magic = magic;
	if (!what)
		img->name = strdup(image);
	else if (asprintf(&img->name, "%s@%p", what, image) < 0)
		img->name = NULL;
	return img;
}

static CUresult module_new(CUmodule *out, const char *what, const void *image)
{
	CUmodule m;

	if (!out || !image)
		return CUDA_ERROR_INVALID_VALUE;
	m = image_new(sizeof(*m), SIM_MAGIC_MODULE, what, image);
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = m;
	return CUDA_SUCCESS;
}

static CUresult library_new(CUlibrary *out, const char *what, const void *image)
{
	CUlibrary lib;

	if (!out || !image)
		return CUDA_ERROR_INVALID_VALUE;
	lib = image_new(sizeof(*lib), SIM_MAGIC_LIBRARY, what, image);
	if (!lib)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = lib;
	return CUDA_SUCCESS;
}

/* Made on first lookup and kept: the same name always gives the same kernel. */
static CUresult image_kernel(struct sim_image *img, const char *name, struct specsim_kernel **out)
{
	struct specsim_kernel *k;

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&names_lock);
	for (k = img->kernels; k && strcmp(k->func.name, name); k = k->next)
		;
	if (!k && (k = calloc(1, sizeof(*k)))) {
		k->magic = SIM_MAGIC_KERNEL;
		k->func.magic = SIM_MAGIC_FUNC;
		k->func.name = strdup(name);
		k->func.dur_ns = sim_dev.default_kernel_ns;
		k->next = img->kernels;
		img->kernels = k;
	}
	pthread_mutex_unlock(&names_lock);
	if (!k)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = k;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	CHECK_INIT();
	return module_new(module, NULL, fname);
}

SIM_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	CHECK_INIT();
	return module_new(module, "image", image);
}

SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
				       unsigned int numOptions, CUjit_option *options,
				       void **optionValues)
{
	CHECK_INIT();
	return module_new(module, "image", image);
}

SIM_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	CHECK_INIT();
	return module_new(module, "fatbin", fatCubin);
}

SIM_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct specsim_kernel *k;
	CUresult err;

	CHECK_INIT();
	if (!hmod || hmod->img.magic != SIM_MAGIC_MODULE)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!hfunc)
		return CUDA_ERROR_INVALID_VALUE;
	err = image_kernel(&hmod->img, name, &k);
	if (!err)
		*hfunc = &k->func;
	return err;
}

SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
				      CUjit_option *jitOptions, void **jitOptionsValues,
				      unsigned int numJitOptions, CUlibraryOption *libraryOptions,
				      void **libraryOptionValues, unsigned int numLibraryOptions)
{
	CHECK_INIT();
	return library_new(library, "library", code);
}

SIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
					  CUjit_option *jitOptions, void **jitOptionsValues,
					  unsigned int numJitOptions,
					  CUlibraryOption *libraryOptions,
					  void **libraryOptionValues,
					  unsigned int numLibraryOptions)
{
	CHECK_INIT();
	return library_new(library, NULL, fileName);
}

SIM_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	CHECK_INIT();
	if (!library || library->img.magic != SIM_MAGIC_LIBRARY)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!pKernel)
		return CUDA_ERROR_INVALID_VALUE;
	return image_kernel(&library->img, name, pKernel);
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
