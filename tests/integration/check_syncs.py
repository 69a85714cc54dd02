#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Compare the sync classification of `specprobe report --json` with specsim's planted calls.

  check_syncs.py --report REPORT.json TRUTH...

Calls planted with --plant carry "tag":"planted:KIND" and "position" in the truth; a poll
plant is a spin of queries, the last one ready. Checks, for the calls made between the
recording's attach mark and its last call:
- recall: every planted call is in syncs[] with the kind and the position it was planted
  with (a D2H into memory allocated before attach and not seen pinned is
  "pageable-copy" when its blocked time showed that it waited, else "unknown-host",
  never flagged; an unknown-host plant into memory whose pinning was seen is no sync);
- precision: every flagged sync is a planted call; no clean:* call and no accept sync is
  flagged;
- starvation bounds: context syncs have one, stream syncs exactly when no other stream
  had work in flight, and each equals the truth's return-to-next-launch interval within
  the brackets of the two calls;
- self_overhead: calls per kind add up to the process's calls, and the CPU time added is
  those calls times the calibrated cost.
"""
import argparse
import json
import sys

LAUNCHES = {"cuGraphLaunch", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchHostFunc",
            "ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
            "ncclReduce", "ncclSend", "ncclRecv"}


def load(path):
    lines = [json.loads(l) for l in open(path)]
    calls = sorted((l for l in lines if "before" in l), key=lambda c: c["before"])
    summary = next(l for l in lines if l.get("summary"))
    return calls, summary


def spins(calls):
    """Planted calls, a poll spin as its first query (with the spin's last return)."""
    out, spin = [], None
    for c in calls:
        tag = c.get("tag") or ""
        if tag == "planted:poll":
            spin = spin or dict(c)
            if c["result"] == 0:
                out.append(spin)
                spin = None
        elif tag.startswith("planted:"):
            out.append(c)
    return out


def inside(ts, c):
    return ts is not None and c["before"] <= ts <= c["after"]


class Checker:
    def __init__(self):
        self.failures = []
        self.planted = self.found = self.flagged = self.true_flags = 0

    def fail(self, what):
        self.failures.append(what)


def expected(call, pinned_known, last_cycle, cut_cycles):
    """(kinds, positions) the report may give a planted call; kinds None: no sync.

    Host memory made before attach and not seen pinned is of unknown kind: a D2H into
    it that measurably waited is "pageable-copy", one that did not is "unknown-host"."""
    kind = call["tag"].split(":", 1)[1]
    kinds = {kind}
    if kind == "pageable-copy" and not pinned_known:
        kinds = {"pageable-copy", "unknown-host"}
    elif kind == "unknown-host":
        kinds = None    # pinned: seen allocated, or in the driver's shared maps at attach
    pos = call["position"]
    if pos == "outside" and call["cycle"] >= 0:
        pos = "extend"          # specsim: an outside plant in the loop lies in extend
    positions = {pos}
    if pos == "extend" and call["cycle"] == last_cycle:
        positions.add("outside")        # past the end of the loop's last launch
    if call["cycle"] in cut_cycles:
        positions.add("outside")        # its cycle began before the recording did
    return kinds, positions


def match(syncs, call):
    return [s for s in syncs if s["pid"] == call["pid"] and s["call"] == call["base"] and
            inside(s["ts"], call)]


def check_rank(ck, rep, calls, summary):
    pid = summary["pid"]
    attach = rep["recording"]["attach_done_ns"]
    last = rep["recording"]["last_ns"] or 0
    syncs = [s for s in rep["syncs"] if s["pid"] == pid]
    pinned_known = any(c["base"] == "cuMemHostAlloc" and c["before"] >= attach for c in calls)
    recorded = [c for c in calls if c["before"] >= attach and c["after"] <= last]
    last_cycle = summary["cycles_run"] - 1
    cut_cycles = {c["cycle"] for c in calls if c.get("cycle", -1) >= 0 and c["before"] < attach}
    planted_ts = []
    for call in spins(recorded):
        kinds, positions = expected(call, pinned_known, last_cycle, cut_cycles)
        got = match(syncs, call)
        where = f"pid {pid} {call['tag']}@{call['position']} cycle {call['cycle']}"
        if kinds is None:
            if got:
                ck.fail(f"{where}: pinned memory, yet reported as {got[0]['kind']}")
            continue
        ck.planted += 1
        if len(got) != 1:
            ck.fail(f"{where}: {len(got)} syncs in the report at {call['before']}")
            continue
        planted_ts.append(got[0]["ts"])
        if got[0]["kind"] not in kinds or got[0]["position"] not in positions:
            ck.fail(f"{where}: reported {got[0]['kind']}@{got[0]['position']}, "
                    f"want {'|'.join(sorted(kinds))}@{'|'.join(sorted(positions))}")
            continue
        if got[0]["kind"] == "unknown-host" and got[0]["flagged"]:
            ck.fail(f"{where}: unknown host memory flagged")
            continue
        ck.found += 1
    planted_ts = set(planted_ts)
    for s in syncs:
        if not (attach <= s["ts"] <= last):
            continue
        if s["kind"] == "pageable-copy" and not pinned_known and \
                s["host_from"] not in ("measured", "after-attach"):
            ck.fail(f"pid {pid} sync at {s['ts']}: pageable, but pinning was not all seen")
        if not s["flagged"]:
            continue
        ck.flagged += 1
        if s["ts"] in planted_ts:
            ck.true_flags += 1
            continue
        truth = [c for c in recorded if inside(s["ts"], c) and c["base"] == s["call"]]
        tag = (truth[0].get("tag") or truth[0]["phase"]) if truth else "no truth call"
        ck.fail(f"pid {pid} {s['kind']}@{s['position']} at {s['ts']} flagged: {tag}")
    check_bounds(ck, pid, recorded, syncs)


def check_bounds(ck, pid, calls, syncs):
    # launches into a capture queue no work
    launches = [c for c in calls if c["base"] in LAUNCHES and c["depth"] == 0 and
                c["phase"] != "capture"]
    for s in syncs:
        truth = [c for c in calls if inside(s["ts"], c) and c["base"] == s["call"]]
        if not truth or s["result"] != 0:
            continue
        call = truth[0]
        nxt = next((l for l in launches if l["before"] > call["after"]), None)
        bound = s["starvation_bound_ns"]
        where = f"pid {pid} {s['kind']}@{s['position']} at {s['ts']}"
        other = sum(s["in_flight"]["other"].values())
        if s["kind"] == "ctx" and nxt and bound is None:
            ck.fail(f"{where}: a context sync without a starvation bound")
        if s["kind"] == "stream" and nxt and (bound is None) != (other > 0):
            ck.fail(f"{where}: bound {bound} with {other} calls in flight on other streams")
        if bound is not None and nxt is not None:
            lo, hi = nxt["before"] - call["after"], nxt["after"] - call["before"]
            if not lo <= bound <= hi:
                ck.fail(f"{where}: bound {bound} outside [{lo}, {hi}]")
        if s["breaks_overlap"] and not s["flagged"]:
            ck.fail(f"{where}: breaks overlap but not flagged")


def check_overhead(ck, rep):
    so = rep.get("self_overhead")
    if not so or not so.get("calibrated"):
        ck.fail("self_overhead missing or not calibrated")
        return
    calls = {p["pid"]: p["calls"] for p in rep["processes"]}
    for p in so["processes"]:
        if p["entry_only_calls"] + p["completion_calls"] != calls.get(p["pid"]):
            ck.fail(f"pid {p['pid']}: {p['entry_only_calls']} + {p['completion_calls']} calls "
                    f"!= {calls.get(p['pid'])}")
        want = (p["entry_only_calls"] * so["entry_ps"] +
                p["completion_calls"] * (so["entry_ps"] + so["return_ps"])) / 1000
        if abs(p["added_ns"] - want) > 1:
            ck.fail(f"pid {p['pid']}: added {p['added_ns']} ns != calls x cost {want:.0f}")
        if p["span_ns"] and abs(p["added_ms_per_s"] - want / 1e6 / (p["span_ns"] / 1e9)) > 1e-3:
            ck.fail(f"pid {p['pid']}: {p['added_ms_per_s']} ms/s != added over span")
        if p["cpu_ms_per_s"] and abs(p["percent_of_cpu"] -
                                     100 * p["added_ms_per_s"] / p["cpu_ms_per_s"]) > 1e-2:
            ck.fail(f"pid {p['pid']}: percent {p['percent_of_cpu']} != added / CPU")
    if not so["processes"]:
        ck.fail("self_overhead has no process")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("truth", nargs="+")
    a = ap.parse_args()
    rep = json.load(open(a.report))
    ck = Checker()
    for path in a.truth:
        calls, summary = load(path)
        check_rank(ck, rep, calls, summary)
    check_overhead(ck, rep)
    for f in ck.failures[:20]:
        print("  FAIL:", f)
    recall = 100.0 * ck.found / ck.planted if ck.planted else 100.0
    precision = 100.0 * ck.true_flags / ck.flagged if ck.flagged else 100.0
    print(f"  {ck.planted} planted, {ck.found} found (recall {recall:.1f} %), {ck.flagged} "
          f"flagged, {ck.true_flags} planted (precision {precision:.1f} %), "
          f"{len(ck.failures)} mismatches")
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
