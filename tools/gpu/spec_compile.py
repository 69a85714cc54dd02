#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A torch.compile(mode="reduce-overhead") speculative decoder, random weights, with its truth.

  spec_compile.py --dir DIR --variants clean,ctx,side,... [--cycles N] [--k K] [sizes]

Draft and target are small transformers (no downloads) compiled with
mode="reduce-overhead", so cudagraph trees capture and replay them on PyTorch's default
(legacy) stream, copying graph inputs with D2D copies before each replay. One cycle:
  draft     k draft-model calls (k graph replays), each token fed to the next
  verify    one target-model call on the k + 1 tokens (one graph replay)
  accept    (out != drafted).nonzero()  the accept sync: the result reaches the host
            [0, 0].item()               a second sync (when a token was rejected)
            pinned.copy_(non_blocking)  async copy to pinned memory made before attach
  next      torch.tensor([pos], device) a CPU scalar to the GPU: pageable H2D + a sync
The variants run one after another in one process, each as one round. Before each
round the program writes DIR/ready-I and waits for DIR/go-I (a tracer attaches between),
then writes DIR/truth-I.json and DIR/done-I. Plants, each in every cycle:
  clean     none
  ctx       torch.cuda.synchronize() between draft and verify
  side      a blocking side stream (cudaStreamCreate, made after go) runs a matmul
            launched just before verify: the legacy-stream verify work serialises with it
  side-pre  the same, on a blocking stream made before the tracer attached
  pageable  the drafted tokens copied non_blocking into pageable memory made before the
            attach, before verify: the "async" D2H blocks until the drafts are done
"""
import argparse
import ctypes
import json
import os
import sys
import time

PLANTS = ("clean", "ctx", "side", "side-pre", "pageable")


def cudart():
    for line in open("/proc/self/maps"):
        if "libcudart.so" in line:
            return ctypes.CDLL(line.split(None, 5)[5].strip())
    raise SystemExit("libcudart is not mapped")


def blocking_stream(torch):
    """A stream made with cudaStreamCreate: blocking, so it serialises with the legacy one."""
    handle = ctypes.c_void_p()
    err = cudart().cudaStreamCreate(ctypes.byref(handle))
    if err:
        raise SystemExit(f"cudaStreamCreate: error {err}")
    return torch.cuda.ExternalStream(handle.value)


def make_lms(torch, args):
    """(draft, target): the two eager models, bf16, on the GPU, seeded."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, h):
            super().__init__()
            self.norm = nn.RMSNorm(h)
            self.up = nn.Linear(h, 4 * h, bias=False)
            self.down = nn.Linear(4 * h, h, bias=False)

        def forward(self, x):
            return x + self.down(nn.functional.gelu(self.up(self.norm(x))))

    class LM(nn.Module):
        def __init__(self, h, layers):
            super().__init__()
            self.emb = nn.Embedding(args.vocab, h)
            self.pos = nn.Embedding(args.max_pos, h)
            self.blocks = nn.ModuleList(Block(h) for _ in range(layers))
            self.norm = nn.RMSNorm(h)
            self.head = nn.Linear(h, args.vocab, bias=False)

        def forward(self, tokens, pos):
            where = (pos + torch.arange(tokens.shape[0], device=tokens.device)) % args.max_pos
            x = self.emb(tokens) + self.pos(where)
            for b in self.blocks:
                x = b(x)
            return self.head(self.norm(x)).argmax(-1)

    with torch.device("cuda"):
        torch.manual_seed(0)
        target = LM(args.hidden, args.layers).to(torch.bfloat16).eval()
        draft = LM(args.draft_hidden, args.draft_layers).to(torch.bfloat16).eval()
    return draft, target


def build_models(torch, args):
    draft, target = make_lms(torch, args)
    return (torch.compile(draft, mode="reduce-overhead", fullgraph=True, dynamic=False),
            torch.compile(target, mode="reduce-overhead", fullgraph=True, dynamic=False))


