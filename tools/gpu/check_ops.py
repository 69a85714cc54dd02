#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Check a recording of ops.py: exact per-entry-point counts per segment, and
that every pointer cuGetProcAddress handed out for a probed name is a probed offset.
  check_ops.py CALLS_JSONL PLAN_JSON PID
"""
import collections
import json
import sys

SEGMENTS = ["eager", "matmul", "synchronize", "item", "nonzero", "graph_replay", "capture",
            "all_reduce"]


def segments(calls, pid):
    main = [c for c in calls if c["tid"] == pid and c["depth"] == 0]
    cuts, i = [], 0
    while i + 2 < len(main):
        if all(main[i + k]["name"] == "cuStreamQuery" for k in range(3)):
            cuts.append(i)
            i += 3
        else:
            i += 1
    # the warm-up ran before the tracer: the traced run has len(SEGMENTS) + 1 markers
    cuts = cuts[-(len(SEGMENTS) + 1):]
    seg = {}
    for k, name in enumerate(SEGMENTS):
        lo, hi = cuts[k] + 3, cuts[k + 1]
        seg[name] = main[lo:hi]
    nested = collections.Counter()
    lo_ts = main[cuts[SEGMENTS.index("all_reduce")]]["ts_entry"]
    hi_ts = main[cuts[-1]]["ts_entry"]
    for c in calls:
        if c["depth"] > 0 and lo_ts <= c["ts_entry"] <= hi_ts:
            nested[c["name"]] += 1
    return seg, nested


def captured_launches(calls):
    names = [c["name"] for c in calls]
    begin, end = names.index("cuStreamBeginCapture"), names.index("cuStreamEndCapture")
    return names[begin:end].count("cuLaunchKernel")


def main():
    calls = [json.loads(l) for l in open(sys.argv[1])]
    plan = json.load(open(sys.argv[2]))
    pid = int(sys.argv[3])
    n = plan["counts"]
    seg, nested = segments(calls, pid)
    count = {k: collections.Counter(c["name"] for c in v) for k, v in seg.items()}
    checks = [
        ("eager: cuLaunchKernel", count["eager"]["cuLaunchKernel"], n["eager"]),
        # cuBLAS may launch several kernels per matmul, all through cuLaunchKernelEx
        ("matmul: cuLaunchKernelEx per matmul is a whole number",
         count["matmul"]["cuLaunchKernelEx"] % n["matmul"], 0),
        ("matmul: cuLaunchKernel", count["matmul"]["cuLaunchKernel"], 0),
        ("synchronize: cuCtxSynchronize", count["synchronize"]["cuCtxSynchronize"],
         n["synchronize"]),
        ("item: cuMemcpyDtoHAsync", count["item"]["cuMemcpyDtoHAsync"], n["item"]),
        ("item: cuStreamSynchronize", count["item"]["cuStreamSynchronize"], n["item"]),
        ("nonzero: cuStreamSynchronize", count["nonzero"]["cuStreamSynchronize"], n["nonzero"]),
        ("graph replay: cuGraphLaunch", count["graph_replay"]["cuGraphLaunch"],
         n["graph_replay"]),
        ("graph replay: cuLaunchKernel", count["graph_replay"]["cuLaunchKernel"], 0),
        ("capture: cuStreamBeginCapture", count["capture"]["cuStreamBeginCapture"], 1),
        ("capture: cuStreamEndCapture", count["capture"]["cuStreamEndCapture"], 1),
        ("capture: cuGraphInstantiate*",
         sum(v for k, v in count["capture"].items() if k.startswith("cuGraphInstantiate")), 1),
        ("capture: kernels launched while capturing", captured_launches(seg["capture"]),
         plan["captured_kernels"]),
        ("all_reduce: ncclAllReduce", count["all_reduce"]["ncclAllReduce"], n["all_reduce"]),
    ]
    failed = 0
    for what, got, want in checks:
        ok = got == want
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {got} (want {want})")
    print(f"info: cuLaunchKernelEx per matmul: {count['matmul']['cuLaunchKernelEx'] / n['matmul']}")
    print(f"info: calls nested under ncclAllReduce: {dict(nested)}")
    for name, c in count.items():
        print(f"info: segment {name}: {dict(c.most_common())}")
    by_seq = {(c["tid"], c["seq"]): c["name"] for c in calls}
    pairs = collections.Counter((by_seq.get((c["tid"], c["parent_seq"])), c["name"])
                                for c in calls if c["depth"] > 0)
    print(f"info: nested calls (parent, child): {dict(pairs.most_common())}")

    # cuGetProcAddress: each pointer handed out for a probed name lands on a probe
    gpa = [c for c in calls if c["name"] == "cuGetProcAddress" and c["tid"] == pid]
    by_name = collections.defaultdict(list)
    for c in gpa:
        by_name[c.get("symbol_str")].append(c)
    asked = {k: v for k, v in plan["proc_address"].items() if v["rc"] == 0 and v["pfn"]}
    hits = misses = 0
    for name, want in asked.items():
        recs = by_name.get(name, [])
        if not recs:
            misses += 1
            print(f"FAIL cuGetProcAddress({name}) not recorded")
            continue
        rec = recs[-1]
        if int(rec["pfn"], 16) == want["pfn"] and rec.get("pfn_probe"):
            hits += 1
        else:
            misses += 1
            print(f"FAIL cuGetProcAddress({name}) -> {rec['pfn']} lands on {rec.get('pfn_probe')}")
    print(f"{'ok  ' if not misses else 'FAIL'} cuGetProcAddress: {hits} of {len(asked)} "
          f"pointers handed out for probed names are probed offsets")
    failed += misses > 0
    print(f"{len(checks) + 1 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
