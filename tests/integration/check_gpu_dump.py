#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""dump --json of a --gpu recording against specsim's GPU truth and the report.

    check_gpu_dump.py [--rotated] DUMP.jsonl REPORT.json TRUTH...

Each "record":"gpu" object must be one of the truth's executions (graph, kernel,
copy, memset): same pid, kind, start, end, CUPTI stream id, correlation, bytes and
kernel name. There are as many as the report read (gpu.records). A whole recording
holds every execution of the truth, one for one. A rotated one (--rotated) holds the
newest only, but every kernel in it is named, and the names are the truth's.
"""
import argparse
import collections
import json
import sys

KINDS = {"graph": "graph", "kernel": "kernel", "copy": "memcpy", "memset": "memset"}


def truth_execs(paths):
    execs = collections.Counter()
    for path in paths:
        for line in open(path):
            t = json.loads(line)
            kind = KINDS.get(t.get("gpu"))
            if not kind:
                continue
            execs[(t["pid"], kind, t["start"], t["end"], t["stream_id"], t["correlation"],
                   t["kernel"] if kind == "kernel" else None,
                   t["bytes"] if kind in ("memcpy", "memset") else None)] += 1
    return execs


def dump_execs(path):
    execs = collections.Counter()
    for line in open(path):
        j = json.loads(line)
        if j.get("record") == "gpu":
            execs[(j["pid"], j["kind"], j["ts_start"], j["ts_end"], j["stream_id"],
                   j["correlation"], j["kernel"], j["bytes"])] += 1
    return execs


def kernel_names(execs):
    return sorted({k[6] for k in execs if k[1] == "kernel"}, key=str)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rotated", action="store_true")
    ap.add_argument("dump")
    ap.add_argument("report")
    ap.add_argument("truth", nargs="+")
    a = ap.parse_args()
    want, got = truth_execs(a.truth), dump_execs(a.dump)
    records = json.load(open(a.report))["gpu"]["records"]
    n = sum(got.values())
    failures = []
    if n != records:
        failures.append(f"{n} GPU executions in the dump, the report read {records}")
    extra = got - want
    if extra:
        failures.append(f"{sum(extra.values())} executions not in the truth, e.g. "
                        f"{next(iter(extra))}")
    if not a.rotated and want - got:
        failures.append(f"{sum((want - got).values())} executions of the truth missing, e.g. "
                        f"{next(iter(want - got))}")
    if kernel_names(got) != kernel_names(want):
        failures.append(f"kernel names {kernel_names(got)}, the truth's {kernel_names(want)}")
    if not n:
        failures.append("no GPU execution in the dump")
    for f in failures:
        print("  FAIL:", f)
    kernels = sum(v for k, v in got.items() if k[1] == "kernel")
    print(f"  {n} executions of {sum(want.values())} in the truth, {kernels} kernels named "
          f"{', '.join(map(str, kernel_names(got)))}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
