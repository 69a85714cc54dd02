#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Bounded recordings, dumps and merges against specsim's ground truth.

  check_flight.py ring --calls CALLS.jsonl --header HEADER.txt --dump-stderr ERR TRUTH...
      the kept calls are the newest of each thread, with their timestamps inside the
      server's brackets, and kept + stated rotated out = calls the server made
  check_flight.py hung --calls CALLS.jsonl --dump-stderr ERR --hang-ms MS TRUTH...
      the dump holds the hung all-reduce (unreturned) and the window before it
  check_flight.py merge --merged M.jsonl --part A.jsonl --part B.jsonl --merge-stderr ERR
                        [--header H.txt --bound-ns NS TRUTH...]
      the merge holds every call of each part once, each moved by its stated shift, and
      inside the server's own bracket of it widened by the stated bound
"""
import argparse
import collections
import json
import re
import sys

from check_truth import probed_symbols


def load(path):
    return [json.loads(l) for l in open(path)]


def truth_calls(paths, attach_done, symbols):
    truth = []
    for path in paths:
        for line in open(path):
            t = json.loads(line)
            if "before" not in t or t["before"] < attach_done:
                continue
            sym = t["name"][1:] if t["name"].startswith("pnccl") else t["name"]
            if sym in symbols or t["name"] in symbols:
                truth.append(t)
    return truth


def rotated_calls(stderr_text):
    m = re.search(r"rotated out before segment \d+: (\d+) calls", stderr_text)
    return int(m.group(1)) if m else 0


def ring(a):
    attach_done, symbols = probed_symbols(a.header)
    truth = truth_calls(a.truth, attach_done, symbols)
    kept = [c for c in load(a.calls) if c["ts_entry"] >= attach_done]
    err = open(a.dump_stderr).read()
    gone = rotated_calls(err)
    fails = []
    if len(kept) + gone != len(truth):
        fails.append(f"kept {len(kept)} + rotated out {gone} != {len(truth)} calls made")
    if not gone:
        fails.append("nothing was rotated out: the ring never turned")
    want = collections.defaultdict(list)
    for t in sorted(truth, key=lambda t: t["before"]):
        want[t["tid"]].append(t)
    got = collections.defaultdict(list)
    for c in sorted(kept, key=lambda c: c["ts_entry"]):
        got[c["tid"]].append(c)
    for tid, g in got.items():
        w = want[tid][len(want[tid]) - len(g):]
        for c, t in zip(g, w):
            if c["name"] != t["base"] or not t["before"] <= c["ts_entry"] <= t["after"]:
                fails.append(f"tid {tid}: kept {c['name']} at {c['ts_entry']} is not the "
                             f"newest ({t['base']} in [{t['before']}, {t['after']}])")
                break
    for f in fails[:10]:
        print("  FAIL:", f)
    print(f"  {len(truth)} calls made: {len(kept)} kept, {gone} stated rotated out; "
          f"{len(fails)} mismatches")
    return 1 if fails else 0


def hung(a):
    calls = load(a.calls)
    fails = []
    hung_calls = [c for c in calls if c["unreturned"] or
                  (c["ts_return"] is not None and
                   c["ts_return"] - c["ts_entry"] >= a.hang_ms * 1e6 * 0.9)]
    if not any(c["name"].startswith("ncclAllReduce") or "Synchronize" in c["name"]
               for c in hung_calls):
        fails.append(f"no hung call in the dump ({len(hung_calls)} long or unreturned calls)")
    m = re.search(r"dump (\d+): pid (\d+) tid (\d+) seq (\d+) entered at (\d+), "
                  r"unreturned (\d+) ns at (\d+); kept until (\d+) ns after", open(a.dump_stderr).read())
    if not m:
        fails.append("the dump does not state its window")
    else:
        tid, seq, entry, trig, after = (int(m.group(i)) for i in (3, 4, 5, 7, 8))
        named = [c for c in calls if c["tid"] == tid and c["seq"] == seq]
        if not named or named[0]["ts_entry"] != entry:
            fails.append(f"the call the window names (tid {tid} seq {seq}) is not in the dump")
        before = [c for c in calls if c["ts_entry"] < entry]
        if not before:
            fails.append("no call before the hung one: the window before it is missing")
        if max(c["ts_entry"] for c in calls) > trig + after + 500000000:
            fails.append("calls long after the stated window end")
    for f in fails:
        print("  FAIL:", f)
    print(f"  {len(calls)} calls in the dump, {len(hung_calls)} long or unreturned; "
          f"{len(fails)} mismatches")
    return 1 if fails else 0


def key(c):
    return (c["name"], c["tid"], c["seq"])


def merge(a):
    merged = load(a.merged)
    err = open(a.merge_stderr).read()
    shifts = [int(s) for s in re.findall(r"input \d+: .* shifted by (-?\d+) ns", err)]
    fails = []
    if len(shifts) != len(a.part):
        fails.append(f"{len(shifts)} shifts stated for {len(a.part)} inputs")
        shifts += [0] * len(a.part)
    by_pid = collections.defaultdict(list)
    for c in merged:
        by_pid[c["pid"]].append(c)
    total = 0
    for n, path in enumerate(a.part):
        part = load(path)
        total += len(part)
        pids = {c["pid"] for c in part}
        mine = {key(c): c for p in pids for c in by_pid.get(p, [])}
        for c in part:
            m = mine.get(key(c))
            if not m:
                fails.append(f"input {n}: {key(c)} missing from the merge")
            elif m["ts_entry"] != c["ts_entry"] + shifts[n]:
                fails.append(f"input {n}: {key(c)} at {m['ts_entry']}, expected "
                             f"{c['ts_entry']} + {shifts[n]}")
            if len(fails) > 10:
                break
    if a.truth:
        # each merged call inside the server's bracket of it, widened by the stated bound
        attach_done, symbols = probed_symbols(a.header)
        want = collections.defaultdict(list)
        for t in sorted(truth_calls(a.truth, attach_done, symbols), key=lambda t: t["before"]):
            want[(t["base"], t["pid"], t["tid"])].append(t)
        got = collections.defaultdict(list)
        for c in sorted(merged, key=lambda c: c["ts_entry"]):
            if c["ts_entry"] >= attach_done:
                got[(c["name"], c["pid"], c["tid"])].append(c)
        for k in set(got) | set(want):
            g, w = got.get(k, []), want.get(k, [])
            if len(g) != len(w):
                fails.append(f"{k}: {len(g)} merged, {len(w)} made")
            for c, t in zip(g, w):
                if not t["before"] - a.bound_ns <= c["ts_entry"] <= t["after"] + a.bound_ns:
                    fails.append(f"{k}: merged at {c['ts_entry']}, outside the server's "
                                 f"[{t['before']}, {t['after']}] +- {a.bound_ns} ns")
                    break
    if len(merged) != total:
        fails.append(f"{len(merged)} calls merged, {total} in the inputs")
    for f in fails[:10]:
        print("  FAIL:", f)
    print(f"  {total} calls in {len(a.part)} inputs, {len(merged)} merged; {len(fails)} mismatches")
    return 1 if fails else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("ring")
    r.add_argument("--calls", required=True)
    r.add_argument("--header", required=True)
    r.add_argument("--dump-stderr", required=True)
    r.add_argument("truth", nargs="+")
    h = sub.add_parser("hung")
    h.add_argument("--calls", required=True)
    h.add_argument("--dump-stderr", required=True)
    h.add_argument("--hang-ms", type=int, required=True)
    m = sub.add_parser("merge")
    m.add_argument("--merged", required=True)
    m.add_argument("--part", action="append", required=True)
    m.add_argument("--merge-stderr", required=True)
    m.add_argument("--header", help="dump -H of the merge, with the truth below")
    m.add_argument("--bound-ns", type=int, default=0)
    m.add_argument("truth", nargs="*")
    a = ap.parse_args()
    return {"ring": ring, "hung": hung, "merge": merge}[a.what](a)


if __name__ == "__main__":
    sys.exit(main())
