#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Compare the GPU figures of `specprobe report --json --gpu` with specsim-server's truth.

  check_gpu.py [--allow-null] TRUTH... REPORT.json    (TRUTH: a truth file or a folder of them)
  check_gpu.py --self-test

The truth needs its `gpu` lines (specsim-server --gpu-truth, or on by itself under
CUDA_INJECTION64_PATH). From them alone, by docs/gpu-timeline.md ("What is reported"):
- each execution (graph, kernel, copy, memset) belongs to its launching call: the
  call of its thread whose before/after bracket holds the time it was queued;
- that call lies in a cycle and phase by the cycle_bounds lines: a boundary at a
  call's entry puts the call itself after it, one at its return before it; where
  deferred accept overlaps extend, extend wins (docs/report-json.md);
- per phase: last end, busy = the union of its executions, start = when the GPU could
  start it: the later of the return of the thread's call before the phase's first
  launch (among the calls the model keeps: launches, copies, syncs, frees, event
  records, collectives) and the end of the work queued before on that launch's
  stream, not after its first execution's start. Where that return decides, the
  truth knows it only within the call's before/after bracket, and checks the range;
- cycle window [first execution's start, next cycle's first start), the last cycle
  to its last end; idle = the window less the union of all the process's executions;
- a flagged sync's gpu_idle_caused_ns: the gap of that union holding its return_ns,
  0 when busy; a cycle's idle_after_flagged_ns sums those of its flagged syncs;
- top-level gpu.matched: the executions whose launching call lies in the recording.
Every value is compared exactly, in ns. Report cycles are matched to truth cycles
as check_report.py does: the report's start_ns inside the first draft launch's bracket.
"""
import argparse
import bisect
import json
import os
import sys

PHASES = ("draft", "verify", "accept", "extend")
# where deferred accept overlaps extend, extend takes the launch
PRECEDENCE = ("draft", "verify", "extend", "accept")
EXEC_KINDS = {"graph", "kernel", "copy", "memset"}


def edge_key(ref):
    """A call c lies at or after this boundary when c.before >= the key."""
    return ref["before"] if ref["edge"] == "entry" else ref["after"]


def union(intervals):
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def covered(merged, lo, hi):
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in merged)


def gap_at(merged, t):
    """The idle gap holding t: 0 inside an execution, None with nothing on one side."""
    starts = [s for s, _ in merged]
    i = bisect.bisect_right(starts, t) - 1
    if i >= 0 and merged[i][0] <= t < merged[i][1]:
        return 0
    if i < 0 or i + 1 >= len(merged):
        return None
    return merged[i + 1][0] - merged[i][1]


# calls the model keeps as loop events (user/analysis/model.c), by base name
MODEL_PREFIXES = ("cuLaunchKernel", "cuLaunchCooperativeKernel", "cuLaunchHostFunc",
                  "cuGraphLaunch", "cuMemcpy", "cuMemset", "cuCtxSynchronize",
                  "cuStreamSynchronize", "cuEventSynchronize", "cuMemFree", "cuEventRecord",
                  "nccl")
NOT_MODEL = ("cuMemFreeHost", "ncclComm", "ncclGet", "ncclGroup")


def model_call(c):
    base = c.get("base", c["name"])
    return (c.get("depth", 0) == 0 and base.startswith(MODEL_PREFIXES)
            and not base.startswith(NOT_MODEL))


def ready_range(r, execs, first_start):
    """[lo, hi] for a phase's start: when the GPU could start it (see the top)."""
    x0 = min((x for x in execs if x["call"]), key=lambda x: x["call"]["before"], default=None)
    if x0 is None:
        return first_start, first_start
    call = x0["call"]
    calls = r["model_calls"].get(call["tid"], [])
    i = bisect.bisect_left([c["before"] for c in calls], call["before"])
    lo, hi = call["before"], call["after"]    # no call before: its own entry
    if i > 0 and calls[i - 1]["before"] >= r.get("attach", 0):   # one the recording has
        lo, hi = calls[i - 1]["before"], calls[i - 1]["after"]
    queue = r["by_stream"].get((call["tid"], x0.get("stream")), ([], []))
    j = bisect.bisect_left(queue[0], call["before"])
    if j > 0:   # the work queued last before it on its stream: its call's executions
        end = queue[1][j - 1]
        lo, hi = max(lo, end), max(hi, end)
    return min(lo, first_start), min(hi, first_start)


