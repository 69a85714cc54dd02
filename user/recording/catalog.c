// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The probe catalogue (DESIGN.md "What is probed"), one row per base entry point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "catalog.h"

#define N SP_NO_ARG

/* Shorthands keep each row on one line. */
#define ENTRY(nm, cl, args)  { nm, SP_LIB_CUDA, cl, false, false, args, N, SP_DATA_NONE, N, NULL }
#define DONE(nm, cl, args)   { nm, SP_LIB_CUDA, cl, true, false, args, N, SP_DATA_NONE, N, NULL }
#define BLOCK(nm, cl, args)  { nm, SP_LIB_CUDA, cl, true, true, args, N, SP_DATA_NONE, N, NULL }
#define OUT(nm, cl, args, o, on) { nm, SP_LIB_CUDA, cl, true, false, args, N, SP_DATA_NONE, o, on }
#define NAMED(nm, args, d, o, on) { nm, SP_LIB_CUDA, SP_CLASS_NAMES, true, false, args, d, SP_DATA_STRING, o, on }
#define COLL(nm, args)       { nm, SP_LIB_NCCL, SP_CLASS_NCCL, true, false, args, N, SP_DATA_NONE, N, NULL }
#define NCCL_OUT(nm, args, o, on) { nm, SP_LIB_NCCL, SP_CLASS_NCCL, true, true, args, N, SP_DATA_NONE, o, on }

