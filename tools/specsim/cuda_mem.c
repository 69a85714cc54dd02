// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Exported driver entry points: copies, memsets, pinned host memory and device
 * memory. Host-blocking behaviour follows the driver's documented rules: an
 * "async" copy to pageable memory returns only when the copy is done, one from
 * pageable memory returns once the source is staged, a synchronous one from
 * pageable memory first waits for the stream, synchronous copies run on the
 * legacy stream, and freeing device or pinned memory waits for the device.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "sim.h"

#define PTR(d) ((void *)(uintptr_t)(d))
#define DPTR(p) ((CUdeviceptr)(uintptr_t)(p))

static bool capturing(struct specsim_stream *s)
{
	bool cap;

	pthread_mutex_lock(&sim_dev.lock);
	cap = s->cap != NULL;
	pthread_mutex_unlock(&sim_dev.lock);
	return cap;
}

/* Pageable memory moves at a lower rate; a staged H2D also has its own DMA latency. */
static long long host_copy_ns(const void *p, size_t bytes, bool staged)
{
	if (sim_host_kind(p, 0) != HOST_PAGEABLE)
		return sim_copy_ns(bytes, sim_dev.copy.pinned_gbps);
	if (!staged)
		return sim_copy_ns(bytes, sim_dev.copy.pageable_gbps);
	return sim_copy_ns(bytes, sim_dev.copy.pageable_gbps) - sim_dev.copy.latency_ns +
	       sim_dev.copy.staged_latency_ns;
}

static CUresult copy_submit(struct specsim_stream *s, void *dst, const void *src, size_t bytes,
			    long long dur_ns, bool stage, u64 *seq)
{
	struct sim_node node = {
		.kind = NODE_COPY,
		.dst = dst,
		.src = src,
		.bytes = bytes,
		.dur_ns = dur_ns,
	};
	CUresult err;

	if (stage) {
		/* pageable source: the driver copies it to a staging buffer first */
		void *staged = malloc(bytes ? bytes : 1);

		if (!staged)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(staged, src, bytes);
		node.src = staged;
		node.owns_src = true;
	}
	err = sim_stream_submit(s, &node, seq);
	if (err && stage)
		free((void *)node.src);
	return err;
}

static CUresult h2d(struct specsim_stream *s, CUdeviceptr dst, const void *src, size_t bytes,
		    bool async)
{
	bool pageable = sim_host_kind(src, bytes) == HOST_PAGEABLE;
	u64 seq = 0;
	CUresult err;

	if (!sim_dev_ok(dst, bytes) || (!src && bytes))
		return CUDA_ERROR_INVALID_VALUE;
	/* pageable: staged at once; only the synchronous copy syncs the stream first */
	if (pageable && !async && !capturing(s))
		sim_wait_stream(s);
	err = copy_submit(s, PTR(dst), src, bytes, host_copy_ns(src, bytes, pageable), pageable,
			  &seq);
	/* synchronous from pinned memory: returns when the copy is done */
	if (!err && !async && !pageable && seq)
		sim_wait_seq(s, seq);
	return err;
}

static CUresult d2h(struct specsim_stream *s, void *dst, CUdeviceptr src, size_t bytes,
		    bool async)
{
	bool pageable = sim_host_kind(dst, bytes) == HOST_PAGEABLE;
	u64 seq = 0;
	CUresult err;

	if (!sim_dev_ok(src, bytes) || (!dst && bytes))
		return CUDA_ERROR_INVALID_VALUE;
	err = copy_submit(s, dst, PTR(src), bytes, host_copy_ns(dst, bytes, false), false, &seq);
	if (!err && seq && (!async || pageable))
		sim_wait_seq(s, seq);
	return err;
}

CUresult sim_copy_d2d(struct specsim_stream *s, CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
	if (!sim_dev_ok(dst, bytes) || !sim_dev_ok(src, bytes))
		return CUDA_ERROR_INVALID_VALUE;
	return copy_submit(s, PTR(dst), PTR(src), bytes,
			   sim_copy_ns(bytes, sim_dev.copy.device_gbps), false, NULL);
}

