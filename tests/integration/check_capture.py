#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Compare a recording (specprobe dump --json) with the caller's ground truth."""
import argparse
import collections
import json
import re
import sys

# collectives have returns: a rank stuck in one shows as a call not returned
ENTRY_ONLY = {"cuLaunchKernel", "cuLaunchKernelEx", "cuGraphLaunch"}


def as_int(v):
    if isinstance(v, str) and v.startswith("0x"):
        return int(v, 16)
    return v


def recorded_value(call, key):
    for where in (call.get("args", {}), call.get("config") or {}, call):
        if key in where:
            return as_int(where[key])
    raise AssertionError(f"{call['name']}: no field {key} in {call}")


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def check(truth, calls, dump_err, threads, iterations):
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    direct = [c for c in calls if c["depth"] == 0]
    by_seq = {(c["tid"], c["seq"]): c for c in calls}

    # exact counts per entry point and thread
    want = collections.Counter((t["name"], t["tid"]) for t in truth)
    want[("cuCtxSynchronize", None)] = 1
    got = collections.Counter((c["name"], c["tid"]) for c in direct)
    hung = [c for c in direct if c["name"] == "cuCtxSynchronize"]
    expect(len(hung) == 1, f"one cuCtxSynchronize expected, got {len(hung)}")
    if hung:
        got[("cuCtxSynchronize", None)] = got.pop(("cuCtxSynchronize", hung[0]["tid"]))
        expect(hung[0]["unreturned"] is True and hung[0]["ts_return"] is None,
               "the call that never returns must be marked unreturned")
    expect(want == got, f"counts differ: missing {want - got}, extra {got - want}")
    names = collections.Counter(t["name"] for t in truth)
    expect(names["cuLaunchKernel"] == threads * iterations, "truth itself is off")

    # arguments equal and timestamps inside the caller's bracket, k-th call to k-th call
    per_key = collections.defaultdict(list)
    for c in direct:
        per_key[(c["name"], c["tid"])].append(c)
    seen = collections.Counter()
    for t in truth:
        key = (t["name"], t["tid"])
        k = seen[key]
        seen[key] += 1
        if k >= len(per_key[key]):
            continue
        c = per_key[key][k]
        for arg, val in t["args"].items():
            got_val = recorded_value(c, arg)
            expect(got_val == val, f"{t['name']} #{k} tid {t['tid']}: {arg} {got_val} != {val}")
        expect(t["before"] <= c["ts_entry"] <= t["after"],
               f"{t['name']} #{k}: ts_entry {c['ts_entry']} outside [{t['before']}, {t['after']}]")
        if t["name"] in ENTRY_ONLY:
            expect(c["ts_return"] is None and c["result"] is None,
                   f"{t['name']} is entry-only but has a return")
        else:
            expect(c["ts_return"] is not None and c["ts_entry"] <= c["ts_return"] <= t["after"],
                   f"{t['name']} #{k}: ts_return {c['ts_return']} not in [entry, {t['after']}]")
            expect(c["result"] == 0, f"{t['name']} #{k}: result {c['result']}")
        expect(not c["unreturned"], f"{t['name']} #{k} marked unreturned")

    # the collective's own kernel launch: nested once under each ncclAllReduce
    nested = [c for c in calls if c["depth"] > 0]
    expect(len(nested) == names["ncclAllReduce"],
           f"{len(nested)} nested calls, want {names['ncclAllReduce']}")
    for c in nested:
        parent = by_seq.get((c["tid"], c["parent_seq"]))
        expect(c["name"] == "cuLaunchKernelEx" and c["depth"] == 1,
               f"nested {c['name']} depth {c['depth']}")
        expect(parent is not None and parent["name"] == "ncclAllReduce",
               f"nested launch's parent is {parent and parent['name']}")
        if c.get("config"):
            expect(c["config"]["bx"] == 640, "nested launch config not decoded")

    # every pointer handed out for a probed name is a probed offset
    for c in direct:
        if c["name"] == "cuGetProcAddress":
            expect(c.get("pfn_probe") == "cuLaunchKernel",
                   f"cuGetProcAddress pfn lands on {c.get('pfn_probe')}")

    # the unreadable CUlaunchConfig: null, not zeros
    bad = [c for c in direct if c["name"] == "cuLaunchKernelEx" and recorded_value(c, "func") == 0x2fff]
    expect(len(bad) == 1 and bad[0]["config"] is None,
           f"unreadable launch config should decode as null: {bad}")

    m = re.search(r"(\d+) calls, (\d+) unreturned, (\d+) dropped, (\d+) failed reads", dump_err)
    expect(m is not None, f"no totals in dump's stderr: {dump_err!r}")
    if m:
        expect(int(m.group(3)) == 0, f"{m.group(3)} records dropped")
        expect(int(m.group(4)) == 1, f"{m.group(4)} failed reads, want the one planted")
        expect(int(m.group(2)) == 1, f"{m.group(2)} unreturned, want 1")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth", required=True)
    ap.add_argument("--calls", required=True)
    ap.add_argument("--dump-stderr", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--iterations", type=int, required=True)
    a = ap.parse_args()
    with open(a.dump_stderr) as f:
        dump_err = f.read()
    failures = check(load(a.truth), load(a.calls), dump_err, a.threads, a.iterations)
    for f in failures[:20]:
        print("  FAIL:", f)
    if failures:
        print(f"  {len(failures)} mismatches")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
