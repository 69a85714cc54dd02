#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Nothing lost inside a recording: each thread's calls are numbered 1, 2, 3... with no
gap (the BPF side numbers every call it sees). With --drops-from, the calls kept plus
the entries dropped must equal the calls the ground truth says were made."""
import argparse
import collections
import json
import re
import sys

from check_truth import probed_symbols


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", required=True)
    ap.add_argument("--min-calls", type=int, default=1)
    ap.add_argument("--pids", type=int, default=0, help="processes expected in the recording")
    ap.add_argument("--drops-from", help="dump's stderr: check kept + dropped = made")
    ap.add_argument("--header", help="dump -H lines, for the attach mark")
    ap.add_argument("truth", nargs="*")
    a = ap.parse_args()
    calls = [json.loads(line) for line in open(a.calls)]
    seqs = collections.defaultdict(list)
    for c in calls:
        seqs[(c["pid"], c["tid"])].append(c["seq"])
    bad = [(k, s[:5]) for k, s in seqs.items() if sorted(s) != list(range(1, len(s) + 1))]
    ok = True
    if bad:
        print(f"  FAIL: threads with gaps in their call numbers: {bad[:3]}")
        ok = False
    if len(calls) < a.min_calls:
        print(f"  FAIL: {len(calls)} calls, expected at least {a.min_calls}")
        ok = False
    pids = {c["pid"] for c in calls}
    if a.pids and len(pids) != a.pids:
        print(f"  FAIL: {len(pids)} processes, expected {a.pids}")
        ok = False
    if a.drops_from:
        # an exit record lost in a full ring counts as a dropped entry: take it out
        m = re.search(r"dropped: (\d+) entries or process records, (\d+) returns; "
                      r"(\d+) process exits", open(a.drops_from).read())
        if not m:
            print("  FAIL: no drops shown")
            return 1
        lost_exits = len(pids) - int(m.group(3))
        dropped = int(m.group(1)) - lost_exits
        # calls made once every probe was in place, of the entry points probed
        attach_done, symbols = probed_symbols(a.header)
        made = 0
        for path in a.truth:
            for line in open(path):
                t = json.loads(line)
                if "name" not in t:
                    continue
                name = t["name"][1:] if t["name"].startswith("pnccl") else t["name"]
                made += t.get("before", 0) >= attach_done and name in symbols
        kept = sum(1 for c in calls if c["ts_entry"] >= attach_done)
        print(f"  {kept} kept + {dropped} dropped calls, {made} made")
        # so does an exit status lost after its exit record was kept: one at most a process
        status_lost = kept + dropped - made
        if not 0 <= status_lost <= int(m.group(3)) or dropped == 0:
            print("  FAIL: kept + dropped != made (or nothing dropped)")
            ok = False
    print(f"  {len(calls)} calls on {len(seqs)} threads of {len(pids)} processes, no gap")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
