#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Check `specprobe diff --json` against the simulated server's ground truth.

  check_diff.py --diff DIFF.json --a DIR [DIR...] --b DIR [--truth-shows slower|faster]

Each DIR holds one run: report.json (`report --json` of its recording) and gt.rank* (the
server's truth); the first --a DIR is diff's A, the others its --also-a. The truth's cycle
times are the cycles the report counted (matched by their first draft launch), each from
the middle of its start call's bracket to the middle of its end call's (cycle_bounds lines
where the server writes them, else the call lines, as check_report.py).

The expected answer comes from the truth of these very runs, never from what the machine's
noise is assumed to be: diff's p50s (each recording's and each side's) equal the truth's
within the bracket widths; its noise floor is the floor its rule gives on the truth's cycle
times; the 95% interval of the p50 change holds the truth's change; and the verdict is
"significant" exactly when the truth's change clears that floor (and the interval, which
holds the truth's change, leaves out 0), in the truth's direction.
Within what diff's change and floor differ from the truth's (at most the bracket error),
either verdict is right. --truth-shows: the truth
itself has B slower (or faster): a planted change is there to be found.

The one verdict of all rows (docs/diff-json.md, "One verdict") follows from its rows by the
rule, its p50 row is cycle_time's verdict, the truth's mean change lies in the mean's
interval, and where the truth's mean cycle time moved by more than twice the floor and
that interval leaves out 0 it is significant in the truth's direction: a throughput that
fell that much is never below the noise floor. --planted a|b: that side's server planted a
sync (tag planted-sync); flagged_sites has its call site (a planting function), flagged
there as often as the truth's planted syncs that blocked 100 us or more at least and as
all of them at most, never on the other side, with blocked time per cycle at most the
truth's planted syncs' brackets over the cycles counted.
"""
import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_report import bounds_cycles, inside, load_truth, truth_cycles  # noqa: E402

# diff's noise floor (user/analysis/stats.c): the largest of 3 % of A's p50, a quarter of
# the mean interquartile range and twice the between-run spread of the p50s
FLOOR_REL, FLOOR_IQR, FLOOR_RUNS = 0.03, 0.25, 2


def mid(ref):
    return (ref["before"] + ref["after"]) / 2


def nearest_rank(values, pct):
    v = sorted(values)
    rank = (len(v) * pct + 99) // 100
    return v[max(rank, 1) - 1]


def truth_durations(run):
    """Truth durations of the report's counted cycles of run DIR, and the widest bracket
    error of one duration."""
    report = json.load(open(os.path.join(run, "report.json")))
    durations, err = [], 0
    for r in load_truth(sorted(glob.glob(os.path.join(run, "gt.rank*")))):
        cycles = bounds_cycles(r) if r["bounds"] else truth_cycles(r, True)
        for c in (c for c in report["cycles"] if c["pid"] == r["pid"]):
            t = next((t for t in cycles if inside(c["start_ns"], t["start"])), None)
            if t is None or not inside(c["end_ns"], t["end"]):
                sys.exit(f"  FAIL: cycle at {c['start_ns']} of pid {r['pid']} not in the truth")
            durations.append(mid(t["end"]) - mid(t["start"]))
            err = max(err, sum(x["after"] - x["before"] for x in (t["start"], t["end"])))
    return durations, err


def iqr(values):
    return nearest_rank(values, 75) - nearest_rank(values, 25)


ORDER = ("tokens/s", "p50", "mean", "cycles/s")


def check_verdict(whole, pooled, floor, err):
    """The one verdict: its rule on its rows, and the truth's mean where it moved far."""
    v, rows, bad = whole["verdict"], whole["verdict"]["rows"], []
    sig = [r for r in ORDER if r in rows and rows[r]["verdict"] == "significant"]
    dirs = {rows[r]["direction"] for r in sig}
    want = ("significant" if sig else "below-noise-floor"
            if any(r["verdict"] == "below-noise-floor" for r in rows.values())
            else "not-significant")
    if v["verdict"] != want or v["mixed"] != (len(dirs) > 1):
        bad.append(f"verdict {v['verdict']} (mixed {v['mixed']}), its rows give {want}")
    if sig and len(dirs) == 1 and (v["by"] != sig[0] or v["direction"] != dirs.pop()):
        bad.append(f"verdict by {v['by']} {v['direction']}, the rows: {sig}")
    if rows["p50"]["verdict"] != whole["cycle_time"]["verdict"]:
        bad.append(f"p50 row {rows['p50']['verdict']}, cycle_time {whole['cycle_time']['verdict']}")
    mean = {s: sum(pooled[s]) / len(pooled[s]) for s in pooled}
    change = mean["b"] - mean["a"]
    lo, hi = whole["cycle_time"]["mean_ci_ns"]
    if not lo - 2 * err <= change <= hi + 2 * err:
        bad.append(f"the truth's mean change {change:.0f} ns outside [{lo}, {hi}] (+-{2 * err})")
    # one stalled cycle moves the mean and widens its interval to hold 0: then no verdict
    if abs(change) > 2 * floor + 4 * err and not lo <= 0 <= hi and "tokens/s" not in rows:
        direction = "slower" if change > 0 else "faster"
        if v["verdict"] != "significant" or v["direction"] != direction:
            bad.append(f"the truth's mean moved {change:+.0f} ns, over twice the floor "
                       f"{floor:.0f} ns, yet {v['verdict']} {v['direction']}")
    return bad


def check_sites(whole, planted_dir, side):
    """The planted sync's call site, flagged on the planted side only, as the truth has it."""
    truth = [json.loads(l) for f in glob.glob(os.path.join(planted_dir, "gt.rank*"))
             for l in open(f) if '"planted-sync"' in l]
    calls = [c for c in truth if "before" in c]
    waited = sum(1 for c in calls if c["after"] - c["before"] >= 100000)
    cycles = len(json.load(open(os.path.join(planted_dir, "report.json")))["cycles"])
    other = "a" if side == "b" else "b"
    sites = [s for s in whole["flagged_sites"] or [] if "plant" in s["call_site"]]
    if len(sites) != 1:
        return [f"{len(sites)} flagged sites at a planting function: "
                f"{[s['call_site'] for s in whole['flagged_sites'] or []]}"]
    s, bad = sites[0], []
    if not waited <= s["count"][side] <= len(calls) or s["count"][other]:
        bad.append(f"{s['call_site']}: flagged {s['count']}, truth {len(calls)} planted on "
                   f"{side}, {waited} of them blocked")
    most = sum(c["after"] - c["before"] for c in calls) / cycles
    if not 0 < s["blocked_ns_per_cycle"][side] <= most + 1:
        bad.append(f"{s['call_site']}: {s['blocked_ns_per_cycle'][side]} ns blocked a cycle, "
                   f"the truth's brackets {most:.0f}")
    if not bad:
        print(f"flagged at {s['call_site']}: A {s['count']['a']}, B {s['count']['b']} "
              f"(truth {len(calls)} planted on {side}, {waited} blocked)")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--diff", required=True)
    ap.add_argument("--a", nargs="+", required=True)
    ap.add_argument("--b", nargs=1, required=True)
    ap.add_argument("--truth-shows", choices=("slower", "faster"))
    ap.add_argument("--planted", choices=("a", "b"))
    a = ap.parse_args()
    whole = json.load(open(a.diff))
    diff = whole["cycle_time"]
    failures, err, pooled, p50s = [], 0, {"a": [], "b": []}, {"a": [], "b": []}
    for side, runs in (("a", a.a), ("b", a.b)):
        got_runs = whole.get("recordings", {}).get(side) or [{"p50_ns": None}]
        for i, run in enumerate(runs):
            durations, e = truth_durations(run)
            err = max(err, e)
            pooled[side] += durations
            p50s[side].append(nearest_rank(durations, 50))
            got = got_runs[i]["p50_ns"] if i < len(got_runs) else None
            if len(runs) > 1 and (got is None or abs(got - p50s[side][-1]) > e):
                failures.append(f"p50 of {run}: {got} ns, truth {p50s[side][-1]} ns (+-{e})")
    # pooled medians, IQRs and the p50 spread move by at most err each when every
    # duration does; the change by 2 err, the floor by 4 err at most
    truth = {s: nearest_rank(pooled[s], 50) for s in pooled}
    for side in truth:
        if abs(diff["p50_ns"][side] - truth[side]) > err:
            failures.append(f"p50 of {side}: {diff['p50_ns'][side]} ns, truth {truth[side]} ns "
                            f"(+-{err})")
    spread = max(max(p) - min(p) for p in p50s.values())
    floor = max(FLOOR_REL * truth["a"], FLOOR_IQR * (iqr(pooled["a"]) + iqr(pooled["b"])) / 2,
                FLOOR_RUNS * spread)
    if abs(diff["noise_floor_ns"] - floor) > 4 * err:
        failures.append(f"noise floor {diff['noise_floor_ns']} ns, the truth's {floor:.0f} ns")
    change = truth["b"] - truth["a"]
    lo, hi = diff["p50_ci_ns"]
    if not lo - 2 * err <= change <= hi + 2 * err:
        failures.append(f"truth's p50 change {change:.0f} ns outside [{lo}, {hi}] (+-{2 * err})")
    # the verdict's rule on diff's own figures, which are the truth's within what they were
    # just seen to differ by (at most the bracket errors above)
    band = abs(diff["p50_ns"]["change"] - change) + abs(diff["noise_floor_ns"] - floor) + 1
    direction = "slower" if change > 0 else "faster"
    zero_in = lo <= 0 <= hi  # the interval is diff's, and was just seen to hold the truth
    if abs(change) > floor + band and zero_in:
        if diff["significant"]:
            failures.append(f"0 in the interval, yet {diff['verdict']}")
        expected = "not significant (0 in the interval)"
    elif abs(change) > floor + band:
        if not diff["significant"] or diff["direction"] != direction:
            failures.append(f"the truth's change {change:+.0f} ns clears the floor "
                            f"{floor:.0f} ns, yet {diff['verdict']}, {diff['direction']}")
        expected = f"significant, {direction}"
    elif abs(change) < floor - band:
        if diff["significant"]:
            failures.append(f"the truth's change {change:+.0f} ns is within the floor "
                            f"{floor:.0f} ns, yet {diff['verdict']}")
        expected = "not significant"
    else:
        expected = "either (at the floor)"
    if a.truth_shows and direction != a.truth_shows:
        failures.append(f"the truth does not show B {a.truth_shows}: change {change:+.0f} ns")
    failures += check_verdict(whole, pooled, floor, err)
    if a.planted:
        failures += check_sites(whole, a.a[0] if a.planted == "a" else a.b[0], a.planted)
    for f in failures:
        print("  FAIL:", f)
    print(f"verdict of all rows: {whole['verdict']['verdict']} {whole['verdict']['direction']}"
          f" by {whole['verdict']['by']}; " + ", ".join(
              f"{k} {v['change_rel'] * 100:+.1f} % {v['verdict']}"
              for k, v in whole["verdict"]["rows"].items()))
    print(f"truth p50 {truth['a'] / 1e6:.3f} -> {truth['b'] / 1e6:.3f} ms, change "
          f"{change / 1e6:+.3f} ms, floor {floor / 1e6:.3f} ms, interval "
          f"[{lo / 1e6:+.3f}, {hi / 1e6:+.3f}] ms: {diff['verdict']} (truth: {expected})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
