#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Compare a recording (dump --json lines) with the look-alike loader's truth.

Every process that loaded the library wrote one truth line with its pid as it
sees it (nspid) and how often it called each entry point. The recording must
hold exactly those processes (by pid, or by ns_pid in another pid namespace)
and exactly those counts: one missed call fails.
  check_launch.py TRUTH DUMP_JSON [--ns]
"""
import collections
import json
import sys


def main():
    truth_path, dump_path = sys.argv[1], sys.argv[2]
    by_ns = "--ns" in sys.argv[3:]
    truth = [json.loads(line) for line in open(truth_path) if line.strip()]
    seen = collections.defaultdict(collections.Counter)
    for line in open(dump_path):
        call = json.loads(line)
        pid = call.get("ns_pid") if by_ns else call["pid"]
        if pid is None:
            print(f"call without ns_pid from pid {call['pid']}: {call['name']}")
            return 1
        seen[pid][call["name"]] += 1
    errors = []
    for t in truth:
        want = {k: v for k, v in t.items() if k != "nspid"}
        got = dict(seen.pop(t["nspid"], {}))
        if got != want:
            errors.append(f"pid {t['nspid']}: want {want}, got {got}")
    for pid, got in seen.items():
        errors.append(f"pid {pid} is not in the truth: {dict(got)}")
    if not truth:
        errors.append("the truth is empty: nothing loaded the library")
    for e in errors:
        print(e)
    if errors:
        return 1
    calls = sum(sum(t[k] for k in t if k != "nspid") for t in truth)
    print(f"{len(truth)} processes, {calls} calls, all matched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
