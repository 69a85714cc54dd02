#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""PyTorch doing each operation of GPU-FACTS.md's table a known number of times.

Segments are separated by three cuStreamQuery calls (stream.query()), which
nothing else in these segments makes, so a checker can split the trace.
  ops.py READY_FILE GO_FILE PLAN_FILE
Warms every operation up first (lazy loads happen before the tracer attaches),
writes READY_FILE, waits for GO_FILE, runs the plan, writes PLAN_FILE (JSON).
"""
import ctypes
import json
import os
import sys
import time

import torch
import torch.distributed as dist

COUNTS = {"eager": 1009, "matmul": 503, "synchronize": 211, "item": 307, "nonzero": 101,
          "graph_replay": 401, "capture": 1, "all_reduce": 151, "get_proc_address": 1}
CAPTURED_KERNELS = 5


def marker(stream):
    for _ in range(3):
        stream.query()


def main():
    ready, go, plan_path = sys.argv[1:4]
    dev = torch.device("cuda:0")
    x = torch.ones(1 << 16, device=dev)
    a = torch.randn(256, 256, device=dev)
    b = torch.randn(256, 256, device=dev)
    mask = torch.zeros(1024, device=dev)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    static_x = torch.ones(1 << 16, device=dev)

    def capture_body():
        for _ in range(CAPTURED_KERNELS):
            static_x.add_(1)

    def run_all(counts):
        s = torch.cuda.current_stream()
        marker(s)
        for _ in range(counts["eager"]):
            x.add_(1)
        marker(s)
        for _ in range(counts["matmul"]):
            torch.mm(a, b)
        marker(s)
        for _ in range(counts["synchronize"]):
            torch.cuda.synchronize()
        marker(s)
        for _ in range(counts["item"]):
            x[0].item()
        marker(s)
        for _ in range(counts["nonzero"]):
            mask.nonzero()
        marker(s)
        for _ in range(counts["graph_replay"]):
            graph.replay()
        marker(s)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            g2 = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g2, stream=side):
                capture_body()
        marker(s)
        for _ in range(counts["all_reduce"]):
            dist.all_reduce(x)
        marker(s)
        torch.cuda.synchronize()

    # warm-up: every path once, and the graph replayed later
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        capture_body()
    run_all({k: 1 for k in COUNTS})
    torch.cuda.synchronize()
    libcuda = ctypes.CDLL("libcuda.so.1")
    with open(ready, "w") as f:
        f.write(str(os.getpid()))
    while not os.path.exists(go):
        time.sleep(0.01)
    run_all(COUNTS)
    # pointers the driver hands out, for the names the tracer attached to
    names = [n for n in open(go).read().split() if n.startswith("cu")]
    pfn = ctypes.c_void_p()
    status = ctypes.c_int()
    got = {}
    for name in names:
        rc = libcuda.cuGetProcAddress_v2(name.encode(), ctypes.byref(pfn), 13000,
                                         ctypes.c_uint64(0), ctypes.byref(status))
        got[name] = {"rc": rc, "pfn": pfn.value}
    torch.cuda.synchronize()
    with open(plan_path, "w") as f:
        json.dump({"counts": COUNTS, "captured_kernels": CAPTURED_KERNELS,
                   "proc_address": got}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
