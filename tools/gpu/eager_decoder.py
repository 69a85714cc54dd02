#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A speculative decoder in plain PyTorch eager mode: no CUDA graph, no torch.compile.

  eager_decoder.py --dir DIR [--rounds N] [--k-max K] [--same-model]

Two Llama-shaped models with random weights (a target, and a draft of fewer and
narrower layers; --same-model drafts with the target itself), greedy, batch 1,
static KV caches. One round:

  draft: per token the draft's forward over one token, argmax, and .item() (the
         stopping criteria's read: a copy to the host and a sync)
  verify: the target's forward over the last token and the k drafts
  accept: the compare on the GPU, and one .tolist() of its count and the
          target's tokens (a copy to the host and a sync)
  trim: the caches' entries past the accepted length cleared (.zero_())

k moves as assisted generation's heuristic: +2 after a round whose drafts were all
accepted, -1 otherwise, within [1, --k-max]. Random weights agree on nothing, so how
many drafts a round accepts follows a fixed pattern (all of them every third round,
else fewer); the compare still runs and its result is read at the accept sync.

Once built and warmed up it writes DIR/ready (its pid), waits for DIR/go, decodes
--rounds rounds, writes DIR/truth.json (its rounds, each with CLOCK_MONOTONIC host
times from time.monotonic_ns) and DIR/done, and exits.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

TARGET = dict(layers=8, hidden=2048, heads=16, ffn=5632)
DRAFT = dict(layers=2, hidden=512, heads=8, ffn=1408)
VOCAB = 32000
MAX_LEN = 2048
PROMPT = 32


