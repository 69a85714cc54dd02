#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The sampled mode's cost against the bars of an eager and a CUDA-graph decoder.

  sample_cost.py OUTDIR NAME[:KIND] ...

Each OUTDIR/NAME/ab is a tools/bench/gpu_ab.sh run with the arms untraced, record,
record_sample and floor; KIND is eager (bar: record_sample >= 0.99 of untraced) or graph
(bars: record's ratio inside floor's 95 % interval, record_sample >= 0.998), eager by
default. Per run: every arm's paired ratio to untraced with its interval, record paired
with floor in the same rounds, the share of each sampled round that its windows covered
(from the report's sampling spans and the round's clock), and each bar's verdict: PASS
when the mean and the whole interval clear it, "PASS by the mean" when only the mean
does, FAIL otherwise. Exits 0 when it could read every run, whatever the verdicts.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab_stats import bootstrap, read_slots  # noqa: E402

BAR = {"eager": 0.99, "graph": 0.998}


def paired(slots, arm, base):
    """(mean, low, high, n) of arm / base tokens/s over the rounds holding both, or None."""
    tps = {}
    for s in slots:
        try:
            with open(s["truth"]) as f:
                tps[s["round"], s["arm"]] = json.load(f)["tokens_per_s"]
        except (OSError, ValueError, KeyError):
            continue
    ratios = [tps[r, arm] / tps[r, base] for r, a in tps if a == arm and (r, base) in tps]
    if len(ratios) < 2:
        return None
    lo, hi = bootstrap(ratios)
    return statistics.fmean(ratios), lo, hi, len(ratios)


def window_share(slot):
    """The share of a sampled round's own span that the recording's windows covered."""
    try:
        with open(slot["truth"]) as f:
            truth = json.load(f)
        with open(slot["report"]) as f:
            spans = json.load(f)["sampling"]["spans"]
        start, end = truth["loop_start_ns"], truth["loop_end_ns"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    inside = sum(max(0, min(b, end) - max(a, start)) for a, b in spans)
    return inside / (end - start) if end > start else None


def verdict(r, bar):
    if r is None:
        return "no figure (fewer than 2 paired rounds)"
    mean, lo, _, _ = r
    if lo >= bar:
        return f"PASS (mean and interval >= {bar})"
    if mean >= bar:
        return f"PASS by the mean only (>= {bar}; interval's low end {lo:.4f})"
    return f"FAIL (mean {mean:.4f} < {bar})"


def show(r):
    return "-" if r is None else f"{r[0]:.4f} [{r[1]:.4f}, {r[2]:.4f}] over {r[3]} rounds"


def one_run(out, name, kind):
    ab = os.path.join(out, name, "ab")
    slots = read_slots([ab])
    arms = list(dict.fromkeys(s["arm"] for s in slots))
    rounds = len({s["round"] for s in slots})
    print(f"== {name} ({kind} decoder): {rounds} rounds, arms {', '.join(arms)}")
    try:
        with open(os.path.join(ab, "decoder.cmd")) as f:
            print("   " + f.readline().strip())
    except OSError:
        pass
    ratio = {arm: paired(slots, arm, "untraced") for arm in arms if arm != "untraced"}
    for arm, r in ratio.items():
        print(f"   {arm:<14} / untraced  {show(r)}")
    rec_floor = paired(slots, "record", "floor")
    print(f"   {'record':<14} / floor     {show(rec_floor)}")
    shares = [w for w in (window_share(s) for s in slots
                          if s["arm"] == "record_sample" and s.get("report")) if w is not None]
    if shares:
        print(f"   sampled rounds' time inside windows: mean {100 * statistics.fmean(shares):.1f} %"
              f" (min {100 * min(shares):.1f}, max {100 * max(shares):.1f}, {len(shares)} rounds)")
    sampled = ratio.get("record_sample")
    print(f"   bar: record_sample >= {BAR[kind]} of untraced: {verdict(sampled, BAR[kind])}")
    if kind == "graph":
        rec, floor = ratio.get("record"), ratio.get("floor")
        if rec is None or floor is None:
            line = "no figure"
        elif floor[1] <= rec[0] <= floor[2]:
            line = f"PASS ({rec[0]:.4f} inside [{floor[1]:.4f}, {floor[2]:.4f}])"
        else:
            line = f"FAIL ({rec[0]:.4f} outside [{floor[1]:.4f}, {floor[2]:.4f}])"
        print(f"   bar: record within the interval of floor: {line}")


def main():
    if len(sys.argv) < 3:
        print("usage: sample_cost.py OUTDIR NAME[:eager|graph] ...", file=sys.stderr)
        return 2
    out, ok = sys.argv[1], True
    for arg in sys.argv[2:]:
        name, _, kind = arg.partition(":")
        kind = kind or "eager"
        if kind not in BAR:
            print(f"sample_cost.py: {arg}: kind must be eager or graph", file=sys.stderr)
            return 2
        try:
            one_run(out, name, kind)
        except (OSError, ValueError, KeyError) as e:
            print(f"== {name}: cannot read {os.path.join(out, name, 'ab')}: {e}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
