#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Check a recording of tp_spec.py against the ranks' own truth.

  check_tp.py TRUTH_DIR CALLS_JSONL REPORT_JSON
Every rank found; its NCCL communicator mapped to rank/nranks; the all-reduces captured
into the verify graph attributed to it; eager all-reduces counted exactly; graph
replays exact; per-rank cycles in the report equal to the loop's.
"""
import collections
import glob
import json
import sys


def main():
    truth_dir, calls_path, report_path = sys.argv[1:4]
    truths = [json.load(open(p)) for p in sorted(glob.glob(f"{truth_dir}/rank-*.json"))]
    calls = collections.defaultdict(collections.Counter)
    for line in open(calls_path):
        c = json.loads(line)
        calls[c["pid"]][c["name"]] += 1
    report = json.load(open(report_path))
    procs = {p["pid"]: p for p in report["processes"]}
    results = []

    def check(ok, what):
        results.append(ok)
        print(("ok   " if ok else "FAIL ") + what)

    check(len(truths) > 0, f"{len(truths)} rank(s) wrote their truth")
    for t in truths:
        pid, rank = t["pid"], t["rank"]
        p = procs.get(pid, {})
        check(pid in procs, f"rank {rank}: pid {pid} found in the report")
        check(p.get("rank") == rank and p.get("nranks") == t["nranks"],
              f"rank {rank}: communicator rank/nranks {p.get('rank')}/{p.get('nranks')} "
              f"(want {rank}/{t['nranks']})")
        want_ar = t["eager_all_reduce"] + sum(t["captured_all_reduce"].values())
        got_ar = calls[pid]["ncclAllReduce"]
        check(got_ar == want_ar, f"rank {rank}: ncclAllReduce calls {got_ar} (want {want_ar}: "
              f"{t['eager_all_reduce']} eager + {sum(t['captured_all_reduce'].values())} "
              "while capturing)")
        verify = [g for g in report["graphs"] if g["pid"] == pid and g["role"] == "verify"
                  and g["launches"]]
        cc = [g["collective_count"] for g in verify]
        check(cc == [t["captured_all_reduce"]["verify"]],
              f"rank {rank}: collectives captured into the replayed verify graph {cc} "
              f"(want [{t['captured_all_reduce']['verify']}])")
        replays = sum(t["replays"].values())
        check(calls[pid]["cuGraphLaunch"] == replays,
              f"rank {rank}: cuGraphLaunch {calls[pid]['cuGraphLaunch']} (want {replays})")
        flagged = collections.Counter((x["kind"], x["position"]) for x in report["syncs"]
                                      if x["pid"] == pid and x["flagged"])
        planted = t.get("planted_ctx_syncs", 0)
        want_flags = {("ctx", "draft-verify"): planted} if planted else {}
        check(dict(flagged) == want_flags, f"rank {rank}: flagged syncs {dict(flagged)} "
              f"(want {want_flags})")
        loops = [lp for lp in report["loops"] if lp["pid"] == pid]
        got_cycles = sum(lp["cycles"] for lp in loops)
        check(got_cycles == t["cycles"], f"rank {rank}: report cycles {got_cycles} "
              f"(want {t['cycles']})")
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
