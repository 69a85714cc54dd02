#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Judges a --sample reading against the full reading of the same run.

  check_sample.py FULL.json SAMPLED.json [--syncs]

FULL is `report --json` of a recording with every launch, SAMPLED of the same recording
with launches only inside windows (record --sample, or tools/sample/sample_cut). The full
reading is the truth here (its own exactness is checked elsewhere against the program's):
- every cycle SAMPLED counts equals a FULL cycle: start, end and each phase's bounds;
- every FULL cycle that a window holds whole from the verify two cycles before it to the
  next cycle's verify is counted (no miss): a window that opens on a launch may have cut
  that launch's forward, which is then no forward at all, and so may hold the cycle
  before it only in part; the next verify tells where the cycle ends;
- SAMPLED says what it saw: sampling.cycles_whole is the number of cycles it lists, and
  every listed cycle lies inside one of sampling.spans;
- --syncs: every sync is seen (sync calls equal, but for launches that waited outside the
  windows, which were not probed; async copies into host memory, whose wait tells whether
  they synchronised, within 1 %), and the flagged count is within the syncs whose site no
  window saw.
Prints a line of figures; exits 0 only when all hold.
"""
import json
import sys

PHASES = ("draft", "verify", "accept", "extend")
MEASURED = ("pageable-copy", "unknown-host")


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
            bad.append(f"cycle at {c['start_ns']} is not the full reading's: "
                       f"{bounds(c)} against {t and bounds(t)}")
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
        for before, c, nxt in zip(cs, cs[2:], cs[3:]):
            w = window_of(spans, before["phases"]["verify"]["start_ns"],
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
        # a launch that waited (the legacy stream) is a sync seen only inside a window; an
        # async copy into host memory is one where its wait shows it was pageable, which
        # outside a window only its site tells
        def calls(rep, measured):
            return sum(1 for x in rep["syncs"]
                       if (x["kind"] in MEASURED) == measured and not (
                           x["call"].startswith("cuLaunch")
                           and window_of(spans, x["ts"], x["ts"]) is None))
        if calls(samp, False) != calls(full, False):
            bad.append(f"not every sync was seen: {calls(samp, False)} of {calls(full, False)}")
        copies = calls(full, True)
        if abs(calls(samp, True) - copies) > max(1, copies // 100):
            bad.append(f"copies into host memory judged syncs: {calls(samp, True)}, "
                       f"the whole reading {copies}")
        if abs(samp["flagged_syncs"] - full["flagged_syncs"]) > unseen:
            bad.append("flagged syncs differ by more than the unseen sites")
    print(line)
    for b in bad[:10]:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