const struct catalog_entry catalog[] = {
	/* launch: entry only, a return probe would triple the cost of a launch */
	ENTRY("cuLaunchKernel", SP_CLASS_LAUNCH,
	      "func:h,gx:u,gy:u,gz:u,bx:u,by:u,bz:u,shmem:u,stream:h"),
	{ "cuLaunchKernelEx", SP_LIB_CUDA, SP_CLASS_LAUNCH, false, false,
	  "config:h,func:h", 0, SP_DATA_LAUNCH_CONFIG, N, NULL },
	ENTRY("cuLaunchCooperativeKernel", SP_CLASS_LAUNCH,
	      "func:h,gx:u,gy:u,gz:u,bx:u,by:u,bz:u,shmem:u,stream:h"),
	ENTRY("cuLaunchHostFunc", SP_CLASS_LAUNCH, "stream:h,fn:h,user_data:h"),

	/* graph */
	ENTRY("cuGraphLaunch", SP_CLASS_GRAPH, "exec:h,stream:h"),
	ENTRY("cuStreamBeginCapture", SP_CLASS_GRAPH, "stream:h,mode:u"),
	ENTRY("cuStreamBeginCaptureToGraph", SP_CLASS_GRAPH,
	      "stream:h,graph:h,deps:h,edge_data:h,num_deps:u,mode:u"),
	OUT("cuStreamEndCapture", SP_CLASS_GRAPH, "stream:h,graph_out:h", 1, "graph"),
	OUT("cuGraphInstantiate", SP_CLASS_GRAPH, "exec_out:h,graph:h", 0, "exec"),
	OUT("cuGraphInstantiateWithFlags", SP_CLASS_GRAPH, "exec_out:h,graph:h,flags:u", 0, "exec"),
	OUT("cuGraphInstantiateWithParams", SP_CLASS_GRAPH, "exec_out:h,graph:h,params:h", 0, "exec"),
	ENTRY("cuGraphExecDestroy", SP_CLASS_GRAPH, "exec:h"),
	DONE("cuGraphExecUpdate", SP_CLASS_GRAPH, "exec:h,graph:h,result_info:h"),
	/*
	 * Not probed: cuStreamIsCapturing and cuStreamGetCaptureInfo. PyTorch asks
	 * before every graph replay and allocation (a quarter of a decode loop's
	 * calls) and the answer is known from the capture's begin and end.
	 */

	/* blocking sync */
	BLOCK("cuCtxSynchronize", SP_CLASS_SYNC, ""),
	BLOCK("cuStreamSynchronize", SP_CLASS_SYNC, "stream:h"),
	BLOCK("cuEventSynchronize", SP_CLASS_SYNC, "event:h"),

	/* polling: the result says ready or not */
	DONE("cuStreamQuery", SP_CLASS_POLL, "stream:h"),
	DONE("cuEventQuery", SP_CLASS_POLL, "event:h"),

	/*
	 * copies: a pageable "async" copy blocks, so completion is wanted for any that
	 * may touch host memory; device-to-device ones are only work (entry only)
	 */
	BLOCK("cuMemcpy", SP_CLASS_COPY, "dst:h,src:h,bytes:z"),
	DONE("cuMemcpyAsync", SP_CLASS_COPY, "dst:h,src:h,bytes:z,stream:h"),
	BLOCK("cuMemcpyHtoD", SP_CLASS_COPY, "dst:h,src_host:h,bytes:z"),
	BLOCK("cuMemcpyDtoH", SP_CLASS_COPY, "dst_host:h,src:h,bytes:z"),
	BLOCK("cuMemcpyDtoD", SP_CLASS_COPY, "dst:h,src:h,bytes:z"),
	DONE("cuMemcpyHtoDAsync", SP_CLASS_COPY, "dst:h,src_host:h,bytes:z,stream:h"),
	DONE("cuMemcpyDtoHAsync", SP_CLASS_COPY, "dst_host:h,src:h,bytes:z,stream:h"),
	ENTRY("cuMemcpyDtoDAsync", SP_CLASS_COPY, "dst:h,src:h,bytes:z,stream:h"),
	BLOCK("cuMemcpyPeer", SP_CLASS_COPY, "dst:h,dst_ctx:h,src:h,src_ctx:h,bytes:z"),
	ENTRY("cuMemcpyPeerAsync", SP_CLASS_COPY, "dst:h,dst_ctx:h,src:h,src_ctx:h,bytes:z,stream:h"),
	BLOCK("cuMemcpy2D", SP_CLASS_COPY, "copy:h"),
	DONE("cuMemcpy2DAsync", SP_CLASS_COPY, "copy:h,stream:h"),
	BLOCK("cuMemcpy2DUnaligned", SP_CLASS_COPY, "copy:h"),
	BLOCK("cuMemcpy3D", SP_CLASS_COPY, "copy:h"),
	DONE("cuMemcpy3DAsync", SP_CLASS_COPY, "copy:h,stream:h"),
	BLOCK("cuMemcpy3DPeer", SP_CLASS_COPY, "copy:h"),
	ENTRY("cuMemcpy3DPeerAsync", SP_CLASS_COPY, "copy:h,stream:h"),
	BLOCK("cuMemcpyAtoH", SP_CLASS_COPY, "dst_host:h,src_array:h,src_offset:z,bytes:z"),
	BLOCK("cuMemcpyHtoA", SP_CLASS_COPY, "dst_array:h,dst_offset:z,src_host:h,bytes:z"),
	DONE("cuMemcpyAtoHAsync", SP_CLASS_COPY, "dst_host:h,src_array:h,src_offset:z,bytes:z,stream:h"),
	DONE("cuMemcpyHtoAAsync", SP_CLASS_COPY, "dst_array:h,dst_offset:z,src_host:h,bytes:z,stream:h"),
	BLOCK("cuMemcpyAtoA", SP_CLASS_COPY, "dst_array:h,dst_offset:z,src_array:h,src_offset:z,bytes:z"),
	BLOCK("cuMemcpyAtoD", SP_CLASS_COPY, "dst:h,src_array:h,src_offset:z,bytes:z"),
	BLOCK("cuMemcpyDtoA", SP_CLASS_COPY, "dst_array:h,dst_offset:z,src:h,bytes:z"),
	DONE("cuMemcpyBatchAsync", SP_CLASS_COPY, "dsts:h,srcs:h,sizes:h,count:z"),
	DONE("cuMemcpy3DBatchAsync", SP_CLASS_COPY, "num_ops:z,ops:h"),
	BLOCK("cuMemsetD8", SP_CLASS_COPY, "dst:h,value:u,count:z"),
	BLOCK("cuMemsetD16", SP_CLASS_COPY, "dst:h,value:u,count:z"),
	BLOCK("cuMemsetD32", SP_CLASS_COPY, "dst:h,value:u,count:z"),
	BLOCK("cuMemsetD2D8", SP_CLASS_COPY, "dst:h,pitch:z,value:u,width:z,height:z"),
	BLOCK("cuMemsetD2D16", SP_CLASS_COPY, "dst:h,pitch:z,value:u,width:z,height:z"),
	BLOCK("cuMemsetD2D32", SP_CLASS_COPY, "dst:h,pitch:z,value:u,width:z,height:z"),
	ENTRY("cuMemsetD8Async", SP_CLASS_COPY, "dst:h,value:u,count:z,stream:h"),
	ENTRY("cuMemsetD16Async", SP_CLASS_COPY, "dst:h,value:u,count:z,stream:h"),
	ENTRY("cuMemsetD32Async", SP_CLASS_COPY, "dst:h,value:u,count:z,stream:h"),
	ENTRY("cuMemsetD2D8Async", SP_CLASS_COPY, "dst:h,pitch:z,value:u,width:z,height:z,stream:h"),
	ENTRY("cuMemsetD2D16Async", SP_CLASS_COPY, "dst:h,pitch:z,value:u,width:z,height:z,stream:h"),
	ENTRY("cuMemsetD2D32Async", SP_CLASS_COPY, "dst:h,pitch:z,value:u,width:z,height:z,stream:h"),

	/* pinned memory: decides whether an "async" copy really is */
	OUT("cuMemHostAlloc", SP_CLASS_PINNED, "ptr_out:h,bytes:z,flags:u", 0, "ptr"),
	OUT("cuMemAllocHost", SP_CLASS_PINNED, "ptr_out:h,bytes:z", 0, "ptr"),
	DONE("cuMemHostRegister", SP_CLASS_PINNED, "ptr:h,bytes:z,flags:u"),
	ENTRY("cuMemHostUnregister", SP_CLASS_PINNED, "ptr:h"),
	ENTRY("cuMemFreeHost", SP_CLASS_PINNED, "ptr:h"),

	/* memory: alloc and free may synchronise implicitly */
	{ "cuMemAlloc", SP_LIB_CUDA, SP_CLASS_MEMORY, true, true, "dptr_out:h,bytes:z", N,
	  SP_DATA_NONE, 0, "dptr" },
	BLOCK("cuMemFree", SP_CLASS_MEMORY, "dptr:h"),
	OUT("cuMemAllocAsync", SP_CLASS_MEMORY, "dptr_out:h,bytes:z,stream:h", 0, "dptr"),
	OUT("cuMemAllocFromPoolAsync", SP_CLASS_MEMORY, "dptr_out:h,bytes:z,pool:h,stream:h", 0,
	    "dptr"),
	ENTRY("cuMemFreeAsync", SP_CLASS_MEMORY, "dptr:h,stream:h"),
	OUT("cuMemAllocManaged", SP_CLASS_MEMORY, "dptr_out:h,bytes:z,flags:u", 0, "dptr"),
	OUT("cuMemAllocPitch", SP_CLASS_MEMORY, "dptr_out:h,pitch_out:h,width:z,height:z", 0,
	    "dptr"),

	/* events: links between streams */
	ENTRY("cuEventRecord", SP_CLASS_EVENT, "event:h,stream:h"),
	ENTRY("cuEventRecordWithFlags", SP_CLASS_EVENT, "event:h,stream:h,flags:u"),
	ENTRY("cuStreamWaitEvent", SP_CLASS_EVENT, "stream:h,event:h,flags:u"),
	OUT("cuEventCreate", SP_CLASS_EVENT, "event_out:h,flags:u", 0, "event"),
	ENTRY("cuEventDestroy", SP_CLASS_EVENT, "event:h"),

	/* names: kernel name <-> handle */
	NAMED("cuModuleGetFunction", "func_out:h,module:h,name:h", 2, 0, "func"),
	NAMED("cuLibraryGetKernel", "kernel_out:h,library:h,name:h", 2, 0, "kernel"),
	OUT("cuKernelGetFunction", SP_CLASS_NAMES, "func_out:h,kernel:h", 0, "func"),
	NAMED("cuModuleLoad", "module_out:h,path:h", 1, 0, "module"),
	OUT("cuModuleLoadData", SP_CLASS_NAMES, "module_out:h,image:h", 0, "module"),
	OUT("cuModuleLoadDataEx", SP_CLASS_NAMES, "module_out:h,image:h,num_options:u", 0,
	    "module"),
	OUT("cuModuleLoadFatBinary", SP_CLASS_NAMES, "module_out:h,fatbin:h", 0, "module"),
	OUT("cuLibraryLoadData", SP_CLASS_NAMES, "library_out:h,code:h", 0, "library"),
	NAMED("cuLibraryLoadFromFile", "library_out:h,path:h", 1, 0, "library"),

	/* lifecycle */
	OUT("cuStreamCreate", SP_CLASS_LIFECYCLE, "stream_out:h,flags:u", 0, "stream"),
	OUT("cuStreamCreateWithPriority", SP_CLASS_LIFECYCLE, "stream_out:h,flags:u,priority:d",
	    0, "stream"),
	ENTRY("cuStreamDestroy", SP_CLASS_LIFECYCLE, "stream:h"),
	ENTRY("cuCtxSetCurrent", SP_CLASS_LIFECYCLE, "ctx:h"),
	ENTRY("cuCtxPushCurrent", SP_CLASS_LIFECYCLE, "ctx:h"),
	OUT("cuDevicePrimaryCtxRetain", SP_CLASS_LIFECYCLE, "ctx_out:h,device:d", 0, "ctx"),

	/* where driver pointers come from (cudart and NCCL resolve through it) */
	{ "cuGetProcAddress", SP_LIB_CUDA, SP_CLASS_DRIVER, true, false,
	  "symbol:h,pfn_out:h,cuda_version:d,flags:u", 0, SP_DATA_STRING, 1, "pfn" },

	/*
	 * NCCL: collectives return at once unless a peer is missing: their return
	 * shows a rank stuck in one. The stream is the 7th argument or later.
	 */
	COLL("ncclAllReduce", "send:h,recv:h,count:z,datatype:d,op:d,comm:h,stream:h"),
	COLL("ncclAllGather", "send:h,recv:h,count:z,datatype:d,comm:h,stream:h"),
	COLL("ncclReduceScatter", "send:h,recv:h,count:z,datatype:d,op:d,comm:h,stream:h"),
	COLL("ncclBroadcast", "send:h,recv:h,count:z,datatype:d,root:d,comm:h,stream:h"),
	COLL("ncclReduce", "send:h,recv:h,count:z,datatype:d,op:d,root:d,comm:h,stream:h"),
	COLL("ncclAlltoAll", "send:h,recv:h,count:z,datatype:d,comm:h,stream:h"),
	COLL("ncclGather", "send:h,recv:h,count:z,datatype:d,root:d,comm:h,stream:h"),
	COLL("ncclScatter", "send:h,recv:h,count:z,datatype:d,root:d,comm:h,stream:h"),
	COLL("ncclSend", "send:h,count:z,datatype:d,peer:d,comm:h,stream:h"),
	COLL("ncclRecv", "recv:h,count:z,datatype:d,peer:d,comm:h,stream:h"),
	COLL("ncclGroupStart", ""),
	COLL("ncclGroupEnd", ""),
	/* the 128-byte ncclUniqueId goes by value on the stack: rank is in rdx */
	NCCL_OUT("ncclCommInitRank", "comm_out:h,nranks:d,rank:d", 0, "comm"),
	NCCL_OUT("ncclCommInitRankConfig", "comm_out:h,nranks:d,rank:d,config:h", 0, "comm"),
	NCCL_OUT("ncclCommInitRankScalable",
		 "comm_out:h,nranks:d,rank:d,num_ids:d,ids:h,config:h", 0, "comm"),
	NCCL_OUT("ncclCommInitAll", "comms_out:h,ndev:d,devlist:h", 0, "comm"),
	NCCL_OUT("ncclCommSplit", "comm:h,color:d,key:d,new_comm_out:h,config:h", 3, "comm"),
	NCCL_OUT("ncclCommDestroy", "comm:h", N, NULL),
	NCCL_OUT("ncclCommAbort", "comm:h", N, NULL),
	NCCL_OUT("ncclCommFinalize", "comm:h", N, NULL),
};

