#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Paired tokens/s ratios of gpu_ab.sh's (or run_gpu.sh's) arms, with 95 % bootstrap intervals.

  ab_stats.py DIR [DIR...]   reads each DIR/rounds.jsonl, writes the summary to stdout
                             (and DIR/ab.json of the first DIR)

rounds.jsonl has one line per slot: {"round", "arm", "truth", "report"} (paths, relative
ones to DIR; report only for traced arms). The rounds of several DIRs (runs of the same
arms, e.g. on one machine in two calls) are pooled, each run's rounds kept apart.
Within a round every arm ran once, in an order rotated from round to round; the ratio
arm / untraced is taken per round, so slow phases of the machine cancel, and the rounds
are resampled (10 000 times) for the interval.
Where the truth has each cycle's time (cycle_ns), the same ratios are also taken of
each round's median cycle rate, which a few stalled cycles do not move, with the share
of cycles that took over twice the round's median (stalls) per arm.
"""
import json
import os
import random
import statistics
import sys


def bootstrap(ratios, reps=10000, seed=1):
    rng = random.Random(seed)
    n = len(ratios)
    means = sorted(statistics.fmean(rng.choices(ratios, k=n)) for _ in range(reps))
    return means[int(0.025 * reps)], means[int(0.975 * reps) - 1]


def overhead(report_path):
    """(entry us, return us, percent of the target's CPU) from a report --json."""
    try:
        with open(report_path) as f:
            so = json.load(f)["self_overhead"]
    except (OSError, ValueError, KeyError):
        return None
    if not so.get("calibrated"):
        return None
    pct = [p["percent_of_cpu"] for p in so["processes"] if p.get("percent_of_cpu") is not None]
    per_s = [p["entry_only_per_s"] + p["completion_per_s"] for p in so["processes"]]
    return (so["entry_ps"] / 1e6, so["return_ps"] / 1e6, max(pct) if pct else None,
            max(per_s) if per_s else None, so.get("stack_ps", 0) / 1e6)


def median_cycles(truth):
    """(median cycles/s, cycles over twice the median, cycles) of a round, or None."""
    ns = truth.get("cycle_ns")
    if not ns:
        return None
    med = statistics.median(ns)
    return 1e9 / med, sum(1 for x in ns if x > 2 * med), len(ns)


def print_median_ratios(arms, rounds, med):
    print("each round's median cycle rate, paired the same way:")
    print("| arm | ratio to untraced (mean of paired) | 95 % interval | sd of a round | stalls |")
    print("|---|---|---|---|---|")
    for arm in arms:
        stalls = sum(med[r, arm][1] for r in rounds if (r, arm) in med)
        cycles = sum(med[r, arm][2] for r in rounds if (r, arm) in med)
        share = f"{100 * stalls / cycles:.2f} %" if cycles else "-"
        ratios = [med[r, arm][0] / med[r, "untraced"][0] for r in rounds
                  if (r, arm) in med and (r, "untraced") in med]
        if arm == "untraced" or len(ratios) < 2:
            print(f"| {arm} | - | - | - | {share} |")
            continue
        lo, hi = bootstrap(ratios)
        print(f"| {arm} | {statistics.fmean(ratios):.4f} | {lo:.4f}-{hi:.4f} | "
              f"{statistics.stdev(ratios):.4f} | {share} |")


def read_slots(dirs):
    """Every slot of the runs in dirs, a round named (run, round)."""
    slots = []
    for run, d in enumerate(dirs):
        with open(f"{d}/rounds.jsonl") as f:
            for line in f:
                s = json.loads(line)
                s["round"] = (run, s["round"])
                for key in ("truth", "report", "flips"):
                    if s.get(key):
                        s[key] = os.path.join(d, s[key])
                slots.append(s)
    return slots


def main():
    if len(sys.argv) < 2:
        print("usage: ab_stats.py DIR [DIR...]", file=sys.stderr)
        return 2
    d = sys.argv[1]
    slots = read_slots(sys.argv[1:])
    tps, cost, med = {}, {}, {}
    for s in slots:
        try:
            with open(s["truth"]) as f:
                truth = json.load(f)
            tps[s["round"], s["arm"]] = truth["tokens_per_s"]
        except (OSError, ValueError, KeyError):
            continue
        m = median_cycles(truth)
        if m:
            med[s["round"], s["arm"]] = m
        if s.get("report"):
            o = overhead(s["report"])
            if o:
                cost.setdefault(s["arm"], []).append(o)
    arms = list(dict.fromkeys(s["arm"] for s in slots))
    rounds = sorted({r for r, _ in tps})
    out = {"rounds": len(rounds), "arms": {}}
    print(f"{len(rounds)} rounds, arms in rotated order: {', '.join(arms)}")
    print("| arm | tokens/s (median) | ratio to untraced (mean of paired) | 95 % interval | "
          "sd of a round | rounds |")
    print("|---|---|---|---|---|---|")
    for arm in arms:
        vals = [tps[r, arm] for r in rounds if (r, arm) in tps]
        if not vals:
            continue
        row = {"tokens_per_s_median": statistics.median(vals)}
        ratios = [tps[r, arm] / tps[r, "untraced"] for r in rounds
                  if (r, arm) in tps and (r, "untraced") in tps]
        if arm != "untraced" and len(ratios) >= 2:
            lo, hi = bootstrap(ratios)
            row.update(ratio=statistics.fmean(ratios), low=lo, high=hi, paired=len(ratios))
            print(f"| {arm} | {row['tokens_per_s_median']:.1f} | {row['ratio']:.4f} | "
                  f"{lo:.4f}-{hi:.4f} | {statistics.stdev(ratios):.4f} | {len(ratios)} |")
        else:
            print(f"| {arm} | {row['tokens_per_s_median']:.1f} | - | - | - | {len(vals)} |")
        out["arms"][arm] = row
    if med:
        print_median_ratios(arms, rounds, med)
    for arm, c in cost.items():
        entry = statistics.median(x[0] for x in c)
        ret = statistics.median(x[1] for x in c)
        pcts = [x[2] for x in c if x[2] is not None]
        rate = [x[3] for x in c if x[3] is not None]
        site = statistics.median(x[4] for x in c)
        out["arms"][arm].update(entry_us=entry, return_us=ret, site_us=site)
        line = (f"{arm}: report's calibration (median of {len(c)}): a probe hit {entry:.3f} us, "
                f"a return probe {ret:.3f} us more, a call site {site:.3f} us more")
        if rate:
            line += f"; {statistics.median(rate):,.0f} probed calls/s"
        if pcts:
            line += f"; {statistics.median(pcts):.2f} % of the target's CPU"
        print(line)
    with open(f"{d}/ab.json", "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
