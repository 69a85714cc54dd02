// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The less common catalogued entry points that need no 2D/3D or array
 * descriptors: peer copies (one simulated device, so device to device), 16-bit
 * and 2D memsets, and pool, managed and pitched allocations.
 */
#include "sim.h"

static bool ctx_ok(CUcontext ctx)
{
	return !ctx || ctx->magic == SIM_MAGIC_CTX;
}

/* Asynchronous for the host, in order with the legacy stream, like cuMemcpyPeer. */
static CUresult copy_peer(CUstream hStream, bool async, CUdeviceptr dst, CUcontext dst_ctx,
			  CUdeviceptr src, CUcontext src_ctx, size_t bytes)
{
	struct specsim_stream *s = sim_stream_for(hStream, async);

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!ctx_ok(dst_ctx) || !ctx_ok(src_ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	return sim_copy_d2d(s, dst, src, bytes);
}

SIM_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
				 CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount)
{
	CHECK_INIT();
	return copy_peer(NULL, false, dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

SIM_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
				      CUdeviceptr srcDevice, CUcontext srcContext,
				      size_t ByteCount, CUstream hStream)
{
	CHECK_INIT();
	return copy_peer(hStream, true, dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

SIM_EXPORT CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
	CHECK_INIT();
	return sim_memset(NULL, false, dstDevice, us, 2, N, 0, 1);
}

SIM_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
				     CUstream hStream)
{
	CHECK_INIT();
	return sim_memset(hStream, true, dstDevice, us, 2, N, 0, 1);
}

static CUresult memset_2d(CUstream hStream, bool async, CUdeviceptr dst, size_t pitch,
			  unsigned int value, int elem, size_t width, size_t height)
{
	/* no rows or columns: nothing is queued, but the handle is still checked */
	if (!height || !width)
		return sim_stream_for(hStream, async) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
	return sim_memset(hStream, async, dst, value, elem, width, pitch, height);
}

SIM_EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
				    size_t Width, size_t Height)
{
	CHECK_INIT();
	return memset_2d(NULL, false, dstDevice, dstPitch, uc, 1, Width, Height);
}

SIM_EXPORT CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
				     size_t Width, size_t Height)
{
	CHECK_INIT();
	return memset_2d(NULL, false, dstDevice, dstPitch, us, 2, Width, Height);
}

SIM_EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
				     size_t Width, size_t Height)
{
	CHECK_INIT();
	return memset_2d(NULL, false, dstDevice, dstPitch, ui, 4, Width, Height);
}

SIM_EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
				      size_t Width, size_t Height, CUstream hStream)
{
	CHECK_INIT();
	return memset_2d(hStream, true, dstDevice, dstPitch, uc, 1, Width, Height);
}

SIM_EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch,
				       unsigned short us, size_t Width, size_t Height,
				       CUstream hStream)
{
	CHECK_INIT();
	return memset_2d(hStream, true, dstDevice, dstPitch, us, 2, Width, Height);
}

SIM_EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
				       size_t Width, size_t Height, CUstream hStream)
{
	CHECK_INIT();
	return memset_2d(hStream, true, dstDevice, dstPitch, ui, 4, Width, Height);
}

/* Pools are not modelled: memory comes from the one device heap. */
SIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
					    CUmemoryPool pool, CUstream hStream)
{
	CHECK_INIT();
	if (!sim_stream_resolve(hStream))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!dptr || !bytesize || !pool)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_dev_alloc(dptr, bytesize);
}

/* Simulated device memory is host memory already, so managed memory is too. */
SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	CHECK_INIT();
	if (!dptr || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	return sim_dev_alloc(dptr, bytesize);
}

SIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
				       size_t Height, unsigned int ElementSizeBytes)
{
	size_t pitch;

	CHECK_INIT();
	if (!dptr || !pPitch || !WidthInBytes || !Height ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	/* rows aligned like the driver's texture pitch */
	pitch = (WidthInBytes + 511) & ~(size_t)511;
	*pPitch = pitch;
	return sim_dev_alloc(dptr, pitch * Height);
}