const int catalog_len = sizeof(catalog) / sizeof(catalog[0]);

static const char *const class_names[SP_CLASS_NR] = {
	[SP_CLASS_LAUNCH] = "launch",	  [SP_CLASS_GRAPH] = "graph",
	[SP_CLASS_SYNC] = "sync",	  [SP_CLASS_POLL] = "poll",
	[SP_CLASS_COPY] = "copy",	  [SP_CLASS_PINNED] = "pinned",
	[SP_CLASS_MEMORY] = "memory",	  [SP_CLASS_EVENT] = "event",
	[SP_CLASS_NAMES] = "names",	  [SP_CLASS_LIFECYCLE] = "lifecycle",
	[SP_CLASS_NCCL] = "nccl",	  [SP_CLASS_DRIVER] = "driver",
};

const char *catalog__class_name(enum sp_class cls)
{
	return cls < SP_CLASS_NR ? class_names[cls] : "?";
}

const struct catalog_entry *catalog__find(const char *base)
{
	for (int i = 0; i < catalog_len; i++)
		if (strcmp(catalog[i].name, base) == 0)
			return &catalog[i];
	return NULL;
}

/* Strip one trailing variant tag: _v2.._v9, _ptsz, _ptds. */
static bool strip_variant(char *name)
{
	size_t len = strlen(name);

	if (len > 5 && (strcmp(name + len - 5, "_ptsz") == 0 || strcmp(name + len - 5, "_ptds") == 0)) {
		name[len - 5] = '\0';
		return true;
	}
	if (len > 3 && name[len - 3] == '_' && name[len - 2] == 'v' && name[len - 1] >= '2' &&
	    name[len - 1] <= '9') {
		name[len - 3] = '\0';
		return true;
	}
	return false;
}