class Loop:
    def __init__(self, torch, args):
        self.torch, self.args = torch, args
        self.draft, self.verify = build_models(torch, args)
        dev = torch.device("cuda")
        self.last = torch.zeros(1, dtype=torch.long, device=dev)
        self.pos = 0
        # host memory made before any tracer attaches
        self.pinned = torch.empty(1, dtype=torch.long, pin_memory=True)
        self.pageable = torch.empty(args.k + 1, dtype=torch.long)
        self.side_pre = blocking_stream(torch)
        self.side = None
        self.side_w = torch.randn(args.side_n, args.side_n, device=dev, dtype=torch.bfloat16)
        self.side_x = torch.randn(args.side_n, args.side_n, device=dev, dtype=torch.bfloat16)

    def cycle(self, plant, truth):
        torch, k = self.torch, self.args.k
        torch.compiler.cudagraph_mark_step_begin()
        pos_t = torch.tensor([self.pos], device="cuda")  # pageable H2D, then a stream sync
        truth["scalar_h2d"] += 1
        toks = [self.last]
        for i in range(k):
            toks.append(self.draft(toks[-1], pos_t + i))
        drafted = torch.cat(toks)
        if plant == "ctx":
            torch.cuda.synchronize()
            truth["planted"] += 1
        elif plant in ("side", "side-pre"):
            stream = self.side if plant == "side" else self.side_pre
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                self.side_y = self.side_x @ self.side_w
            truth["planted"] += 1
        elif plant == "pageable":
            self.pageable.copy_(drafted, non_blocking=True)
            truth["planted"] += 1
        out = self.verify(drafted, pos_t)
        rejected = (out[:k] != drafted[1:]).nonzero()  # the accept sync
        if rejected.shape[0]:
            n = int(rejected[0, 0].item())
            truth["item"] += 1
        else:
            n = k
        self.last = out[n:n + 1].clone()
        self.pinned.copy_(self.last, non_blocking=True)
        truth["pinned_d2h"] += 1
        self.pos = (self.pos + n + 1) % self.args.max_pos
        truth["tokens"] += n + 1

    def round(self, plant, cycles):
        torch = self.torch
        truth = {"plant": plant, "cycles": cycles, "tokens": 0, "planted": 0, "item": 0,
                 "scalar_h2d": 0, "pinned_d2h": 0, "pid": os.getpid()}
        if plant == "side" and self.side is None:
            self.side = blocking_stream(torch)
        torch.cuda.synchronize()
        getcpu = ctypes.CDLL(None).sched_getcpu
        t0 = time.monotonic_ns()
        ends, cpus = [], []
        for _ in range(cycles):
            self.cycle(plant, truth)
            ends.append(time.monotonic_ns())
            cpus.append(getcpu())
        torch.cuda.synchronize()
        truth["loop_start_ns"], truth["loop_end_ns"] = t0, time.monotonic_ns()
        # each cycle ends in its accept sync, so its host time spans its GPU work
        truth["cycle_ns"] = [b - a for a, b in zip([t0] + ends, ends)]
        truth["cycle_cpu"] = cpus  # where the host thread ended each cycle
        truth["tokens_per_s"] = truth["tokens"] / ((truth["loop_end_ns"] - t0) / 1e9)
        return truth


def add_model_args(ap):
    """The draft length and the models' sizes."""
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--max-pos", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--draft-hidden", type=int, default=4096)
    ap.add_argument("--draft-layers", type=int, default=4)


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.005)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--variants", default="clean")
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    add_model_args(ap)
    ap.add_argument("--side-n", type=int, default=4096, help="side-stream matmul size")
    args = ap.parse_args()
    variants = args.variants.split(",")
    for v in variants:
        if v not in PLANTS:
            ap.error(f"unknown variant {v} (one of {', '.join(PLANTS)})")
    import torch

    os.makedirs(args.dir, exist_ok=True)
    with torch.inference_mode():
        loop = Loop(torch, args)
        t0 = time.monotonic()
        loop.round("clean", args.warmup)  # compile, capture, settle
        print(f"warm-up {time.monotonic() - t0:.1f} s", flush=True)
        for i, v in enumerate(variants):
            open(os.path.join(args.dir, f"ready-{i}"), "w").close()
            wait_for(os.path.join(args.dir, f"go-{i}"))
            truth = loop.round(v, args.cycles)
            truth["index"] = i
            with open(os.path.join(args.dir, f"truth-{i}.json"), "w") as f:
                json.dump(truth, f)
            open(os.path.join(args.dir, f"done-{i}"), "w").close()
            print(json.dumps(truth), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
