#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A tensor-parallel speculative-decoding loop on real CUDA and NCCL, with its own truth.

  tp_spec.py --ranks R --cycles N [--k K] [--layers L] --truth DIR [--go FILE]

The launcher imports no torch and maps no libcuda: it starts R rank processes (one per
GPU) and waits, like an SGLang or vLLM launcher. Each rank:
  prefill  eager target forward: L matmuls, L eager all-reduces
  capture  draft step graph, verify graph (L layers, an all-reduce each, captured),
           draft-extend graph
  loop     k draft replays, one verify replay, accept (the verify result copied to the
           host and read: a stream sync), one extend replay
and writes DIR/rank-R.json: its pid, rank, the counts of each and the collectives it
made outside and inside capture. --plant-ctx-sync adds torch.cuda.synchronize() between
draft and verify in every cycle: a sync that breaks graph overlap. With --go the ranks
wait for that file after capture, so a tracer that attached to the launcher sees the
loop from its first cycle.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def launcher(args):
    os.makedirs(args.truth, exist_ok=True)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port),
               WORLD_SIZE=str(args.ranks))
    procs = []
    for rank in range(args.ranks):
        cmd = [sys.executable, os.path.abspath(__file__), "--rank", str(rank)] + sys.argv[1:]
        procs.append(subprocess.Popen(cmd, env=dict(env, RANK=str(rank))))
    status = 0
    for p in procs:
        status |= p.wait()
    return status


def host_prep(us):
    """Host work before the verify launch (sampling, batch prep): it overlaps the
    draft's GPU work unless a sync drained the GPU first. Spun, not slept: sleeps
    oversleep by more than this lasts."""
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


def rank_main(args):
    import torch
    import torch.distributed as dist

    rank = args.rank
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", rank=rank, world_size=args.ranks, device_id=dev)
    hidden = 1024
    torch.manual_seed(0)
    target_w = [torch.randn(hidden, hidden, device=dev) / 32 for _ in range(args.layers)]
    draft_w = torch.randn(hidden, hidden, device=dev) / 32
    tokens = torch.randn(args.k + 1, hidden, device=dev)
    draft_in = torch.randn(1, hidden, device=dev)
    accept_out = torch.zeros(1, device=dev)
    eager_collectives = 0

    def target_forward(x):
        for w in target_w:
            x = torch.tanh(x @ w)
            dist.all_reduce(x)
        return x

    # prefill: eager, every all-reduce a NCCL call of its own
    prompt = torch.randn(16, hidden, device=dev)
    for _ in range(args.prefills):
        target_forward(prompt)
        eager_collectives += args.layers
    torch.cuda.synchronize()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    graphs = {}
    with torch.cuda.stream(side):
        # warm-up on the capture stream, as CUDA graph capture requires
        for _ in range(2):
            draft_in.copy_(torch.tanh(draft_in @ draft_w))
            target_forward(tokens)
            eager_collectives += args.layers
        torch.cuda.synchronize()
        graphs["draft"] = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graphs["draft"], stream=side):
            for _ in range(args.draft_matmuls):
                draft_in.copy_(torch.tanh(draft_in @ draft_w))
        graphs["verify"] = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graphs["verify"], stream=side):
            out = target_forward(tokens)
            accept_out.copy_(out[0, :1])
        graphs["extend"] = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graphs["extend"], stream=side):
            draft_in.copy_(torch.tanh(tokens[-1:] @ draft_w))
    torch.cuda.synchronize()
    if args.go:
        while not os.path.exists(args.go):
            time.sleep(0.01)
    replays = {"draft": 0, "verify": 0, "extend": 0}
    accepted = 0.0
    t0 = time.monotonic_ns()
    for _ in range(args.cycles):
        for _ in range(args.k):
            graphs["draft"].replay()
            replays["draft"] += 1
        if args.plant_ctx_sync:
            torch.cuda.synchronize()  # a planted host sync between draft and verify
        host_prep(args.host_us)
        graphs["verify"].replay()
        replays["verify"] += 1
        accepted += accept_out.item()  # the accept decision needs the result on the host
        graphs["extend"].replay()
        replays["extend"] += 1
    torch.cuda.synchronize()
    t1 = time.monotonic_ns()
    truth = {"pid": os.getpid(), "rank": rank, "nranks": args.ranks, "cycles": args.cycles,
             "k": args.k, "layers": args.layers, "replays": replays,
             "eager_all_reduce": eager_collectives, "captured_all_reduce": {"verify": args.layers},
             "planted_ctx_syncs": args.cycles if args.plant_ctx_sync else 0,
             "loop_start_ns": t0, "loop_end_ns": t1, "accepted_sum": accepted}
    with open(os.path.join(args.truth, f"rank-{rank}.json"), "w") as f:
        json.dump(truth, f)
    dist.destroy_process_group()
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--prefills", type=int, default=3)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--go")
    ap.add_argument("--draft-matmuls", type=int, default=1,
                    help="matmuls per draft step (GPU time of a draft graph)")
    ap.add_argument("--host-us", type=float, default=0,
                    help="host work before each verify launch, in microseconds")
    ap.add_argument("--plant-ctx-sync", action="store_true",
                    help="torch.cuda.synchronize() between draft and verify in every cycle")
    ap.add_argument("--port", type=int, default=29533)
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    return rank_main(args) if args.rank is not None else launcher(args)


if __name__ == "__main__":
    sys.exit(main())