const struct catalog_entry *catalog__match(const char *symbol, enum sp_lib lib)
{
	const struct catalog_entry *e;
	char base[128];

	/* pncclX is NCCL's profiling alias of ncclX */
	if (strncmp(symbol, "pnccl", 5) == 0)
		symbol++;
	if (snprintf(base, sizeof(base), "%s", symbol) >= (int)sizeof(base))
		return NULL;
	do {
		e = catalog__find(base);
		if (e)
			return e->lib == lib ? e : NULL;
	} while (strip_variant(base));
	return NULL;
}

int catalog__nargs(const struct catalog_entry *e)
{
	int n = 0;

	if (!e->args[0])
		return 0;
	for (const char *p = e->args; *p; p++)
		n += *p == ',';
	return n + 1 > SP_MAX_ARGS ? SP_MAX_ARGS : n + 1;
}

bool catalog__arg(const struct catalog_entry *e, int i, char *name, size_t name_sz, char *fmt)
{
	const char *p = e->args, *end, *colon;

	for (int k = 0; k < i && p; k++) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	if (!p || !*p || *p == '-')
		return false;
	end = strchr(p, ',');
	if (!end)
		end = p + strlen(p);
	colon = memchr(p, ':', end - p);
	if (!colon || (size_t)(colon - p) >= name_sz)
		return false;
	memcpy(name, p, colon - p);
	name[colon - p] = '\0';
	*fmt = colon[1];
	return true;
}

