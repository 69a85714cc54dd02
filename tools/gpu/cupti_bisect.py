#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Which of the activity agent's CUPTI steps breaks a process whose CUDA graphs came first.

  cupti_bisect.py --lib cupti_bisect.so --graphs trees|plain --when after|before|racing
                  --kinds G,K,C,S,O [--steps alone,ts,reverse] [--cupti PATH]

One run, one process: CUDA graphs are made (plain: torch.cuda.CUDAGraph over a small
MLP; trees: the same MLP under torch.compile(mode="reduce-overhead"), cudagraph trees),
then a thread of its own (as the agent's thread) takes the steps cupti_bisect.c does:
load the process's libcupti, the subscribe check (alone), the timestamp callback (ts),
the buffer callbacks, then enables the kinds (G graph trace, K concurrent kernel,
C memcpy, S memset, O overhead; reverse: last first). --when before takes the steps
before the graphs are made (as --gpu -- CMD does); after, with the main thread waiting;
racing, while the main thread replays. Then the graphs are replayed, along with eager
work, and one JSON line says what CUPTI handed over. A crash is the exit status.
"""
import argparse
import ctypes
import json
import sys
import threading
import time

KINDS = {"G": 51, "K": 10, "C": 1, "S": 2, "O": 17}
STEPS = {"alone": 1, "ts": 2, "reverse": 4}


def build(torch, graphs):
    """A step function whose calls replay CUDA graphs made here, and its input."""
    layers = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)]).cuda()
    layers = layers.half()
    x = torch.randn(8, 1024, device="cuda", dtype=torch.half)
    if graphs == "trees":
        step = torch.compile(lambda t: layers(t).relu(), mode="reduce-overhead")
        for _ in range(4):
            step(x)
        return step, x
    static_in = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            layers(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = layers(static_in).relu()

    def step(t):
        static_in.copy_(t)
        graph.replay()
        return static_out.clone()
    return step, x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--graphs", choices=("trees", "plain"), default="trees")
    ap.add_argument("--when", choices=("after", "before", "racing"), default="after")
    ap.add_argument("--kinds", default="G,K,C,S,O")
    ap.add_argument("--steps", default="alone,ts")
    ap.add_argument("--cupti", default="")
    ap.add_argument("--replays", type=int, default=300)
    args = ap.parse_args()
    import torch

    lib = ctypes.CDLL(args.lib)
    lib.bisect_start.argtypes = (ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int,
                                 ctypes.c_int)
    lib.bisect_count.restype = ctypes.c_long
    kinds = [KINDS[k] for k in args.kinds.split(",") if k and k != "none"]
    steps = sum(STEPS[s] for s in args.steps.split(",") if s and s != "none")
    arr = (ctypes.c_int * max(1, len(kinds)))(*kinds)
    started = {}

    def take_steps():
        started["rc"] = lib.bisect_start(args.cupti.encode(), arr, len(kinds), steps)

    torch.cuda.init()
    torch.zeros(1, device="cuda")
    if args.when == "before":
        take_steps()
    step, x = build(torch, args.graphs)
    torch.cuda.synchronize()
    if args.when != "before":
        agent = threading.Thread(target=take_steps)
        agent.start()
        if args.when == "racing":
            while agent.is_alive():
                x = step(x).clamp(-1, 1)
        agent.join()
    if started.get("rc"):
        print(json.dumps({"ok": False, "why": "setup failed"}))
        return 2
    t0 = time.monotonic()
    for _ in range(args.replays):
        x = step(x).clamp(-1, 1)
        x = (x * 0.5).contiguous()
    torch.cuda.synchronize()
    elapsed = time.monotonic() - t0
    counts = {k: lib.bisect_count(v) for k, v in KINDS.items()}
    lib.bisect_stop()
    for _ in range(20):
        x = step(x).clamp(-1, 1)
    torch.cuda.synchronize()
    print(json.dumps({"ok": True, "replays": args.replays, "s": round(elapsed, 3),
                      "counts": counts, "dropped": lib.bisect_count(-1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
