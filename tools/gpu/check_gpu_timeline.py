#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Check specprobe's GPU phase times against gpu_decoder.py's event-timed truth.

  check_gpu_timeline.py TRUTH.json REPORT.json           fidelity
  check_gpu_timeline.py --host-only REPORT.json [TRUTH.json]
                                                         a report that carried on host-only

Fidelity: the report's cycles (`cycles[]`, warm-up ones included) are lined up with the
decoder's timed cycles by time: a report cycle belongs to the timed cycle whose host
window (before its first draft call .. after its accept returned, CLOCK_MONOTONIC like the
recording) holds its start. Where none does (cycles read otherwise), the last ones are
paired by count from the end, and the table says so. Over the cycles paired that have
GPU figures, each phase's mean GPU time (`cycles[].gpu.phases.<phase>`) is set beside the
mean of the events' figures over the same cycles: the span (end - start), which is what a
pair of events on the stream measures, decides; busy (the union of the phase's
executions) is shown beside it. A phase passes when its mean span is within 2 % of the
events' mean cycle time (one draft start to the next). Exit 0 when every phase passes.
--host-only: the report has cycles and no cycle has GPU figures (and, given the truth,
it covers the decoder's timed cycles).
"""
import argparse
import bisect
import json
import statistics
import sys

PHASES = ("draft", "verify", "extend")
TOLERANCE = 0.02


def load(path):
    with open(path) as f:
        return json.load(f)


def own_cycles(report, truth):
    """The report's cycles of the decoder's process, in time order."""
    cycles = report.get("cycles") or []
    pid = truth.get("pid") if truth else None
    if pid is not None and any(c.get("pid") == pid for c in cycles):
        cycles = [c for c in cycles if c.get("pid") == pid]
    return sorted(cycles, key=lambda c: c["start_ns"])


def align(truth, cycles):
    """([(timed index, report cycle)], how): by host window, else by count from the end."""
    starts = [c["start_ns"] for c in cycles]
    pairs = []
    for i, (lo, hi) in enumerate(zip(truth.get("cycle_start_ns", []), truth.get("accept_ns", []))):
        j = bisect.bisect_left(starts, lo)
        if j < len(starts) and starts[j] <= hi:
            pairs.append((i, cycles[j]))
    if pairs:
        return pairs, "time"
    n = min(truth["cycles"], len(cycles))
    return list(zip(range(truth["cycles"] - n, truth["cycles"]), cycles[len(cycles) - n:])), \
        "count from the end"


def phase_figures(cycle, phase):
    """(span ns, busy ns) of a report cycle's phase on the GPU, or None."""
    gpu = cycle.get("gpu")
    p = ((gpu or {}).get("phases") or {}).get(phase)
    if not p or p.get("start_ns") is None or p.get("end_ns") is None:
        return None
    return p["end_ns"] - p["start_ns"], p.get("busy_ns")


def summary_busy(report, phase):
    p = (((report.get("summary") or {}).get("gpu") or {}).get("phases") or {}).get(phase)
    return p.get("busy_ns") if p else None


def fmt(ms):
    return "-" if ms is None else f"{ms:.3f}"


def fidelity(truth, report):
    cycles = own_cycles(report, truth)
    pairs, how = align(truth, cycles)
    with_gpu = [(i, c) for i, c in pairs if c.get("gpu")]
    ev = truth["gpu_ms"]
    print(f"timed cycles {truth['cycles']} (after {truth['warmup']} warm-up), report cycles "
          f"{len(cycles)}; paired {len(pairs)} by {how}, {len(with_gpu)} with GPU figures")
    gpu = report.get("gpu")
    if isinstance(gpu, dict):
        print("report gpu: " + ", ".join(f"{k} {v}" for k, v in gpu.items()
                                         if isinstance(v, (int, float, str)) or v is None))
    if not with_gpu:
        print("FAIL no paired cycle has GPU figures (cycles[].gpu): recorded with --gpu?")
        return False
    if len(with_gpu) < 0.9 * truth["cycles"]:
        print(f"MISS only {len(with_gpu)} of {truth['cycles']} timed cycles have GPU figures")
    idx = [i for i, _ in with_gpu]
    cycle_ms = statistics.fmean(ev["cycle"][i] for i in idx)
    limit = TOLERANCE * cycle_ms
    print(f"events' mean cycle {cycle_ms:.3f} ms over those cycles; limit "
          f"{100 * TOLERANCE:.0f} % of it: {limit:.3f} ms")
    print(f"{'phase':8} {'events':>8} {'span':>8} {'diff':>8} {'busy':>8} {'diff':>8} "
          f"{'all busy':>8} {'worst':>8}  verdict")
    ok = True
    for phase in PHASES:
        got = [(i, phase_figures(c, phase)) for i, c in with_gpu]
        got = [(i, f) for i, f in got if f is not None]
        if not got:
            print(f"{phase:8} {'':>8} {'-':>8}  FAIL: no cycle has its GPU span")
            ok = False
            continue
        want = statistics.fmean(ev[phase][i] for i, _ in got)
        span = statistics.fmean(f[0] for _, f in got) / 1e6
        busy_v = [f[1] for _, f in got if f[1] is not None]
        busy = statistics.fmean(busy_v) / 1e6 if busy_v else None
        worst = max(abs(f[0] / 1e6 - ev[phase][i]) for i, f in got)
        all_busy = summary_busy(report, phase)
        passed = abs(span - want) <= limit
        ok &= passed
        verdict = "PASS" if passed else "FAIL"
        if len(got) < len(with_gpu):
            verdict += f" ({len(got)} of {len(with_gpu)} cycles have it)"
        print(f"{phase:8} {want:8.3f} {span:8.3f} {span - want:+8.3f} {fmt(busy):>8} "
              f"{'-' if busy is None else f'{busy - want:+8.3f}':>8} "
              f"{fmt(None if all_busy is None else all_busy / 1e6):>8} {worst:8.3f}  {verdict}")
    print("ms a cycle; events: the truth's mean over the paired cycles; span: end - start "
          "(decides); busy: union of the phase's executions; all busy: the report's "
          "summary, warm-up cycles included; worst: largest per-cycle |span - events|")
    return ok


def host_only(report, truth):
    cycles = own_cycles(report, truth)
    gpu_cycles = sum(1 for c in cycles if c.get("gpu"))
    ok = bool(cycles) and gpu_cycles == 0
    what = f"report cycles {len(cycles)}, with GPU figures {gpu_cycles}"
    if truth:
        pairs, how = align(truth, cycles)
        covered = how == "time" and len(pairs) >= truth["cycles"] - 1
        ok &= covered
        what += f"; timed cycles {truth['cycles']}, paired {len(pairs)} by {how}"
    print(("PASS" if ok else "FAIL") + f" host-only: {what}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host-only", action="store_true")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    try:
        if args.host_only:
            report = load(args.files[0])
            truth = load(args.files[1]) if len(args.files) > 1 else None
            return 0 if host_only(report, truth) else 1
        if len(args.files) != 2:
            ap.error("TRUTH.json REPORT.json")
        truth, report = load(args.files[0]), load(args.files[1])
        return 0 if fidelity(truth, report) else 1
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"check_gpu_timeline: cannot read the input: {e!r}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
