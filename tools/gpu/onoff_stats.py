#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""specprobe's own work against the trap, from tools/bench/gpu_onoff.sh's rounds.

  onoff_stats.py DIR       reads DIR/rounds.jsonl, writes the summary to stdout

Each line of rounds.jsonl names an arm, the decoder's truth (loop_start_ns and every
cycle's time, CLOCK_MONOTONIC) and the flips tools/bench/onoff printed ("on|off NS"),
or trapfloor -t ("x NS" too: attaching or detaching, a stretch left out). For the floor
arm "off" is nothing attached, so its ratio is the trap's own cost.
A cycle belongs to the period it ran in; one that spans a flip is left out. Every
"on" period is paired with the "off" periods on either side of it: the ratio is their
mean cycle time over its own, so it reads as tokens/s traced over tokens/s at the
floor (the trap and one load). The pairs are resampled 10 000 times for the interval.
"""
import bisect
import json
import statistics
import sys

from ab_stats import bootstrap

MIN_CYCLES = 5  # a period with fewer whole cycles is left out


def periods(truth, flips):
    """[(state, [cycle ns...])], one per stretch between two flips, in time order."""
    times = [t for _, t in flips]
    per = [(state, []) for state, _ in flips]
    end = truth["loop_start_ns"]
    for ns in truth["cycle_ns"]:
        begin, end = end, end + ns
        f = bisect.bisect_right(times, begin)
        if f and bisect.bisect_left(times, end) == f:  # ran within one stretch
            per[f - 1][1].append(ns)
    return per


def paired(per):
    """ratios t_off / t_on, by mean and by median, for each on period between two offs."""
    by_mean, by_median = [], []
    per = [p for p in per if p[0] != "x"]  # attaching or detaching: neither state
    for i in range(1, len(per) - 1):
        (sa, a), (s, on), (sb, b) = per[i - 1], per[i], per[i + 1]
        if s != "on" or sa != "off" or sb != "off":
            continue
        if min(len(a), len(on), len(b)) < MIN_CYCLES:
            continue
        off = a + b
        by_mean.append(statistics.fmean(off) / statistics.fmean(on))
        by_median.append(statistics.median(off) / statistics.median(on))
    return by_mean, by_median


def read_flips(path):
    flips = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and parts[0] in ("on", "off", "x"):
                flips.append((parts[0], int(parts[1])))
    return flips


def read_extras(path, progs, prof):
    """Adds onoff -s's "prog" sums to progs[name] and a profiling build's "prof" to prof."""
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts[:1] == ["prog"] and len(parts) == 6:
                sums = progs.setdefault(parts[1], [0, 0, 0, 0])
                for i in range(4):
                    sums[i] += int(parts[2 + i])
            elif parts[:1] == ["prof"]:
                vals = [int(x) for x in parts[1:]]
                prof[:] = [a + b for a, b in zip(prof, vals)] if prof else vals


def print_extras(order, extras):
    lines = []
    for arm in order:
        progs, prof = extras[arm]
        for name, (on_n, on_ns, off_n, off_ns) in sorted(progs.items()):
            if on_n and off_n:
                lines.append(f"  {arm} {name}: {on_ns / on_n:.0f} ns a run on ({on_n} runs), "
                             f"{off_ns / off_n:.0f} ns off ({off_n})")
        if prof and prof[0]:
            n = prof[0]
            lines.append(f"  {arm} stacks: {n} stack hits ({prof[5]} repeated sites); ns a hit: "
                         f"native key {prof[1] / n:.0f}, Python key {prof[2] / n:.0f}, "
                         f"seen lookup {prof[3] / n:.0f}, repeated record "
                         f"{prof[4] / max(prof[5], 1):.0f}")
    if lines:
        print("inside the programs (kernel BPF statistics; the statistics add two clock reads):")
        print("\n".join(lines))


def main():
    d = sys.argv[1]
    arms, order, extras = {}, [], {}
    with open(f"{d}/rounds.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if not r.get("flips"):
                continue
            with open(r["truth"]) as t:
                truth = json.load(t)
            m, md = paired(periods(truth, read_flips(r["flips"])))
            if r["arm"] not in arms:
                arms[r["arm"]] = ([], [], [])
                extras[r["arm"]] = ({}, [])
                order.append(r["arm"])
            read_extras(r["flips"], *extras[r["arm"]])
            arms[r["arm"]][0].extend(m)
            arms[r["arm"]][1].extend(md)
            arms[r["arm"]][2].append(statistics.fmean(m) if m else float("nan"))
    print("tokens/s with specprobe's programs on, over the same tracer's floor (bit off;")
    print("floor: the trap attached, over nothing attached), each on period against the")
    print("off periods beside it:")
    print("| arm | ratio (mean cycle) | 95 % interval | ratio (median cycle) | 95 % interval "
          "| pairs | per round |")
    print("|---|---|---|---|---|---|---|")
    for arm in order:
        m, md, rounds = arms[arm]
        if not m:
            print(f"| {arm} | - | - | - | - | 0 | - |")
            continue
        lo, hi = bootstrap(m)
        mlo, mhi = bootstrap(md)
        per_round = ", ".join(f"{x:.4f}" for x in rounds)
        print(f"| {arm} | {statistics.fmean(m):.4f} | {lo:.4f}-{hi:.4f} | "
              f"{statistics.fmean(md):.4f} | {mlo:.4f}-{mhi:.4f} | {len(m)} | {per_round} |")
    print_extras(order, extras)
    return 0


if __name__ == "__main__":
    sys.exit(main())
