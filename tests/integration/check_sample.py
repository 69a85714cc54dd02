#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Judges a --sample reading against the full reading of the same run.

  check_sample.py FULL.json SAMPLED.json [--syncs]

FULL is `report --json` of a recording with every launch, SAMPLED of the same recording
with launches only inside windows (record --sample, or tools/sample/sample_cut). The full
reading is the truth here (its own exactness is checked elsewhere against the program's):
- every cycle SAMPLED counts equals a FULL cycle: start, end and each phase's bounds;
- every FULL cycle that a window holds whole, with the verify before it and the next
  cycle's verify inside the same window (what tells where it starts and ends), is
  counted (no miss);
- SAMPLED says what it saw: sampling.cycles_whole is the number of cycles it lists, and
  every listed cycle lies inside one of sampling.spans;
- --syncs: every sync is seen (sync calls equal), and the flagged count is within the
  syncs whose site no window saw.
Prints a line of figures; exits 0 only when all hold.
"""
import json
import sys

PHASES = ("draft", "verify", "accept", "extend")


def key(c):
    return (c["pid"], c["tid"], c["start_ns"])


def bounds(c):
    return (c["end_ns"],) + tuple((c["phases"][p]["start_ns"], c["phases"][p]["end_ns"])
                                  for p in PHASES)


def window_of(spans, a, b):
    for i, (lo, hi) in enumerate(spans):
        if lo <= a and b <= hi:
            return i
    return None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        print("usage: check_sample.py FULL.json SAMPLED.json [--syncs]", file=sys.stderr)
        return 2
    full, samp = (json.load(open(p)) for p in args)
    s = samp.get("sampling")
    if not s or not s.get("spans"):
        print("check_sample: the sampled report says nothing of its windows")
        return 1
    spans = s["spans"]
    bad = []
    truth = {key(c): c for c in full["cycles"]}
    seen = set()
    for c in samp["cycles"]:
        t = truth.get(key(c))
        if t is None or bounds(t) != bounds(c):
            bad.append(f"cycle at {c['start_ns']} is not the full reading's")
        if window_of(spans, c["start_ns"], c["end_ns"]) is None:
            bad.append(f"cycle at {c['start_ns']} is not inside a window")
        seen.add(key(c))
    if s["cycles_whole"] != len(samp["cycles"]):
        bad.append(f"cycles_whole {s['cycles_whole']} but {len(samp['cycles'])} listed")
    # the full cycles a window held whole, the verify before them inside it too
    by_thread = {}
    for c in sorted(full["cycles"], key=key):
        by_thread.setdefault((c["pid"], c["tid"]), []).append(c)
    expected = missed = 0
    for cs in by_thread.values():
        for prev, c, nxt in zip(cs, cs[1:], cs[2:]):
            w = window_of(spans, prev["phases"]["verify"]["start_ns"],
                          nxt["phases"]["verify"]["end_ns"])
            if w is None:
                continue
            expected += 1
            if key(c) not in seen:
                missed += 1
                bad.append(f"whole cycle at {c['start_ns']} in window {w} not counted")
    line = (f"sampled: {len(samp['cycles'])} cycles in {len(spans)} windows, all equal to the "
            f"full reading's: {not any('not the full' in b for b in bad)}; "
            f"{expected} whole with the verifies around them, {missed} missed; "
            f"full run {len(full['cycles'])} cycles, scaled estimate {s['cycles_scaled']}")
    if "--syncs" in sys.argv:
        unseen = s.get("syncs_unseen_site", 0)
        line += (f"; syncs {samp['sync_calls']}/{full['sync_calls']}, flagged "
                 f"{samp['flagged_syncs']}/{full['flagged_syncs']}, "
                 f"{s.get('syncs_by_site', 0)} by site, {unseen} unseen")
        if samp["sync_calls"] != full["sync_calls"]:
            bad.append("not every sync was seen")
        if abs(samp["flagged_syncs"] - full["flagged_syncs"]) > unseen:
            bad.append("flagged syncs differ by more than the unseen sites")
    print(line)
    for b in bad[:10]:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