def phase_figures(r, execs):
    if not execs:
        return {"start_ns": 0, "end_ns": 0, "busy_ns": 0, "start_range": (0, 0)}
    merged = union((x["start"], x["end"]) for x in execs)
    first = min(x["start"] for x in execs)
    return {"start_range": ready_range(r, execs, first), "end_ns": max(x["end"] for x in execs),
            "busy_ns": sum(e - s for s, e in merged)}


def truth_files(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p)
                            if os.path.isfile(os.path.join(p, f)))
        else:
            files.append(p)
    return files


LAUNCHES = ("cuLaunchKernel", "cuLaunchKernelEx", "cuGraphLaunch")


def ref_of(call):
    return {"name": call["name"], "edge": "entry", "before": call["before"],
            "after": call["after"]}


def torch_starts(bounds, by_tid):
    """--torch: a cycle starts at its first draft step's position kernel, made after the
    last sync of the iteration before (torch.c), not at the step's graph launch."""
    for i, b in enumerate(bounds):
        calls = [c for c in by_tid.get(b["tid"], []) if c.get("depth", 0) == 0]
        before = [c for c in calls if c["before"] < b["start"]["before"]]
        syncs = [c for c in before if "Synchronize" in c["name"]]
        after = syncs[-1]["after"] if syncs else 0
        first = next((c for c in before if c["before"] >= after and c["name"] in LAUNCHES),
                     None)
        if first is None:
            continue
        old, new = b["start"]["before"], ref_of(first)
        b["start"] = b["phases"]["draft"]["start"] = new
        if i:
            prev = bounds[i - 1]
            if prev["end"]["before"] == old:
                prev["end"] = new
            for ph in prev["phases"].values():
                if ph.get("end") and ph["end"]["before"] == old:
                    ph["end"] = new
    # with no extend launch the report ends the last cycle at its accept sync's return
    if bounds:
        last = bounds[-1]
        verify = last["phases"]["verify"]["start"]["before"]
        calls = [c for c in by_tid.get(last["tid"], []) if c.get("depth", 0) == 0]
        accept = next((c for c in calls if c["before"] > verify and "Synchronize" in c["name"]),
                      None)
        if accept:
            last["end"] = dict(ref_of(accept), edge="return")


def load_rank(lines):
    calls = [l for l in lines if "before" in l and "name" in l]
    summary = next((l for l in lines if l.get("summary")), None)
    if summary is None:
        return None
    execs = [l for l in lines if l.get("gpu") in EXEC_KINDS]
    bounds = sorted((l for l in lines if "cycle_bounds" in l), key=lambda b: b["cycle_bounds"])
    by_tid = {}
    for c in calls:
        by_tid.setdefault(c["tid"], []).append(c)
    if summary.get("torch"):
        torch_starts(bounds, by_tid)
    for x in execs:
        brackets = [c for c in by_tid.get(x["tid"], []) if c["before"] <= x["queued"] <= c["after"]]
        top = [c for c in brackets if c.get("depth", 0) == 0]
        x["call"] = (top or brackets or [None])[0]
    model_calls = {}
    for c in calls:
        if model_call(c):
            model_calls.setdefault(c["tid"], []).append(c)
    for v in model_calls.values():
        v.sort(key=lambda c: c["before"])
    # per thread and stream: each launching call's entry and its executions' last end
    ends = {}
    for x in execs:
        if x["call"]:
            key = (x["call"]["tid"], x.get("stream"), x["call"]["before"])
            ends[key] = max(ends.get(key, 0), x["end"])
    by_stream = {}
    for (tid, stream, before), end in sorted(ends.items(), key=lambda kv: kv[0][2]):
        q = by_stream.setdefault((tid, stream), ([], []))
        q[0].append(before)
        q[1].append(end)
    return {"pid": summary["pid"], "rank": summary.get("rank", 0), "calls": calls,
            "model_calls": model_calls, "by_stream": by_stream,
            "execs": execs, "bounds": bounds,
            "timeline": union((x["start"], x["end"]) for x in execs)}


def load_truth(paths):
    ranks = []
    for path in truth_files(paths):
        try:
            lines = [json.loads(l) for l in open(path) if l.strip()]
        except (OSError, ValueError) as e:
            sys.exit(f"check_gpu: {path}: not a truth file ({e})")
        r = load_rank(lines)
        if r is not None:
            ranks.append(r)
    if not ranks:
        sys.exit("check_gpu: no truth file with a summary line")
    if not any(r["execs"] for r in ranks):
        sys.exit("check_gpu: the truth has no gpu lines: run the server with --gpu-truth")
    return ranks