/* Unified addressing: the pointers say the direction. */
static CUresult copy_any(struct specsim_stream *s, CUdeviceptr dst, CUdeviceptr src,
			 size_t bytes, bool async)
{
	bool dev_dst = sim_is_device(dst), dev_src = sim_is_device(src);
	u64 seq = 0;
	CUresult err;

	if (dev_dst && dev_src)
		return sim_copy_d2d(s, dst, src, bytes);
	if (dev_dst)
		return h2d(s, dst, PTR(src), bytes, async);
	if (dev_src)
		return d2h(s, PTR(dst), src, bytes, async);
	if ((!dst || !src) && bytes)
		return CUDA_ERROR_INVALID_VALUE;
	err = copy_submit(s, PTR(dst), PTR(src), bytes, host_copy_ns(PTR(dst), bytes, false), false,
			  &seq);
	if (!err && seq && (!async || sim_host_kind(PTR(dst), bytes) == HOST_PAGEABLE ||
			    sim_host_kind(PTR(src), bytes) == HOST_PAGEABLE))
		sim_wait_seq(s, seq);
	return err;
}

enum copy_kind { COPY_ANY, COPY_H2D, COPY_D2H, COPY_D2D };

static CUresult copy(CUstream hStream, bool async, enum copy_kind kind, CUdeviceptr dst,
		     CUdeviceptr src, size_t bytes)
{
	struct specsim_stream *s = sim_stream_for(hStream, async);

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	switch (kind) {
	case COPY_H2D:
		return h2d(s, dst, PTR(src), bytes, async);
	case COPY_D2H:
		return d2h(s, PTR(dst), src, bytes, async);
	case COPY_D2D:
		return sim_copy_d2d(s, dst, src, bytes);
	default:
		return copy_any(s, dst, src, bytes, async);
	}
}

SIM_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	CHECK_INIT();
	return copy(NULL, false, COPY_ANY, dst, src, ByteCount);
}

SIM_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
				  CUstream hStream)
{
	CHECK_INIT();
	return copy(hStream, true, COPY_ANY, dst, src, ByteCount);
}

SIM_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	CHECK_INIT();
	return copy(NULL, false, COPY_H2D, dstDevice, DPTR(srcHost), ByteCount);
}

SIM_EXPORT CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	CHECK_INIT();
	return copy(NULL, false, COPY_D2H, DPTR(dstHost), srcDevice, ByteCount);
}

SIM_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
				    size_t ByteCount)
{
	CHECK_INIT();
	return copy(NULL, false, COPY_D2D, dstDevice, srcDevice, ByteCount);
}

SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
					 size_t ByteCount, CUstream hStream)
{
	CHECK_INIT();
	return copy(hStream, true, COPY_H2D, dstDevice, DPTR(srcHost), ByteCount);
}

SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
					 CUstream hStream)
{
	CHECK_INIT();
	return copy(hStream, true, COPY_D2H, DPTR(dstHost), srcDevice, ByteCount);
}

SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
					 size_t ByteCount, CUstream hStream)
{
	CHECK_INIT();
	return copy(hStream, true, COPY_D2D, dstDevice, srcDevice, ByteCount);
}

/*
 * Memsets are async for the host unless they write pinned host memory. count
 * elements per row; rows > 1 makes it 2D, rows pitch bytes apart.
 */
CUresult sim_memset(CUstream hStream, bool async, CUdeviceptr dst, unsigned int value, int elem,
		    size_t count, size_t pitch, size_t rows)
{
	struct specsim_stream *s = sim_stream_for(hStream, async);
	size_t span = rows > 1 ? pitch * (rows - 1) + count * elem : count * elem;
	struct sim_node node = {
		.kind = NODE_MEMSET,
		.dst = PTR(dst),
		.value = value,
		.elem = elem,
		.bytes = count,	/* elements, not bytes */
		.pitch = pitch,
		.rows = rows,
		.dur_ns = sim_copy_ns(count * elem * (rows ? rows : 1), sim_dev.copy.device_gbps),
	};
	u64 seq = 0;
	CUresult err;

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!sim_dev_ok(dst, span) || (dst % elem) || (rows > 1 && pitch < count * elem))
		return CUDA_ERROR_INVALID_VALUE;
	err = sim_stream_submit(s, &node, &seq);
	if (!err && seq && !async && !sim_is_device(dst))
		sim_wait_seq(s, seq);
	return err;
}

