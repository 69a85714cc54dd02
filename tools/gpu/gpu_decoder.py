#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A CUDA-graph speculative decoder whose phases are timed on the GPU by CUDA events.

  gpu_decoder.py --out TRUTH.json [--cycles N] [--warmup W] [--k K] [--mode joined|split]
                 [--profiler off|early|late] [sizes as spec_compile.py]

spec_compile.py's draft and target models (random weights, no downloads), each step
compiled with torch.compile(mode="reduce-overhead"), so cudagraph trees replay them.
One cycle, as specprobe's phases read it:
  draft    k draft-model steps, k graph replays, each step fed by the one before
  verify   one target-model replay on the k + 1 tokens; it counts the accepted ones
  accept   .item() of that count: the accept sync, the result reaches the host
  extend   one replay that runs the draft model's blocks over the verified tokens to
           refresh a running draft state and hands the next draft its token and position
           (after the copies of verify's result that the next cycle's graphs read)
Nothing blocks between draft and verify, nor between extend and the next draft.
--mode split puts a stream sync between draft and verify, then a spin kernel
(--spin-cycles, about 0.2 ms) that keeps the stream busy while the host launches verify;
the spin is eager work after the last draft step, so it counts in the draft, for the
events and for specprobe alike.

Truth: CUDA events (enable_timing) recorded on the current stream right before and after
draft, verify and extend in every cycle, never waited on inside the loop; all are read
after the last cycle. An event's time is when the stream reached it, so each phase's
figure runs from its first work's start to its last work's end, the GPU span, where the
stream was busy when the host recorded the first event; where it was idle (extend starts
after the accept sync), the span gains the launch of the first work (the copies of
verify's result, some 0.02 ms). TRUTH.json holds per timed cycle: draft, verify and
extend ms and the cycle's ms from the events (one draft start to the next), the host's
wall time of the cycle, where it began and where its accept returned (CLOCK_MONOTONIC, to
line cycles up with a recording), and tokens/s over the timed cycles after the warm-up
ones.
--profiler early starts torch.profiler (CUPTI) before the program's first CUDA work, late
around the timed cycles; --profile-table FILE writes its per-call counts.
--turns DIR --arm NAME --rounds R: an A/B arm that takes turns with others in one folder.
After its warm-up it creates DIR/NAME.ready (holding its pid); then for each round r it
waits for DIR/go.r.NAME, runs --cycles timed cycles, writes their tokens/s and cycle
times to DIR/NAME.r.json and creates DIR/done.r.NAME. So arms run one at a time,
interleaved, each compiled and warmed once. DIR/end, made while it waits, ends its
rounds there (a run cut short by time still ends every arm cleanly).
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time

from spec_compile import add_model_args, make_lms

STARTED = time.monotonic()
PHASES = ("draft", "verify", "extend")


def compile_steps(torch, args):
    """(extend, draft, verify): the cycle's three compiled steps."""
    draft_lm, target_lm = make_lms(torch, args)
    k, max_pos = args.k, args.max_pos

    def extend(res, state):
        out, n, pos = res[:k + 1], res[k + 1], res[k + 2]
        rows = torch.arange(k + 1, device=res.device)
        x = draft_lm.emb(out) + draft_lm.pos((pos + rows) % max_pos)
        for block in draft_lm.blocks:
            x = block(x)
        keep = (rows <= n).to(x.dtype).unsqueeze(1)
        state = 0.5 * state + (x * keep).sum(0) / (n + 1).to(x.dtype)
        return out.gather(0, n.view(1)), (pos + n + 1).view(1) % max_pos, state

    def draft(tok, pos):
        return draft_lm(tok, pos), (pos + 1) % max_pos

    def verify(pos, *toks):
        drafted = torch.cat(toks)
        out = target_lm(drafted, pos)
        accepted = ((out[:k] != drafted[1:]).long().cumsum(0) == 0).sum()
        return torch.cat([out, accepted.view(1), pos])

    opts = dict(mode="reduce-overhead", fullgraph=True, dynamic=False)
    return (torch.compile(extend, **opts), torch.compile(draft, **opts),
            torch.compile(verify, **opts))


class Decoder:
    def __init__(self, torch, args):
        self.torch, self.args = torch, args
        self.extend, self.draft, self.verify = compile_steps(torch, args)
        dev = torch.device("cuda")
        res = torch.zeros(args.k + 3, dtype=torch.long, device=dev)
        state = torch.zeros(args.draft_hidden, dtype=torch.bfloat16, device=dev)
        torch.compiler.cudagraph_mark_step_begin()
        self.tok, self.pos, self.state = self.extend(res, state)

    def cycle(self, ev):
        """One cycle; ev: its five events. Returns the tokens it made."""
        torch, k = self.torch, self.args.k
        ev[0].record()
        tok, pos = self.tok, self.pos
        if self.args.draft_setup:
            # as decoders written elsewhere begin a draft: Python, a scalar uploaded from
            # pageable memory (a synchronous copy), an eager op on the token, whose new
            # tensor cudagraph trees copy into the graph's static input
            host = sum(i & 7 for i in range(self.args.draft_setup))
            upload = torch.tensor([host], device=tok.device)
            tok = tok + (upload - upload)
        toks = [tok]
        for _ in range(k):
            tok, pos = self.draft(tok, pos)
            toks.append(tok)
        if self.args.mode == "split":
            torch.cuda.current_stream().synchronize()
            if self.args.spin_cycles and hasattr(torch.cuda, "_sleep"):
                torch.cuda._sleep(self.args.spin_cycles)
        ev[1].record()
        res = self.verify(self.pos, *toks)
        ev[2].record()
        n = int(res[k + 1].item())  # the accept sync
        ev[3].record()
        # the next cycle's graphs replay over this one's outputs: keep copies of them
        res, state = res.clone(), self.state.clone()
        torch.compiler.cudagraph_mark_step_begin()
        self.tok, self.pos, self.state = self.extend(res, state)
        ev[4].record()
        return n + 1


def event_truth(events, end, timed):
    """Per timed cycle: each phase's ms and the cycle's, draft start to the next one's."""
    gpu = {p: [] for p in PHASES + ("accept", "cycle")}
    for i in timed:
        ev = events[i]
        gpu["draft"].append(ev[0].elapsed_time(ev[1]))
        gpu["verify"].append(ev[1].elapsed_time(ev[2]))
        gpu["accept"].append(ev[2].elapsed_time(ev[3]))  # verify's end to after the sync
        gpu["extend"].append(ev[3].elapsed_time(ev[4]))
        nxt = events[i + 1][0] if i + 1 < len(events) else end
        gpu["cycle"].append(ev[0].elapsed_time(nxt))
    return gpu


def cudagraph_skips():
    """How often inductor ran a step without a graph (0: every step is a replay)."""
    try:
        from torch._dynamo.utils import counters
        return counters["inductor"]["cudagraph_skips"]
    except (ImportError, KeyError):
        return None


def since_exec():
    """Seconds since the process was started (its exec), on CLOCK_BOOTTIME."""
    with open("/proc/self/stat") as f:
        started = int(f.read().rsplit(")", 1)[1].split()[19])
    return time.clock_gettime(time.CLOCK_BOOTTIME) - started / os.sysconf("SC_CLK_TCK")


def run(torch, args, prof):
    """(truth, the profiler when one runs)."""
    warmup_start = time.monotonic()
    dec = Decoder(torch, args)
    total = args.warmup + args.cycles
    events = [[torch.cuda.Event(enable_timing=True) for _ in range(5)] for _ in range(total)]
    end = torch.cuda.Event(enable_timing=True)
    for ev in events:  # made now: an event is made at its first record
        for e in ev:
            e.record()
    for i in range(args.warmup):  # compile, capture, settle
        dec.cycle(events[i])
    torch.cuda.synchronize()
    warmup_s = time.monotonic() - warmup_start
    if args.turns:
        return take_turns(dec, args, events), None
    if args.ready_file:  # warmed up, graphs captured: a tracer may attach now
        open(args.ready_file, "w").close()
        time.sleep(args.ready_wait)
    profiler = start_profiler(torch) if prof == "late" else None
    gc.collect()
    ready_s = since_exec()
    tokens, starts, accepts = 0, [], []
    t0 = time.monotonic_ns()
    for i in range(args.warmup, total):
        starts.append(time.monotonic_ns())
        tokens += dec.cycle(events[i])
        accepts.append(time.monotonic_ns())
    end.record()
    torch.cuda.synchronize()
    t1 = time.monotonic_ns()
    timed = range(args.warmup, total)
    truth = {
        "program": "gpu_decoder", "pid": os.getpid(), "mode": args.mode, "k": args.k,
        "draft_setup": args.draft_setup,
        "spin_cycles": args.spin_cycles if args.mode == "split" and
        hasattr(torch.cuda, "_sleep") else 0,
        "sizes": {"hidden": args.hidden, "layers": args.layers, "vocab": args.vocab,
                  "draft_hidden": args.draft_hidden, "draft_layers": args.draft_layers},
        "warmup": args.warmup, "cycles": args.cycles, "tokens": tokens,
        "tokens_per_s": tokens / ((t1 - t0) / 1e9),
        "loop_start_ns": t0, "loop_end_ns": t1,
        "cycle_start_ns": starts, "accept_ns": accepts,
        "cycle_ns": [b - a for a, b in zip(starts, starts[1:] + [t1])],
        "gpu_ms": event_truth(events, end, timed),
        "startup_s": warmup_start - STARTED, "warmup_s": warmup_s, "since_exec_s": ready_s,
        "cudagraph_skips": cudagraph_skips(),
        "torch": torch.__version__, "device": torch.cuda.get_device_name(),
    }
    truth["mean_gpu_ms"] = {p: sum(v) / len(v) for p, v in truth["gpu_ms"].items()}
    if profiler is not None:
        profiler.stop()
    return truth, profiler


def wait_for(path, end=None, limit_s=600):
    """True once path exists; False if end does first."""
    deadline = time.monotonic() + limit_s
    while not os.path.exists(path):
        if end and os.path.exists(end):
            return False
        if time.monotonic() > deadline:
            sys.exit(f"gpu_decoder: {path} never came")
        time.sleep(0.001)
    return True


def take_turns(dec, args, events):
    """--turns: a round of timed cycles each time this arm is called (see the top)."""
    base = os.path.join(args.turns, args.arm)
    with open(base + ".ready", "w") as f:
        f.write(f"{os.getpid()}\n")
    rates = []
    for r in range(args.rounds):
        if not wait_for(os.path.join(args.turns, f"go.{r}.{args.arm}"),
                        os.path.join(args.turns, "end")):
            break
        gc.collect()
        tokens, starts = 0, []
        t0 = time.monotonic_ns()
        for i in range(args.warmup, args.warmup + args.cycles):
            starts.append(time.monotonic_ns())
            tokens += dec.cycle(events[i])
        t1 = time.monotonic_ns()
        rnd = {"round": r, "arm": args.arm, "pid": os.getpid(), "tokens": tokens,
               "tokens_per_s": tokens / ((t1 - t0) / 1e9),
               "cycle_ns": [b - a for a, b in zip(starts, starts[1:] + [t1])]}
        with open(f"{base}.{r}.json", "w") as f:
            json.dump(rnd, f)
        rates.append(rnd["tokens_per_s"])
        open(os.path.join(args.turns, f"done.{r}.{args.arm}"), "w").close()
    return {"program": "gpu_decoder", "pid": os.getpid(), "arm": args.arm,
            "rounds": len(rates), "tokens_per_s_rounds": rates,
            "tokens_per_s": statistics.fmean(rates) if rates else 0.0,
            "cudagraph_skips": cudagraph_skips()}


def start_profiler(torch):
    from torch.profiler import ProfilerActivity, profile
    profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    profiler.start()
    return profiler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="where the truth goes (JSON); else stdout")
    ap.add_argument("--cycles", type=int, default=300, help="timed cycles")
    ap.add_argument("--warmup", type=int, default=10, help="cycles before the timed ones")
    ap.add_argument("--mode", choices=("joined", "split"), default="joined",
                    help="split: a stream sync between draft and verify")
    ap.add_argument("--spin-cycles", type=int, default=400000,
                    help="split: GPU clock cycles of the spin after the sync (0: none)")
    ap.add_argument("--draft-setup", type=int, default=0, metavar="N",
                    help="begin each draft with N steps of Python, a scalar upload and an "
                    "eager op on the token (0: none)")
    ap.add_argument("--profiler", choices=("off", "early", "late"), default="off")
    ap.add_argument("--profile-table", help="the profiler's per-call counts, to this file")
    ap.add_argument("--turns", help="an A/B arm taking turns in this folder (see the top)")
    ap.add_argument("--arm", default="arm", help="--turns: this arm's name")
    ap.add_argument("--rounds", type=int, default=20, help="--turns: rounds to run")
    ap.add_argument("--ready-file", help="created after the warm-up, before the timed cycles")
    ap.add_argument("--ready-wait", type=float, default=0.0,
                    help="seconds to wait after --ready-file before the timed cycles")
    add_model_args(ap)
    args = ap.parse_args()
    if args.cycles < 1 or args.warmup < 3 or args.k < 1:
        ap.error("--cycles at least 1, --warmup at least 3 (record, then replay), --k at least 1")
    import torch

    early = start_profiler(torch) if args.profiler == "early" else None
    with torch.inference_mode():
        truth, profiler = run(torch, args, args.profiler)
    if early is not None:
        early.stop()
        profiler = early
    if profiler is not None and args.profile_table:
        with open(args.profile_table, "w") as f:
            f.write(profiler.key_averages().table(sort_by="count", row_limit=40))
    truth["profiler"] = args.profiler
    text = json.dumps(truth)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        print(text)
    if args.turns:
        print(f"gpu_decoder: arm {args.arm}, {truth['rounds']} rounds of {args.cycles} cycles, "
              f"{truth['tokens_per_s']:.1f} tokens/s on average; cudagraph skips "
              f"{truth['cudagraph_skips']}", file=sys.stderr, flush=True)
        return 0
    m = truth["mean_gpu_ms"]
    print(f"gpu_decoder: {args.cycles} cycles after {args.warmup}, "
          f"{truth['tokens_per_s']:.1f} tokens/s; GPU ms a cycle (events): draft "
          f"{m['draft']:.3f} verify {m['verify']:.3f} extend {m['extend']:.3f} cycle "
          f"{m['cycle']:.3f}; start-up {truth['startup_s']:.1f} s, warm-up "
          f"{truth['warmup_s']:.1f} s, timed cycles from {truth['since_exec_s']:.1f} s "
          f"after exec; cudagraph skips {truth['cudagraph_skips']}", file=sys.stderr,
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