def in_span(call, lo, hi):
    return edge_key(lo) <= call["before"] and (hi is None or call["before"] < edge_key(hi))


def expected_cycles(r):
    """Per truth cycle: its start ref and the GPU figures the report must give."""
    cycles = []
    for b in r["bounds"]:
        mine = [x for x in r["execs"] if x["call"] and x["call"]["tid"] == b["tid"]
                and in_span(x["call"], b["start"], b["end"])]
        by_phase = {p: [] for p in PHASES}
        for x in mine:
            for p in PRECEDENCE:
                ph = b["phases"][p]
                if in_span(x["call"], ph["start"], ph.get("end")):
                    by_phase[p].append(x)
                    break
        cycles.append({"index": b["cycle_bounds"], "start": b["start"], "tid": b["tid"],
                       "execs": mine,
                       "phases": {p: phase_figures(r, by_phase[p]) for p in PHASES}})
    for i, cy in enumerate(cycles):
        if not cy["execs"]:
            cy["window"] = None
            continue
        lo = min(x["start"] for x in cy["execs"])
        nxt = cycles[i + 1]["execs"] if i + 1 < len(cycles) else []
        hi = min(x["start"] for x in nxt) if nxt else max(x["end"] for x in cy["execs"])
        cy["window"] = (lo, hi)
        cy["idle_ns"] = (hi - lo) - covered(r["timeline"], lo, hi)
    return cycles


class Checker:
    def __init__(self):
        self.failures, self.compared = [], 0

    def same(self, got, want, what):
        self.compared += 1
        if got != want:
            self.failures.append(f"{what}: {got} != {want}")

    def within(self, got, lohi, what):
        lo, hi = lohi
        if lo == hi:
            self.same(got, lo, what)
            return
        self.compared += 1
        if got is None or not lo <= got <= hi:
            self.failures.append(f"{what}: {got} not in [{lo}, {hi}]")


def inside(ts, ref):
    return ts is not None and ref["before"] <= ts <= ref["after"]


def check_syncs(ck, rep, r):
    """Expected gpu_idle_caused_ns per flagged sync of the rank, by (tid, ts)."""
    caused = {}
    for s in rep.get("syncs", []):
        if s.get("pid") != r["pid"] or not s.get("flagged"):
            continue
        want = gap_at(r["timeline"], s["return_ns"]) if s.get("return_ns") is not None else None
        where = f"pid {r['pid']} sync {s.get('call')} at {s.get('ts')}"
        if want is None:
            ck.same(s.get("gpu_idle_caused_ns"), None, f"{where}: gpu_idle_caused_ns")
            continue
        ck.same(s.get("gpu_idle_caused_ns"), want, f"{where}: gpu_idle_caused_ns")
        key = (s.get("tid"), s.get("cycle"))
        caused[key] = caused.get(key, 0) + want
    return caused


def check_cycles(ck, rep, r, allow_null):
    r["attach"] = rep.get("recording", {}).get("attach_done_ns") or 0
    caused = check_syncs(ck, rep, r)
    truth = expected_cycles(r)
    for c in sorted((c for c in rep.get("cycles", []) if c["pid"] == r["pid"]),
                    key=lambda c: c["start_ns"]):
        where = f"rank {r['rank']} report cycle {c['index']}"
        cy = next((t for t in truth if t["tid"] == c["tid"] and inside(c["start_ns"], t["start"])),
                  None)
        if cy is None:
            ck.same(None, "a truth cycle", f"{where}: no truth cycle starts at {c['start_ns']}")
            continue
        gpu = c.get("gpu")
        if gpu is None:
            if not allow_null:
                ck.same(None, "GPU figures", f"{where} (truth {cy['index']}): gpu")
            continue
        if cy["window"] is None:
            ck.same(gpu, None, f"{where}: gpu for a cycle with no execution")
            continue
        ck.same(gpu["start_ns"], cy["window"][0], f"{where}: gpu.start_ns")
        ck.same(gpu["end_ns"], cy["window"][1], f"{where}: gpu.end_ns")
        ck.same(gpu["idle_ns"], cy["idle_ns"], f"{where}: gpu.idle_ns")
        ck.same(gpu["idle_after_flagged_ns"], caused.get((c["tid"], c["index"]), 0),
                f"{where}: gpu.idle_after_flagged_ns")
        for p in PHASES:
            for k in ("end_ns", "busy_ns"):
                ck.same(gpu["phases"][p][k], cy["phases"][p][k], f"{where}: gpu.{p}.{k}")
            ck.within(gpu["phases"][p]["start_ns"], cy["phases"][p]["start_range"],
                      f"{where}: gpu.{p}.start_ns")


