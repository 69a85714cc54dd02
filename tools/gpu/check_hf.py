#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Compares a `specprobe report --json` with a tools/gpu/hf_assist.py truth, per timed round.

  check_hf.py TRUTH.json REPORT.json

Recording and truth share CLOCK_MONOTONIC: the cycles whose start lies inside a round's
[start_ns, end_ns] must be that round's `cycles`, and each must line up with one
get_candidates call, taken in order: the call's midpoint after the previous cycle's verify
began and no later than this cycle's verify's start (the call drafts for that verify; a
cycle starts at the draft's first launch, a little after its call starts, and the last
round's call, which drafts nothing, ends just before its cycle). Cycles before
the first round (a warm-up generate() recorded under `record -- CMD`) are not judged.
Prints one line per round and exits 0 only when every round reads exactly.
"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        print("usage: check_hf.py TRUTH.json REPORT.json", file=sys.stderr)
        return 2
    try:
        truth = json.load(open(sys.argv[1]))
        report = json.load(open(sys.argv[2]))
        rounds = truth["rounds"]
        cycles = sorted((c["start_ns"], c["end_ns"], c["phases"]["verify"]["start_ns"])
                        for c in report["cycles"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"check_hf: cannot read the truth or the report: {e}", file=sys.stderr)
        return 2
    ok = True
    for i, r in enumerate(rounds):
        inside = [c for c in cycles if r["start_ns"] <= c[0] <= r["end_ns"]]
        mids = sorted((s + e) // 2 for s, e in r["get_candidates_ns"])
        off = 0
        for k, (c, m) in enumerate(zip(inside, mids)):
            lo = inside[k - 1][2] if k else r["start_ns"]
            off += not lo < m <= c[2]
        good = len(inside) == r["cycles"] and off == 0
        ok = ok and good
        print("%s round %d: %d cycles, truth %d; calls not lined up with their cycle %d"
              % ("PASS" if good else "FAIL", i, len(inside), r["cycles"], off))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
