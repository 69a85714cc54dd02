#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A stand-in for spec_compile.py with no GPU: the same rounds protocol and truth files.

  fake_decoder.py --dir DIR --variants clean,clean,... --lib LIBCUDA [--cycles N]

One cycle calls the library as the compiled decoder's cycle does on the H200 (k graph
launches and a verify launch, eager launches, D2H copies and stream syncs in accept),
then does a fixed amount of host work that stands for the GPU time. tokens/s is then
cycles over time, as spec_compile.py reports it, so tools/bench/gpu_ab.sh can be run
end to end against the look-alike libcuda (tests/lookalike).
"""
import argparse
import ctypes
import json
import os
import sys
import time


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.005)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--variants", default="clean")
    ap.add_argument("--lib", required=True, help="libcuda.so.1 to call")
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--launches", type=int, default=60, help="eager launches per cycle")
    ap.add_argument("--work", type=int, default=20000, help="host loop steps per cycle")
    args, _ = ap.parse_known_args()
    cuda = ctypes.CDLL(args.lib)
    launch, graph = cuda.cuLaunchKernel, cuda.cuGraphLaunch
    d2h, sync = cuda.cuMemcpyDtoHAsync_v2, cuda.cuStreamSynchronize
    one = ctypes.c_uint(1)
    stream = ctypes.c_void_p(1)
    buf = ctypes.create_string_buffer(64)

    def cycle():
        for _ in range(args.k + 1):
            graph(ctypes.c_void_p(0x1000), stream)
        for _ in range(args.launches):
            launch(ctypes.c_void_p(0x2000), one, one, one, one, one, one, one, stream, None, None)
        for _ in range(2):
            d2h(buf, ctypes.c_void_p(0x3000), ctypes.c_size_t(8), stream)
            sync(stream)
        sync(stream)
        acc = 0
        for i in range(args.work):
            acc += i
        return acc

    for _ in range(args.warmup):
        cycle()
    os.makedirs(args.dir, exist_ok=True)
    for i, v in enumerate(args.variants.split(",")):
        open(os.path.join(args.dir, f"ready-{i}"), "w").close()
        wait_for(os.path.join(args.dir, f"go-{i}"))
        t0 = time.monotonic_ns()
        ends = []
        for _ in range(args.cycles):
            cycle()
            ends.append(time.monotonic_ns())
        t1 = time.monotonic_ns()
        tokens = args.cycles * (args.k + 1)
        truth = {"plant": v, "index": i, "cycles": args.cycles, "tokens": tokens,
                 "pid": os.getpid(), "loop_start_ns": t0, "loop_end_ns": t1,
                 "tokens_per_s": tokens / ((t1 - t0) / 1e9),
                 "cycle_ns": [b - a for a, b in zip([t0] + ends, ends)]}
        with open(os.path.join(args.dir, f"truth-{i}.json"), "w") as f:
            json.dump(truth, f)
        open(os.path.join(args.dir, f"done-{i}"), "w").close()
        print(json.dumps(truth), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