def phase_sums(ck, node, where="report"):
    """Every phase mean with a wait: busy + wait = span (the GPU waiting inside it)."""
    if isinstance(node, dict):
        if {"busy_ns", "wait_ns", "span_ns"} <= node.keys():
            want = max(node["span_ns"] - node["busy_ns"], 0)
            ck.same(round(node["wait_ns"], 0), round(want, 0), f"{where}: wait_ns")
        for k, v in node.items():
            phase_sums(ck, v, f"{where}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            phase_sums(ck, v, f"{where}[{i}]")


def check_totals(ck, rep, ranks, allow_null=False):
    phase_sums(ck, rep)
    gpu = rep.get("gpu")
    if gpu is None:
        ck.same(None, "an object", "top-level gpu")
        return
    attach = rep["recording"]["attach_done_ns"] or 0
    last = rep["recording"]["last_ns"] or 0
    pids = {r["pid"] for r in ranks}
    sure = maybe = 0
    whole = True
    for r in ranks:
        for x in r["execs"]:
            c = x["call"]
            if c is None:
                continue
            if c["before"] >= attach and c["after"] <= last:
                sure += 1
            elif c["after"] >= attach and c["before"] <= last:
                maybe += 1      # the mark or the end fell inside its bracket
            else:
                whole = False
    ck.compared += 1
    if allow_null:
        # records were lost: every call is matched or counted unmatched, none twice
        if not (gpu["matched"] <= sure + maybe and
                gpu["matched"] + gpu["unmatched_calls"] >= sure):
            ck.failures.append(f"gpu.matched {gpu['matched']} + unmatched_calls "
                               f"{gpu['unmatched_calls']} do not account for {sure} calls")
        return
    if not sure <= gpu["matched"] <= sure + maybe:
        ck.failures.append(f"gpu.matched {gpu['matched']} not in [{sure}, {sure + maybe}]")
    ck.same(gpu["records"], gpu["matched"] + gpu["unmatched_records"],
            "gpu.records = matched + unmatched_records")
    if whole and not maybe and all(p in pids for p in {c["pid"] for c in rep["cycles"]}):
        ck.same(gpu["unmatched_records"], 0, "gpu.unmatched_records (whole run recorded)")
        ck.same(gpu["unmatched_calls"], 0, "gpu.unmatched_calls (whole run recorded)")


def check(ranks, rep, allow_null=False):
    ck = Checker()
    for r in ranks:
        check_cycles(ck, rep, r, allow_null)
    check_totals(ck, rep, ranks, allow_null)
    return ck


# ---- self-test: a synthetic truth and the report that fits it, by hand ----

def _ref(c, edge):
    return {"name": c["name"], "edge": edge, "before": c["before"], "after": c["after"]}


def _synthetic():
    def call(name, b, a, cycle, phase):
        return {"name": name, "base": name, "before": b, "after": a, "tid": 10, "pid": 100,
                "depth": 0, "cycle": cycle, "phase": phase}
    c = [call("cuGraphLaunch", 1000, 1010, 0, "draft"),
         call("cuGraphLaunch", 1100, 1110, 0, "verify"),
         call("cuStreamSynchronize", 1200, 1900, 0, "accept"),
         call("cuGraphLaunch", 2000, 2010, 0, "extend"),
         call("cuGraphLaunch", 3000, 3010, 1, "draft"),
         call("cuGraphLaunch", 3100, 3110, 1, "verify"),
         call("cuStreamSynchronize", 3200, 3800, 1, "accept"),
         call("cuGraphLaunch", 3900, 3910, 1, "extend")]
    bounds = []
    for i, (d, v, s, x, end) in enumerate([(c[0], c[1], c[2], c[3], _ref(c[4], "entry")),
                                           (c[4], c[5], c[6], c[7], _ref(c[7], "return"))]):
        bounds.append({"cycle_bounds": i, "rank": 0, "pid": 100, "tid": 10,
                       "start": _ref(d, "entry"), "end": end,
                       "phases": {"draft": {"start": _ref(d, "entry"), "end": _ref(v, "entry")},
                                  "verify": {"start": _ref(v, "entry"), "end": _ref(v, "return")},
                                  "accept": {"start": _ref(v, "return"), "end": _ref(s, "return")},
                                  "extend": {"start": _ref(s, "return"), "end": end}}})
    spans = [(1005, 1005, 1400), (1105, 1400, 1800), (2005, 2005, 2500), (3005, 3005, 3300),
             (3105, 3300, 3700), (3905, 3905, 4000)]
    gpu = [{"gpu": "graph", "tid": 10, "queued": q, "start": s, "end": e} for q, s, e in spans]
    gpu.append({"gpu": "host", "tid": 10, "queued": 1006, "start": 1400, "end": 1400})
    return c + bounds + gpu + [{"summary": True, "pid": 100, "rank": 0}]


def _report():
    def ph(s, e, b):
        return {"start_ns": s, "end_ns": e, "busy_ns": b}
    cyc = [{"pid": 100, "tid": 10, "index": 0, "start_ns": 1004,
            "gpu": {"start_ns": 1005, "end_ns": 3005, "idle_ns": 710, "idle_after_flagged_ns": 205,
                    "phases": {"draft": ph(1005, 1400, 395), "verify": ph(1400, 1800, 400),
                               "accept": ph(0, 0, 0), "extend": ph(1850, 2500, 495)}}},
           {"pid": 100, "tid": 10, "index": 1, "start_ns": 3002,
            "gpu": {"start_ns": 3005, "end_ns": 4000, "idle_ns": 205, "idle_after_flagged_ns": 205,
                    "phases": {"draft": ph(2500, 3300, 295), "verify": ph(3300, 3700, 400),
                               "accept": ph(0, 0, 0), "extend": ph(3750, 4000, 95)}}}]
    syncs = [{"pid": 100, "tid": 10, "cycle": 0, "call": "cuStreamSynchronize", "ts": 1201,
              "return_ns": 1850, "flagged": True, "gpu_idle_caused_ns": 205},
             {"pid": 100, "tid": 10, "cycle": 1, "call": "cuStreamSynchronize", "ts": 3201,
              "return_ns": 3750, "flagged": True, "gpu_idle_caused_ns": 205},
             {"pid": 100, "tid": 10, "cycle": 1, "call": "cuStreamSynchronize", "ts": 3201,
              "return_ns": 3500, "flagged": False, "gpu_idle_caused_ns": 0}]
    return {"recording": {"attach_done_ns": 0, "last_ns": 3905}, "cycles": cyc, "syncs": syncs,
            "gpu": {"records": 6, "matched": 6, "unmatched_records": 0, "unmatched_calls": 0}}


def self_test():
    ranks = [load_rank(_synthetic())]
    good = check(ranks, _report())
    ok = not good.failures
    for f in good.failures:
        print("  self-test: unexpected:", f)
    bad = _report()
    bad["cycles"][0]["gpu"]["phases"]["verify"]["busy_ns"] += 1
    bad["syncs"][1]["gpu_idle_caused_ns"] = 0
    bad["gpu"]["matched"] = 5
    bad["cycles"][1]["gpu"]["phases"]["extend"]["start_ns"] = 3801   # after the sync's return
    caught = check(ranks, bad).failures
    ok = ok and len(caught) == 4   # busy, the sync, matched, extend's start
    assert gap_at(ranks[0]["timeline"], 1500) == 0 and gap_at(ranks[0]["timeline"], 1800) == 205
    print(f"check_gpu self-test: {good.compared} comparisons, {len(caught)} "
          f"errors found (4 planted): {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--allow-null", action="store_true",
                    help="a cycle may give no GPU figures (records were dropped)")
    ap.add_argument("paths", nargs="*", metavar="TRUTH... REPORT.json")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if len(a.paths) < 2:
        ap.error("give the truth (files or a folder) and the report")
    try:
        rep = json.load(open(a.paths[-1]))
    except (OSError, ValueError) as e:
        sys.exit(f"check_gpu: {a.paths[-1]}: cannot read the report ({e})")
    ck = check(load_truth(a.paths[:-1]), rep, a.allow_null)
    for f in ck.failures[:20]:
        print("  FAIL:", f)
    print(f"  {len(rep.get('cycles', []))} cycles, {ck.compared} comparisons, "
          f"{len(ck.failures)} mismatches")
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
