#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Hugging Face assisted generation (eager PyTorch), random weights, with its truth.

  hf_assist.py --out TRUTH.json [--draft small|same] [--sample] [--rounds N]
               [--new-tokens 96] [--warmup 2] [--ready-file F --ready-wait S]
  hf_assist.py --dir DIR --variants clean,clean,... [--cycles N] [same model options]

target.generate(ids, assistant_model=draft, ...) as transformers runs it, batch 1, a
32-token random prompt, LlamaForCausalLM models from LlamaConfig (no downloads), bf16:
the target 22 layers x 2048, the draft 4 x 512 (or the target itself: --draft same).
Truth: every call of AssistedCandidateGenerator.get_candidates (one draft/verify cycle
each) with its CLOCK_MONOTONIC start and end, per timed generate() round; --warmup rounds
come first, then --ready-file is made and --ready-wait seconds pass (a tracer attaches).

With --dir it speaks tools/bench/gpu_ab.sh's slot protocol instead: after the warm-up, per
name in --variants (one slot each) it writes DIR/ready-I (its pid), waits for DIR/go-I,
makes --cycles generate() calls back to back, and writes DIR/truth-I.json (tokens/s over
the slot's wall time; cycle_ns, each get_candidates call's start to the next's, the last
to its generate()'s end; the calls' rounds as above) and DIR/done-I.
"""
import argparse
import json
import os
import sys
import time


def models(torch, transformers, same):
    cfg = dict(vocab_size=32000, max_position_embeddings=2048, torch_dtype=torch.bfloat16)
    target_cfg = transformers.LlamaConfig(hidden_size=2048, intermediate_size=5632,
                                          num_hidden_layers=22, num_attention_heads=16,
                                          num_key_value_heads=16, **cfg)
    torch.manual_seed(0)
    target = transformers.LlamaForCausalLM(target_cfg).to("cuda", torch.bfloat16).eval()
    if same:
        return target, target
    draft_cfg = transformers.LlamaConfig(hidden_size=512, intermediate_size=1408,
                                         num_hidden_layers=4, num_attention_heads=8,
                                         num_key_value_heads=8, **cfg)
    draft = transformers.LlamaForCausalLM(draft_cfg).to("cuda", torch.bfloat16).eval()
    return target, draft


def count_candidates(calls):
    """Wraps get_candidates: each call's start and end go into calls."""
    from transformers.generation import candidate_generator as cg
    original = cg.AssistedCandidateGenerator.get_candidates

    def timed(self, *a, **kw):
        start = time.monotonic_ns()
        try:
            return original(self, *a, **kw)
        finally:
            calls.append((start, time.monotonic_ns()))
    cg.AssistedCandidateGenerator.get_candidates = timed


def generate_round(torch, target, ids, gen, calls):
    """One timed generate(): its clock, its cycles and their get_candidates calls."""
    del calls[:]
    start = time.monotonic_ns()
    out = target.generate(ids, **gen)
    torch.cuda.synchronize()
    end = time.monotonic_ns()
    return {"start_ns": start, "end_ns": end, "cycles": len(calls),
            "new_tokens": int(out.shape[1] - ids.shape[1]),
            "get_candidates_ns": list(calls)}


def wait_go(args, slot):
    with open(os.path.join(args.dir, f"ready-{slot}"), "w") as f:
        f.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + args.go_timeout
    while not os.path.exists(os.path.join(args.dir, f"go-{slot}")):
        if time.monotonic() > deadline:
            sys.exit(f"hf_assist.py: no go-{slot} file in {args.dir}")
        time.sleep(0.01)


def ab_slot(torch, args, slot, run):
    """One slot of gpu_ab.sh: --cycles generate() calls, their tokens/s."""
    wait_go(args, slot)
    t0 = time.monotonic_ns()
    rounds = [run() for _ in range(args.cycles)]
    wall = time.monotonic_ns() - t0
    tokens = sum(r["new_tokens"] for r in rounds)
    cycle_ns = []
    for r in rounds:
        starts = [s for s, _ in r["get_candidates_ns"]] + [r["end_ns"]]
        cycle_ns += [b - a for a, b in zip(starts, starts[1:])]
    truth = {"program": "hf_assist", "draft": args.draft, "sample": args.sample,
             "index": slot, "pid": os.getpid(), "device": torch.cuda.get_device_name(),
             "tokens": tokens, "wall_ns": wall,
             "loop_start_ns": t0, "loop_end_ns": t0 + wall,
             "tokens_per_s": tokens * 1e9 / wall, "cycle_ns": cycle_ns,
             "cycles": sum(r["cycles"] for r in rounds), "rounds": rounds}
    with open(os.path.join(args.dir, f"truth-{slot}.json"), "w") as f:
        json.dump(truth, f)
    with open(os.path.join(args.dir, f"done-{slot}"), "w") as f:
        f.write("done\n")


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--draft", choices=("small", "same"), default="small")
    ap.add_argument("--sample", action="store_true", help="do_sample=True")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--new-tokens", type=int, default=96)
    ap.add_argument("--ready-file")
    ap.add_argument("--ready-wait", type=float, default=0.0)
    ap.add_argument("--dir", help="tools/bench/gpu_ab.sh's slot protocol in DIR")
    ap.add_argument("--variants", default="clean", help="one slot per name")
    ap.add_argument("--cycles", type=int, default=2, help="generate() calls a slot")
    ap.add_argument("--go-timeout", type=float, default=600.0)
    args = ap.parse_args()
    if (args.out is None) == (args.dir is None):
        ap.error("one of --out or --dir")
    if min(args.rounds, args.cycles, args.new_tokens) < 1 or args.warmup < 0:
        ap.error("--rounds, --cycles and --new-tokens must be at least 1, --warmup 0 or more")
    return args


def main():
    args = parse_args()
    import torch
    import transformers

    target, draft = models(torch, transformers, args.draft == "same")
    calls = []
    count_candidates(calls)
    ids = torch.randint(100, 30000, (1, 32), device="cuda")
    mask = torch.ones_like(ids)
    gen = dict(assistant_model=draft, max_new_tokens=args.new_tokens,
               min_new_tokens=args.new_tokens, do_sample=args.sample, attention_mask=mask)
    if args.sample:
        gen.update(temperature=1.0, top_k=0, top_p=1.0)
    rounds = []
    with torch.inference_mode():
        def run():
            return generate_round(torch, target, ids, gen, calls)
        if args.dir:
            for _ in range(args.warmup):
                run()
            for slot in range(len(args.variants.split(","))):
                ab_slot(torch, args, slot, run)
            return 0
        for r in range(args.warmup + args.rounds):
            if r == args.warmup and args.ready_file:
                open(args.ready_file, "w").close()
                time.sleep(args.ready_wait)
            one = run()
            if r >= args.warmup:
                rounds.append(one)
            time.sleep(0.2)
    truth = {"program": "hf_assist", "draft": args.draft, "sample": args.sample,
             "transformers": transformers.__version__, "torch": torch.__version__,
             "device": torch.cuda.get_device_name(), "rounds": rounds,
             "cycles": sum(r["cycles"] for r in rounds)}
    with open(args.out, "w") as f:
        json.dump(truth, f)
    print(f"hf_assist: {args.draft} draft, sample {args.sample}: cycles per round "
          f"{[r['cycles'] for r in rounds]}, new tokens {[r['new_tokens'] for r in rounds]}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