class RMSNorm(torch.nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        scale = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (x.float() * scale).to(x.dtype) * self.weight


class Layer(torch.nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads, self.dim = heads, hidden // heads
        self.norm1 = RMSNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = torch.nn.Linear(hidden, hidden, bias=False)
        self.norm2 = RMSNorm(hidden)
        self.gate_up = torch.nn.Linear(hidden, 2 * ffn, bias=False)
        self.down = torch.nn.Linear(ffn, hidden, bias=False)

    def forward(self, x, cos, sin, mask, cache_k, cache_v, start):
        b, n, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, self.dim).unbind(2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        # written at start..start+n; attention reads the whole cache, masked: shapes
        # depend on n only, never on how long the sequence has grown
        cache_k[:, :, start:start + n] = k.transpose(1, 2)
        cache_v[:, :, start:start + n] = v.transpose(1, 2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), cache_k, cache_v, attn_mask=mask)
        x = x + self.out(a.transpose(1, 2).reshape(b, n, -1))
        g, u = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


def rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model(torch.nn.Module):
    def __init__(self, layers, hidden, heads, ffn):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, hidden)
        self.layers = torch.nn.ModuleList(Layer(hidden, heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.head = torch.nn.Linear(hidden, VOCAB, bias=False)
        self.heads, self.dim = heads, hidden // heads
        half = self.dim // 2
        freqs = 1.0 / (10000 ** (torch.arange(half, dtype=torch.float32) / half))
        angles = torch.outer(torch.arange(MAX_LEN, dtype=torch.float32), freqs)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        self.register_buffer("kv_pos", torch.arange(MAX_LEN), persistent=False)


class Cache:
    """One model's static KV cache: one [1, heads, MAX_LEN, dim] pair per layer."""

    def __init__(self, model, dtype, device):
        shape = (1, model.heads, MAX_LEN, model.dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in model.layers]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in model.layers]

    def trim(self, length, width):
        """Entries past the accepted length are stale: cleared, a fixed width of them."""
        end = min(length + width, MAX_LEN)
        for k, v in zip(self.k, self.v):
            k[:, :, length:end].zero_()
            v[:, :, length:end].zero_()


@torch.inference_mode()
def forward(model, cache, ids, start):
    """Logits of ids [1, n], written into cache at positions start..start+n-1."""
    n = ids.shape[1]
    pos = torch.arange(start, start + n, device=ids.device)
    cos = model.cos[pos].to(model.head.weight.dtype)[None, :, None, :]
    sin = model.sin[pos].to(model.head.weight.dtype)[None, :, None, :]
    visible = model.kv_pos[None, :] <= pos[:, None]
    mask = torch.zeros(visible.shape, dtype=model.head.weight.dtype, device=ids.device)
    mask = mask.masked_fill(~visible, float("-inf"))
    x = model.embed(ids)
    for layer, k, v in zip(model.layers, cache.k, cache.v):
        x = layer(x, cos, sin, mask, k, v, start)
    return model.head(model.norm(x))


def accepted(round_no, k):
    """Drafts accepted: all every third round, else fewer (a fixed pattern)."""
    return k if round_no % 3 == 0 else (round_no * 7) % k


class Decoder:
    def __init__(self, a, device):
        dtype = torch.bfloat16
        torch.manual_seed(0)
        self.target = Model(**TARGET).to(device=device, dtype=dtype).eval()
        self.draft = self.target if a.same_model else \
            Model(**DRAFT).to(device=device, dtype=dtype).eval()
        self.tcache = Cache(self.target, dtype, device)
        self.dcache = Cache(self.draft, dtype, device)
        self.k_max, self.k = a.k_max, min(5, a.k_max)
        prompt = torch.randint(0, VOCAB, (1, PROMPT), device=device)
        # prefill both caches with the prompt but its last token, which round 0 starts from
        forward(self.target, self.tcache, prompt[:, :-1], 0)
        forward(self.draft, self.dcache, prompt[:, :-1], 0)
        self.last = prompt[:, -1:]
        self.length = PROMPT - 1    # tokens in the caches before self.last
        self.rounds = 0

    @torch.inference_mode()
    def round(self):
        k, start = self.k, self.length
        times = {"start": time.monotonic_ns(), "k": k}
        ids, drafts = self.last, []
        for i in range(k):
            logits = forward(self.draft, self.dcache, ids, start + i)
            ids = logits[:, -1, :].argmax(-1, keepdim=True)
            drafts.append(ids)
            if ids.item() < 0:      # the stopping criteria's read: never true
                break
        times["verify"] = time.monotonic_ns()
        cand = torch.cat([self.last] + drafts, dim=1)
        logits = forward(self.target, self.tcache, cand, start)
        best = logits[0].argmax(-1)
        match = (best[:k] == cand[0, 1:]).int().cumprod(0).sum().view(1)
        result = torch.cat([match.int(), best.int()]).tolist()
        times["accepted"] = time.monotonic_ns()
        n = accepted(self.rounds, k)
        # the bonus token: the target's own at the first rejected place
        self.last = best[n:n + 1].view(1, 1)
        self.length = start + n + 1
        self.tcache.trim(self.length, self.k_max + 1)
        self.dcache.trim(self.length, self.k_max + 1)
        times["end"] = time.monotonic_ns()
        times.update(n=n, matched_on_gpu=result[0])
        self.k = max(1, min(self.k_max, k + 2 if n == k else k - 1))
        self.rounds += 1
        if self.length + 2 * self.k_max + 2 >= MAX_LEN:
            self.length = PROMPT - 1    # start over at the prompt: the caches are full
        return times


def wait_go(a, ready, go):
    with open(os.path.join(a.dir, ready), "w") as f:
        f.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + a.go_timeout
    while not os.path.exists(os.path.join(a.dir, go)):
        if time.monotonic() > deadline:
            sys.exit(f"eager_decoder.py: no {go} file")
        time.sleep(0.01)


def ab_slot(dec, a, slot):
    """One round of an A/B: --cycles decoder rounds, their tokens/s (a round's tokens are
    its accepted drafts and the bonus token)."""
    wait_go(a, f"ready-{slot}", f"go-{slot}")
    t0 = time.monotonic_ns()
    rounds = [dec.round() for _ in range(a.cycles)]
    torch.cuda.synchronize()
    wall = time.monotonic_ns() - t0
    tokens = sum(r["n"] + 1 for r in rounds)
    truth = {"tokens_per_s": tokens * 1e9 / wall, "tokens": tokens, "wall_ns": wall,
             "loop_start_ns": t0, "loop_end_ns": t0 + wall,
             "cycle_ns": [r["end"] - r["start"] for r in rounds], "pid": os.getpid()}
    with open(os.path.join(a.dir, f"truth-{slot}.json"), "w") as f:
        json.dump(truth, f)
    with open(os.path.join(a.dir, f"done-{slot}"), "w") as f:
        f.write("done\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--k-max", type=int, default=6)
    ap.add_argument("--same-model", action="store_true")
    ap.add_argument("--go-timeout", type=float, default=120.0)
    ap.add_argument("--variants", default="",
                    help="tools/bench/gpu_ab.sh's protocol: one slot per name (DIR/ready-N, "
                         "go-N, truth-N.json, done-N), --cycles rounds a slot")
    ap.add_argument("--cycles", type=int, default=100)
    a = ap.parse_args()
    if a.rounds < 1 or a.k_max < 1 or a.cycles < 1:
        sys.exit("eager_decoder.py: --rounds and --k-max must be at least 1")
    if not torch.cuda.is_available():
        sys.exit("eager_decoder.py: no CUDA device")
    dec = Decoder(a, torch.device("cuda"))
    for _ in range(a.warmup):
        dec.round()
    torch.cuda.synchronize()
    if a.variants:
        for slot in range(len(a.variants.split(","))):
            ab_slot(dec, a, slot)
        return
    wait_go(a, "ready", "go")
    first = dec.rounds
    rounds = [dec.round() for _ in range(a.rounds)]
    torch.cuda.synchronize()
    truth = {"rounds": len(rounds), "first_round": first, "same_model": a.same_model,
             "k_max": a.k_max, "pid": os.getpid(), "tid": os.getpid(),
             "target": TARGET, "draft": TARGET if a.same_model else DRAFT,
             "per_round": rounds}
    with open(os.path.join(a.dir, "truth.json"), "w") as f:
        json.dump(truth, f)
    with open(os.path.join(a.dir, "done"), "w") as f:
        f.write("done\n")
    print(f"{len(rounds)} rounds, k per round {[r['k'] for r in rounds[:20]]}...")


if __name__ == "__main__":
    main()
