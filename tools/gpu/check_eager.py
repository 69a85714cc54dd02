#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Check `specprobe report --json` of eager_decoder.py against the decoder's own rounds.

  check_eager.py --report REPORT.json --truth TRUTH.json

The decoder's thread has one loop; every round holds exactly one reported cycle, whose
start (its first draft launch) lies between the round's start and its verify (host
times, CLOCK_MONOTONIC), and no cycle lies outside the rounds. The decoder makes no
avoidable sync, so a sync flagged inside the rounds is a false positive. Prints one line;
exit 1 on any mismatch.
"""
import argparse
import bisect
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--truth", required=True)
    a = ap.parse_args()
    rep = json.load(open(a.report))
    truth = json.load(open(a.truth))
    rounds = truth["per_round"]
    pid = truth["pid"]
    fails = []
    loops = [l for l in rep["loops"] if l["pid"] == pid]
    if len(loops) != 1:
        fails.append(f"{len(loops)} loops for pid {pid}, want 1")
    cycles = sorted((c for c in rep["cycles"] if c["pid"] == pid), key=lambda c: c["start_ns"])
    starts = [c["start_ns"] for c in cycles]
    matched = 0
    for i, r in enumerate(rounds):
        lo = bisect.bisect_left(starts, r["start"])
        hi = bisect.bisect_right(starts, r["verify"])
        if hi - lo != 1:
            fails.append(f"round {i} (k {r['k']}): {hi - lo} cycles start in "
                         f"[{r['start']}, {r['verify']}]")
        matched += hi - lo
    inside = sum(1 for s in starts if rounds and rounds[0]["start"] <= s <= rounds[-1]["end"])
    if inside != matched:
        fails.append(f"{inside - matched} cycles start inside the rounds but in no draft")
    verify = loops[0]["verify_from"] if loops else None
    in_rounds = [s for s in rep["syncs"] if s["pid"] == pid and rounds and
                 rounds[0]["start"] <= s["ts"] <= rounds[-1]["end"]]
    flagged = [s for s in in_rounds if s["flagged"]]
    for s in flagged[:5]:
        fails.append(f"false positive: {s['call']} at {s['ts']} flagged "
                     f"({s['position']}, {s.get('call_site')})")
    if len(flagged) > 5:
        fails.append(f"{len(flagged) - 5} more false positives")
    verdicts = {}
    for s in in_rounds:
        if s["is_sync"]:
            verdicts[s["verdict"]] = verdicts.get(s["verdict"], 0) + 1
    for f in fails[:20]:
        print("  FAIL:", f)
    print(f"  {len(rounds)} rounds, {len(cycles)} cycles reported ({matched} matched, "
          f"verify_from {verify}), syncs in the rounds {verdicts}, {len(flagged)} flagged, "
          f"{len(fails)} mismatches")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
