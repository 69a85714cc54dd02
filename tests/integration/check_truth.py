#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Compare a recording of specsim-server with the server's own ground truth.

  check_truth.py --calls CALLS.jsonl --header HEADER.txt --dump-stderr ERR TRUTH...

Counts from the attach-complete mark in the header: every call the server made
to a probed symbol after it must be in the recording exactly once, on the same
thread, with equal arguments, its entry timestamp inside the server's
before/after bracket, and the same nesting depth. A call under way at the mark is
left out on both sides: its entry may have come before the probes or after.

--returns all: every async host copy has its return. --returns pinned-quiet: those
into or out of pinned memory are recorded at entry only (allocated before the attach,
so in the driver's mappings then, or since, while its slot held it), every other one
returns, and so does every one made after the process frees or unregisters host
memory until it pins more.
"""
import argparse
import collections
import json
import re
import sys


def as_int(v):
    if isinstance(v, str) and v.startswith("0x"):
        return int(v, 16)
    return v


def recorded_value(call, key):
    for where in (call.get("args") or {}, call.get("config") or {}, call):
        if key in where:
            return as_int(where[key])
    return None


def probed_symbols(header_path):
    attach_done, symbols = None, set()
    for line in open(header_path):
        m = re.match(r"# attach took [0-9.]+ ms, complete at (\d+)", line)
        if m:
            attach_done = int(m.group(1))
        m = re.match(r"# probe \d+: lib \d+ (\S+) ", line)
        if m:
            symbols.add(m.group(1))
    return attach_done, symbols


HOST_COPIES = {"cuMemcpyDtoHAsync": "dst_host", "cuMemcpyHtoDAsync": "src_host",
               "cuMemcpyAtoHAsync": "dst_host", "cuMemcpyHtoAAsync": "src_host"}
PIN_ALLOCS = ("cuMemHostAlloc", "cuMemAllocHost")
UNPINS = ("cuMemFreeHost", "cuMemHostUnregister")
# the BPF side's slots for memory pinned while traced (bpf/specprobe.h)
UNIT_SHIFT, LEN_BITS, SLOT_MUL = 6, 23, 0x9E3779B97F4A7C15


class PinnedSet:
    """What the probes hold pinned for one process: its allocations alive at the attach
    (read from the driver's mappings), those pinned since, into one of 16 slots by
    address; emptied when it frees or unregisters host memory."""

    def __init__(self, live_at_attach):
        self.ranges = list(live_at_attach)
        self.slots = {}

    def pin(self, ptr, nbytes):
        first = (ptr + (1 << UNIT_SHIFT) - 1) >> UNIT_SHIFT
        units = min(((ptr + nbytes) >> UNIT_SHIFT) - first, (1 << LEN_BITS) - 1)
        if units > 0:
            self.slots[((first * SLOT_MUL) & (2**64 - 1)) >> 60] = (first, units)

    def holds(self, addr):
        unit = addr >> UNIT_SHIFT
        return any(lo <= addr < hi for lo, hi in self.ranges) or any(
            first <= unit < first + units for first, units in self.slots.values())


def quiet_copies(truth_paths, attach_done):
    """The truth's async host copies after the attach that the probes record at entry only."""
    calls = sorted((json.loads(l) for p in truth_paths for l in open(p)),
                   key=lambda t: t.get("before", 0))
    live, sets, quiet = {}, {}, set()
    for t in calls:
        if "before" not in t or t.get("result"):
            continue
        pid, args = t["pid"], t.get("args") or {}
        if t["before"] >= attach_done and pid not in sets:
            sets[pid] = PinnedSet((p, p + n) for (q, p), n in live.items() if q == pid)
        if t["base"] in PIN_ALLOCS and "ptr" in args:
            live[(pid, args["ptr"])] = args["bytes"]
            if pid in sets:
                sets[pid].pin(args["ptr"], args["bytes"])
        elif t["base"] in UNPINS:
            live.pop((pid, args.get("ptr")), None)
            if pid in sets:
                sets[pid] = PinnedSet(())
        elif t["base"] in HOST_COPIES and pid in sets:
            if sets[pid].holds(args[HOST_COPIES[t["base"]]]):
                quiet.add((pid, t["tid"], t["before"]))
    return quiet


def check_returns(mode, quiet_truth, pairs, expect):
    quiet = returned = 0
    for where, c, t in pairs:
        arg = HOST_COPIES.get(c["name"])
        if arg is None:
            continue
        host = recorded_value(c, arg)
        want_quiet = mode == "pinned-quiet" and (t["pid"], t["tid"], t["before"]) in quiet_truth
        got_quiet = c["ts_return"] is None and not c["unreturned"]
        expect(want_quiet == got_quiet,
               f"{where}: host {host:#x} {'entry only' if got_quiet else 'with its return'}")
        quiet += got_quiet
        returned += not got_quiet
    return quiet, returned


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", required=True)
    ap.add_argument("--header", required=True)
    ap.add_argument("--dump-stderr", required=True)
    ap.add_argument("--returns", choices=("all", "pinned-quiet"))
    ap.add_argument("truth", nargs="+")
    a = ap.parse_args()
    attach_done, symbols = probed_symbols(a.header)
    # dump's other records (GPU executions, server-metrics samples) carry "record": not calls
    calls = [c for c in map(json.loads, open(a.calls)) if "record" not in c]
    truth = []
    # calls under way at the mark: the probe may have seen their entry or not
    straddling = collections.defaultdict(list)
    for path in a.truth:
        for line in open(path):
            t = json.loads(line)
            if "before" not in t:
                continue
            # pnccl aliases are attached under the ncclX name
            sym = t["name"][1:] if t["name"].startswith("pnccl") else t["name"]
            if sym not in symbols and t["name"] not in symbols:
                continue
            if t["before"] >= attach_done:
                truth.append(t)
            elif t.get("after", 0) >= attach_done:
                straddling[(t["base"], t["pid"], t["tid"])].append((t["before"], t["after"]))
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    got = collections.defaultdict(list)
    for c in calls:
        key = (c["name"], c["pid"], c["tid"])
        if c["ts_entry"] >= attach_done and not any(
                lo <= c["ts_entry"] <= hi for lo, hi in straddling.get(key, ())):
            got[key].append(c)
    want = collections.defaultdict(list)
    pairs = []
    for t in sorted(truth, key=lambda t: t["before"]):
        want[(t["base"], t["pid"], t["tid"])].append(t)
    for key in sorted(set(got) | set(want), key=str):
        g, w = got.get(key, []), want.get(key, [])
        expect(len(g) == len(w), f"{key}: recorded {len(g)}, ground truth {len(w)}")
        for k, (c, t) in enumerate(zip(g, w)):
            where = f"{key[0]} #{k} tid {key[2]}"
            pairs.append((where, c, t))
            expect(t["before"] <= c["ts_entry"] <= t["after"],
                   f"{where}: ts_entry outside [{t['before']}, {t['after']}]")
            expect(c["depth"] == t.get("depth", 0), f"{where}: depth {c['depth']} != {t.get('depth')}")
            if c["ts_return"] is not None:
                expect(c["ts_return"] <= t["after"], f"{where}: ts_return after the call ended")
                expect(c["result"] == t["result"], f"{where}: result {c['result']} != {t['result']}")
            for arg, val in (t.get("args") or {}).items():
                if not isinstance(val, int):
                    continue
                rec = recorded_value(c, arg)
                if rec is not None:
                    expect(rec == val, f"{where}: {arg} {rec} != {val}")
    copies = ""
    if a.returns:
        quiet, returned = check_returns(a.returns, quiet_copies(a.truth, attach_done), pairs,
                                        expect)
        copies = f"; async host copies: {quiet} entry only, {returned} with their return"
    m = re.search(r"(\d+) calls, (\d+) unreturned, (\d+) dropped", open(a.dump_stderr).read())
    expect(m is not None and int(m.group(3)) == 0, f"drops: {m and m.group(3)}")
    for f in failures[:15]:
        print("  FAIL:", f)
    print(f"  {len(truth)} calls since the attach-complete mark compared, {len(failures)} mismatches"
          f"{copies}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