int catalog__arg_index(const struct catalog_entry *e, const char *const *names)
{
	int nargs = catalog__nargs(e);
	char name[32], fmt;

	for (const char *const *want = names; *want; want++)
		for (int i = 0; i < nargs; i++)
			if (catalog__arg(e, i, name, sizeof(name), &fmt) && !strcmp(name, *want))
				return i;
	return SP_NO_ARG;
}

bool catalog__stack_default(const struct catalog_entry *e)
{
	if (e->wake || e->cls == SP_CLASS_POLL)
		return true;
	/* an "async" copy to or from pageable memory blocks: those have a completion */
	return e->cls == SP_CLASS_COPY && e->completion;
}

/*
 * Where a call's stack is taken now and then under the default stacks: a
 * graph's launches once a second each (which code launches it tells an
 * extend from a draft step), and some first kernels of a burst (which code
 * runs a forward tells whose it is).
 */
enum sp_stack_pick catalog__stack_pick(const struct catalog_entry *e)
{
	if (e->cls == SP_CLASS_GRAPH && !strcmp(e->name, "cuGraphLaunch"))
		return SP_PICK_BY_HANDLE;
	if (e->cls == SP_CLASS_LAUNCH && strcmp(e->name, "cuLaunchHostFunc"))
		return SP_PICK_BURST_LEAD;
	return SP_PICK_NONE;
}