SIM_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	CHECK_INIT();
	return sim_memset(NULL, false, dstDevice, uc, 1, N, 0, 1);
}

SIM_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	CHECK_INIT();
	return sim_memset(NULL, false, dstDevice, ui, 4, N, 0, 1);
}

SIM_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
				    CUstream hStream)
{
	CHECK_INIT();
	return sim_memset(hStream, true, dstDevice, uc, 1, N, 0, 1);
}

SIM_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
				     CUstream hStream)
{
	CHECK_INIT();
	return sim_memset(hStream, true, dstDevice, ui, 4, N, 0, 1);
}

/*
 * Shared anonymous, as the real driver maps pinned memory: /proc/PID/maps shows
 * it as "rw-s ... /dev/zero (deleted)", which tells it from malloc'd memory.
 */
static CUresult host_alloc(void **pp, size_t bytes)
{
	size_t len = (bytes + 4095) & ~(size_t)4095;
	void *p;
	CUresult err;

	if (!pp || !bytes)
		return CUDA_ERROR_INVALID_VALUE;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	err = sim_host_add(p, len, HOST_PINNED_ALLOC);
	if (err) {
		munmap(p, len);
		return err;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
	CHECK_INIT();
	return host_alloc(pp, bytesize);
}

SIM_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	CHECK_INIT();
	return host_alloc(pp, bytesize);
}

SIM_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags)
{
	CHECK_INIT();
	if (!p || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_host_add(p, bytesize, HOST_REGISTERED);
}

SIM_EXPORT CUresult cuMemHostUnregister(void *p)
{
	CHECK_INIT();
	return sim_host_remove(p, HOST_REGISTERED, NULL);
}

/* Freeing memory the device may use drains the device first; not while capturing. */
static CUresult drain_for_free(void)
{
	bool capture;

	pthread_mutex_lock(&sim_dev.lock);
	capture = sim_any_capture_locked(sim_current_ctx());
	pthread_mutex_unlock(&sim_dev.lock);
	if (capture)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	sim_wait_ctx(sim_current_ctx());
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemFreeHost(void *p)
{
	size_t len = 0;
	CUresult err;

	CHECK_INIT();
	err = drain_for_free();
	if (err)
		return err;
	err = sim_host_remove(p, HOST_PINNED_ALLOC, &len);
	if (!err)
		munmap(p, len);
	return err;
}

SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	CHECK_INIT();
	if (!dptr || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_dev_alloc(dptr, bytesize);
}

SIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	CUresult err;

	CHECK_INIT();
	if (!dptr)
		return CUDA_SUCCESS;
	err = drain_for_free();
	if (err)
		return err;
	err = sim_dev_forget(dptr);
	if (!err)
		free(PTR(dptr));
	return err;
}

/* Stream-ordered pools: memory is usable at once here, freed in stream order. */
SIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	CHECK_INIT();
	if (!sim_stream_resolve(hStream))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!dptr || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_dev_alloc(dptr, bytesize);
}

SIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	struct specsim_stream *s;
	struct sim_node node = { .kind = NODE_FREE, .arg = PTR(dptr) };

	CHECK_INIT();
	s = sim_stream_resolve(hStream);
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!sim_is_device(dptr))
		return CUDA_ERROR_INVALID_VALUE;
	/* a free node would run at every replay: captured frees are dropped */
	if (capturing(s))
		return CUDA_SUCCESS;
	return sim_stream_submit(s, &node, NULL);
}
