#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Check `specprobe diff --json` against the simulated server's ground truth.

  check_diff.py --diff DIFF.json --report-a A.json --report-b B.json \
      --truth-a A_TRUTH... --truth-b B_TRUTH... [--expect same|slower|faster]

The truth's cycle times are the cycles the report counted (matched by their first draft
launch), each from the middle of its start call's bracket to the middle of its end call's
(cycle_bounds lines where the server writes them, else the call lines, as check_report.py).
Checks: the diff's p50 of A and of B equal the truth's within the bracket widths; the 95%
interval of the p50 change holds the truth's change; the verdict is as expected.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_report import bounds_cycles, inside, load_truth, truth_cycles  # noqa: E402


def mid(ref):
    return (ref["before"] + ref["after"]) / 2


def nearest_rank(values, pct):
    v = sorted(values)
    rank = (len(v) * pct + 99) // 100
    return v[max(rank, 1) - 1]


def truth_durations(report, truth_paths):
    """Truth durations of the report's counted cycles, and the widest bracket error."""
    durations, err = [], 0
    for r in load_truth(truth_paths):
        cycles = bounds_cycles(r) if r["bounds"] else truth_cycles(r, True)
        for c in (c for c in report["cycles"] if c["pid"] == r["pid"]):
            t = next((t for t in cycles if inside(c["start_ns"], t["start"])), None)
            if t is None or not inside(c["end_ns"], t["end"]):
                sys.exit(f"  FAIL: cycle at {c['start_ns']} of pid {r['pid']} not in the truth")
            durations.append(mid(t["end"]) - mid(t["start"]))
            err = max(err, sum(x["after"] - x["before"] for x in (t["start"], t["end"])))
    return durations, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--diff", required=True)
    ap.add_argument("--report-a", required=True)
    ap.add_argument("--report-b", required=True)
    ap.add_argument("--truth-a", nargs="+", required=True)
    ap.add_argument("--truth-b", nargs="+", required=True)
    ap.add_argument("--expect", choices=("same", "slower", "faster"), required=True)
    a = ap.parse_args()
    diff = json.load(open(a.diff))["cycle_time"]
    failures = []
    truth = {}
    for side, rep, paths in (("a", a.report_a, a.truth_a), ("b", a.report_b, a.truth_b)):
        durations, err = truth_durations(json.load(open(rep)), paths)
        truth[side] = nearest_rank(durations, 50)
        got = diff["p50_ns"][side]
        if abs(got - truth[side]) > err:
            failures.append(f"p50 of {side}: {got} ns, truth {truth[side]} ns (+-{err})")
    change = truth["b"] - truth["a"]
    lo, hi = diff["p50_ci_ns"]
    if not lo <= change <= hi:
        failures.append(f"truth's p50 change {change:.0f} ns outside [{lo}, {hi}]")
    if a.expect == "same" and diff["significant"]:
        failures.append(f"same setting, yet {diff['verdict']}: change {change:.0f} ns")
    if a.expect != "same" and (not diff["significant"] or diff["direction"] != a.expect):
        failures.append(f"expected significant and {a.expect}, got {diff['verdict']}, "
                        f"{diff['direction']}")
    for f in failures:
        print("  FAIL:", f)
    print(f"  truth p50 {truth['a']:.0f} -> {truth['b']:.0f} ns, change {change:+.0f} ns; "
          f"interval [{lo:+.0f}, {hi:+.0f}]; {diff['verdict']}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
