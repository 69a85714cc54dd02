#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A merge's report against its inputs' own reports, and specsim's truth where it has one.

  check_merge.py --merged M.json --input A.json --input B.json [--windows PID:N] [TRUTH...]
      per process (a pid moved into another space, pid + N << 22, is the same process),
      the merge's cycles equal the sum of each input's, and so do its flagged syncs, those
      counted in a cycle, and the flagged sites' cycles; --windows PID:N: the process is
      in N windows, each a loop of its own; with truth files (whole runs), each process's
      cycles equal the truth's and its flagged syncs in cycles the planted ones
"""
import argparse
import collections
import json
import sys

SPACE = 1 << 22     # merge.h MERGE_HOST_SHIFT: another window or host's pids


def per_process(report):
    """pid: [cycles, flagged syncs, flagged in a cycle, loops] of one report."""
    out = collections.defaultdict(lambda: [0, 0, 0, 0])
    for lp in report["loops"]:
        out[lp["pid"] % SPACE][0] += lp["cycles"]
        out[lp["pid"] % SPACE][3] += 1
    for s in report["syncs"]:
        if s["flagged"]:
            out[s["pid"] % SPACE][1] += 1
            out[s["pid"] % SPACE][2] += s["cycle"] is not None
    return out


def site_cycles(report):
    return sum(s["cycles_with"] for s in report["flagged_sites"])


def truth(paths):
    """pid: [cycles, planted syncs] as specsim made them."""
    cycles, planted = collections.defaultdict(set), collections.Counter()
    for path in paths:
        for line in open(path):
            t = json.loads(line)
            if t.get("cycle", -1) >= 0:
                cycles[t["pid"]].add(t["cycle"])
            if t.get("tag") == "planted-sync":
                planted[t["pid"]] += 1
    return {pid: [len(c), planted[pid]] for pid, c in cycles.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--merged", required=True)
    ap.add_argument("--input", action="append", required=True)
    ap.add_argument("--windows", action="append", default=[])
    ap.add_argument("truth", nargs="*")
    a = ap.parse_args()
    merged = json.load(open(a.merged))
    inputs = [json.load(open(p)) for p in a.input]
    got = per_process(merged)
    want = collections.defaultdict(lambda: [0, 0, 0, 0])
    fails = []
    for n, rep in enumerate(inputs):
        own = per_process(rep)
        if not own or not all(v[0] for v in own.values()):
            fails.append(f"input {n}: a process with no cycle of its own: {dict(own)}")
        for pid, v in own.items():
            want[pid] = [x + y for x, y in zip(want[pid], v)]
    for pid in sorted(set(got) | set(want)):
        g, w = got.get(pid, [0, 0, 0, 0]), want[pid]
        for i, what in enumerate(("cycles", "flagged syncs", "flagged syncs in a cycle")):
            if g[i] != w[i]:
                fails.append(f"pid {pid}: {g[i]} {what} merged, {w[i]} in the inputs")
    for spec in a.windows:
        pid, n = map(int, spec.split(":"))
        if got.get(pid, [0, 0, 0, 0])[3] != n:
            fails.append(f"pid {pid}: {got.get(pid, [0, 0, 0, 0])[3]} loops, {n} windows")
    if site_cycles(merged) != sum(site_cycles(r) for r in inputs):
        fails.append(f"flagged sites: {site_cycles(merged)} cycles with one merged, "
                     f"{sum(site_cycles(r) for r in inputs)} in the inputs")
    for pid, (cycles, planted) in truth(a.truth).items():
        if got.get(pid, [0, 0, 0])[0] != cycles or got[pid][2] != planted:
            fails.append(f"pid {pid}: {got.get(pid, [0, 0, 0])[0]} cycles and "
                         f"{got.get(pid, [0, 0, 0])[2]} flagged syncs in them, the truth "
                         f"{cycles} and {planted} planted")
    for f in fails:
        print(f)
    total = sum(v[0] for v in got.values())
    print(f"{total} cycles of {len(got)} process(es) from {len(inputs)} inputs, "
          f"{sum(v[2] for v in got.values())} flagged syncs in them; {len(fails)} mismatches")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