/* Arguments 1..7 all 32-bit: a launch's grid, block and shared memory, packed in the ring. */
static bool launch_dims(const struct catalog_entry *e)
{
	char name[32], fmt;

	for (int i = 1; i <= 7; i++)
		if (!catalog__arg(e, i, name, sizeof(name), &fmt) || fmt != 'u')
			return false;
	return true;
}

void catalog__spec(const struct catalog_entry *e, struct sp_probe_spec *spec)
{
	int nargs = catalog__nargs(e);

	memset(spec, 0, sizeof(*spec));
	if (e->completion)
		spec->flags |= SP_SPEC_COMPLETION;
	/* NCCL calls launch through libcuda; entry-only driver calls call nothing probed */
	if (e->completion || e->lib == SP_LIB_NCCL)
		spec->flags |= SP_SPEC_ENCLOSES;
	spec->nr_args = nargs;
	if (nargs == SP_MAX_ARGS && launch_dims(e))
		spec->flags |= SP_SPEC_DIMS;
	spec->stack_args = nargs > SP_REG_ARGS ? nargs - SP_REG_ARGS : 0;
	spec->data_arg = e->data_arg;
	spec->out_arg = e->out_arg;
	/* cuMemFreeHost, cuMemHostUnregister */
	if (e->cls == SP_CLASS_PINNED && !e->completion)
		spec->flags |= SP_SPEC_UNPINS;
	/* an async copy of host memory: only work when that memory is pinned */
	spec->host_arg = SP_NO_ARG;
	if (e->cls == SP_CLASS_COPY && e->completion && !e->wake)
		spec->host_arg = catalog__arg_index(e, (const char *const[]){ "dst_host", "src_host",
									       NULL });
	/* cuMemHostAlloc, cuMemAllocHost: host_arg names the bytes */
	if (e->cls == SP_CLASS_PINNED && e->out_arg != SP_NO_ARG) {
		spec->flags |= SP_SPEC_PINS;
		spec->host_arg = catalog__arg_index(e, (const char *const[]){ "bytes", NULL });
	}
	switch (e->data_kind) {
	case SP_DATA_LAUNCH_CONFIG:
		spec->data_len = SP_DATA_SMALL;
		break;
	case SP_DATA_STRING:
		spec->data_len = SP_DATA_LARGE;
		spec->flags |= SP_SPEC_DATA_STR;
		break;
	default:
		spec->data_arg = SP_NO_ARG;
		break;
	}
}
