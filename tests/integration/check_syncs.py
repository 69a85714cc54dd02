#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Compare the sync verdicts of `specprobe report --json` with specsim's planted calls.

  check_syncs.py --report REPORT.json [--counts] [--text REPORT.txt] TRUTH...

Calls planted with --plant carry "tag":"planted:KIND" (or "unknown:KIND") and "position"
in the truth; a poll plant is a spin of queries, the last one ready. Every sync in the
report has a "verdict": flagged, accept, no-wait, unknown, outside or clean. Checks, for
the calls made between the recording's attach mark and its last call:
- recall: every planted call is in syncs[] with the kind and the position it was planted
  with, and with a verdict it may have; "flagged" where nothing else may be. syncs[] lists
  only syncs: a plant that may turn out no sync (legacy-stream work that waited on nothing,
  an async copy of unknown host memory that showed no wait) may be absent, counted in
  could_sync[] instead:
  * reported outside the loop: verdict "outside" (a capture-sync is flagged anywhere);
  * a wait whose truth says "stream_busy": false found nothing to wait for: flagged or
    not ("no-wait", "clean"); the report cannot always tell;
  * pageable-copy, a D2H into malloc'd memory: known pageable when the tracer saw every
    pinning (traced from cuInit), so flagged "pageable-copy". Made before attach, it is
    of unknown kind: flagged "pageable-copy" only when measured (host_from "measured",
    at least 50 us blocked): so flagged when its stream had work (stream_busy) and its
    bracket, which holds both probe hits, is 200 us or more; not flagged ("unknown",
    "no-wait") under 50 us; either in between or on an idle stream (the tracer itself
    can stretch a call past 50 us);
  * unknown-host, a D2H into pinned memory made before attach: the maps snapshot says
    pinned, so no sync, or one not flagged ("clean", "no-wait"), never "unknown";
  * legacy without serialises_with: a legacy-stream launch behind no other blocking
    stream's work: "clean" or "no-wait" ("unknown" too when streams were made before
    attach), never flagged;
  * legacy with serialises_with (the side-stream plants): the loop's first legacy call
    behind side-stream work. Flagged "legacy" when the tracer saw that stream made,
    else (unknown:legacy, a stream made before the gate, or before a mid-run attach)
    verdict "unknown", not flagged; serialises_with equals the report's either way.
- precision: every flagged sync is a planted call the report may flag; no clean:* call is
  flagged, and clean syncs wait for nothing; each cycle's own accept sync (its
  cycle_bounds accept end) has verdict "accept";
- consistency: verdict "flagged" exactly when flagged is true; unknown_syncs counts the
  "unknown" verdicts; host_memory agrees with the truth: pinned (host_from "traced" when
  allocated after attach, else "maps") where a cuMemHostAlloc/cuMemAllocHost made it,
  otherwise pageable or unknown, never unknown when traced from cuInit;
- counts (--counts): syncs[] holds sync_calls entries, each is_sync; could_sync[] adds up
  to the legacy-stream work and unknown-host copies that were no syncs; from the attach
  mark on, the syncs are the truth's one by one, and the launches, copies and memsets, the
  legacy-stream work and the quiet host copies the truth's (exact where the recording holds
  no call from before the mark, else within the truth's calls made while attaching);
- text (--text): the text report's lead lines give the JSON's counts, each out of its own
  whole (calls; launches, copies and syncs of them; legacy-stream work of the launches and
  copies; flagged of the syncs);
- starvation bounds: context syncs have one, stream syncs exactly when no other stream
  had work in flight, and each equals the truth's return-to-next-launch interval within
  the brackets of the two calls;
- self_overhead: calls per kind add up to the process's calls, and the CPU time added is
  those calls times the calibrated cost.
A report without the verdict fields fails at once: it predates this contract.
"""
import argparse
import bisect
import collections
import json
import sys

LAUNCHES = {"cuGraphLaunch", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchHostFunc",
            "ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
            "ncclReduce", "ncclSend", "ncclRecv"}
VERDICTS = {"flagged", "accept", "no-wait", "unknown", "outside", "clean", "step"}
WAITS_NS = 50000        # a copy of unknown memory that blocked this long is pageable
NEAR_DONE_NS = 20000    # a wait this short, probes included, may have found its work done
QUIET = {"clean", "no-wait"}


def load(path):
    lines = [json.loads(l) for l in open(path)]
    calls = sorted((l for l in lines if "before" in l), key=lambda c: c["before"])
    summary = next(l for l in lines if l.get("summary"))
    bounds = [l for l in lines if "cycle_bounds" in l]
    return calls, summary, bounds


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
        elif tag.startswith(("planted:", "unknown:")):
            out.append(c)
    return out


def inside(ts, c):
    return ts is not None and c["before"] <= ts <= c["after"]


class Index:
    """Items by name in time order, for look-ups by time."""

    def __init__(self, items, name, ts):
        self.items = collections.defaultdict(list)
        for x in items:
            self.items[name(x)].append(x)
        self.times = {}
        for k, v in self.items.items():
            v.sort(key=ts)
            self.times[k] = [ts(x) for x in v]

    def between(self, name, lo, hi):
        times = self.times.get(name, [])
        return self.items[name][bisect.bisect_left(times, lo):bisect.bisect_right(times, hi)]

    def before(self, name, ts, n):
        """The last n items at or before ts."""
        i = bisect.bisect_right(self.times.get(name, []), ts)
        return self.items[name][max(0, i - n):i]


class Checker:
    def __init__(self):
        self.failures = []
        self.planted = self.found = self.flagged = self.true_flags = self.quiet = 0

    def fail(self, what):
        self.failures.append(what)


class Want:
    """What the report should say about one planted call; kind None: no sync at all."""

    def __init__(self, kind, positions, verdicts, serialises=None):
        self.kind, self.positions, self.verdicts = kind, positions, verdicts
        self.serialises = serialises

    def may_be_quiet(self):
        """Legacy-stream work that waited on nothing, or a copy of unknown host memory that
        showed no wait, is no sync: not in syncs[]."""
        kinds = self.kind if isinstance(self.kind, set) else {self.kind}
        return bool(kinds & {"legacy", "unknown-host"}) and "no-wait" in self.verdicts


class Rank:
    """One truth file against the report: what the tracer could know at attach."""

    def __init__(self, rep, calls, summary, bounds):
        self.pid = summary["pid"]
        self.summary, self.bounds = summary, bounds
        self.attach = rep["recording"]["attach_done_ns"]
        self.attach_start = rep["recording"]["attach_start_ns"]
        self.last = rep["recording"]["last_ns"] or 0
        self.syncs = [s for s in rep["syncs"] if s["pid"] == self.pid]
        self.calls = calls
        self.recorded = [c for c in calls
                         if c["before"] >= self.attach and c["after"] <= self.last]
        # traced from cuInit: every pinning and every stream creation was seen
        self.init_seen = any(c["name"] == "cuInit" and c["before"] >= self.attach for c in calls)
        self.last_cycle = summary["cycles_run"] - 1
        self.cut_cycles = {c["cycle"] for c in calls
                           if c.get("cycle", -1) >= 0 and c["before"] < self.attach}
        self.created = {c["args"]["stream"]: c for c in calls if c["name"] == "cuStreamCreate"}
        self.pinned = [c for c in calls if c["name"] in ("cuMemHostAlloc", "cuMemAllocHost_v2")
                       and c["result"] == 0]
        self.sync_index = Index(self.syncs, lambda s: s["call"], lambda s: s["ts"])
        self.call_index = Index(self.recorded, lambda c: c["base"], lambda c: c["before"])

    def syncs_of(self, call):
        return self.sync_index.between(call["base"], call["before"], call["after"])

    def truth_of(self, s):
        """The recorded calls a sync was made in (one thread makes them one at a time)."""
        return [c for c in self.call_index.before(s["call"], s["ts"], 8) if inside(s["ts"], c)]

    def seen_made(self, stream):
        c = self.created.get(stream)
        return c is not None and c["before"] >= self.attach

    def pinned_alloc(self, host, at):
        """The allocation that pinned host at time at, or None: pageable."""
        for c in self.pinned:
            start, size = c["args"]["ptr"], c["args"]["bytes"]
            if start <= host < start + size and c["after"] <= at:
                return c
        return None

    def positions(self, call):
        pos = call["position"]
        if pos == "outside" and call["cycle"] >= 0:
            pos = "extend"      # specsim: an outside plant in the loop lies in extend
        positions = {pos}
        tail = "accept" if self.summary.get("torch") else "extend"
        if pos == tail and call["cycle"] == self.last_cycle:
            positions.add("outside")        # past the end of the loop's last launch
        if call["cycle"] in self.cut_cycles:
            positions.add("outside")        # its cycle began before the recording did
        return positions


def want_copy(rk, call, kind, positions):
    if kind == "unknown-host":
        return Want(None, positions, QUIET)
    # pageable-copy
    if rk.init_seen:
        # known pageable: it waits for its stream, which may have had nothing queued
        busy = call.get("stream_busy") is not False
        return Want("pageable-copy", positions, {"flagged"} if busy else {"flagged"} | QUIET)
    # of unknown kind: flagged when measured; the report's blocked time lies in the bracket
    bracket, either = call["after"] - call["before"], {"pageable-copy", "unknown-host"}
    if bracket < WAITS_NS:
        return Want(either, positions, {"unknown", "no-wait"})
    if call.get("stream_busy") and bracket >= 4 * WAITS_NS:
        return Want("pageable-copy", positions, {"flagged"})
    # it blocked 50 us or more with nothing queued: under the tracer, or by its own size
    return Want(either, positions, {"flagged", "unknown", "no-wait"})


def want_legacy(rk, call, positions):
    stream = call.get("serialises_with")
    if stream is None:
        quiet = QUIET if rk.init_seen else QUIET | {"unknown"}
        return Want("legacy", positions, quiet)
    if rk.seen_made(stream):
        return Want("legacy", positions, {"flagged"}, stream)
    return Want("legacy", positions, {"unknown"}, stream)


def expected(rk, call):
    kind = call["tag"].split(":", 1)[1]
    positions = rk.positions(call)
    if kind in ("pageable-copy", "unknown-host"):
        w = want_copy(rk, call, kind, positions)
    elif kind == "legacy":
        w = want_legacy(rk, call, positions)
    elif kind == "capture-sync":
        w = Want("capture-sync", positions, {"flagged"})
    elif call.get("stream_busy") is False:
        w = Want(kind, positions, {"flagged"} | QUIET)         # it found nothing to wait for
    elif call["after"] - call["before"] < NEAR_DONE_NS:
        # busy at the call, done before the wait began: back as fast as a probe returns
        w = Want(kind, positions, {"flagged", "no-wait"})
    else:
        w = Want(kind, positions, {"flagged"})
    return w


def verdicts_at(want, s):
    """Outside the loop a sync is "outside", whatever it would be in it; a capture-sync
    is flagged anywhere."""
    if s["position"] == "outside" and want.kind != "capture-sync":
        return {"outside"}
    return want.verdicts


def kind_ok(want, s):
    kinds = want.kind if isinstance(want.kind, set) else {want.kind}
    return s["kind"] in kinds


def check_serialises(ck, where, want, s):
    got = s.get("serialises_with")
    got = int(got, 16) if isinstance(got, str) else got
    if want.serialises is not None and got != want.serialises:
        ck.fail(f"{where}: serialises_with {s.get('serialises_with')}, want {want.serialises:#x}")


def check_plant(ck, rk, call, planted_ts):
    want = expected(rk, call)
    got = rk.syncs_of(call)
    where = f"pid {rk.pid} {call['tag']}@{call['position']} cycle {call['cycle']}"
    if want.kind is None:
        for s in got:
            if s["flagged"] or s.get("verdict") not in want.verdicts | {"outside"}:
                ck.fail(f"{where}: pinned memory, yet {s['kind']} verdict {s.get('verdict')}")
        return
    ck.planted += 1
    if not got and want.may_be_quiet():
        ck.found += 1
        ck.quiet += 1
        return
    if len(got) != 1:
        ck.fail(f"{where}: {len(got)} syncs in the report at {call['before']}")
        return
    s = got[0]
    if s["flagged"]:
        planted_ts.add(s["ts"])
    if not kind_ok(want, s) or s["position"] not in want.positions:
        ck.fail(f"{where}: reported {s['kind']}@{s['position']}, "
                f"want {want.kind}@{'|'.join(sorted(want.positions))}")
        return
    verdicts = verdicts_at(want, s)
    if s.get("verdict") not in verdicts:
        ck.fail(f"{where}: verdict {s.get('verdict')}, want {'|'.join(sorted(verdicts))}")
        return
    check_serialises(ck, where, want, s)
    ck.found += 1
    ck.quiet += verdicts != {"flagged"}


def check_clean(ck, rk):
    """clean:* calls are never flagged; clean syncs wait for nothing. An event recorded
    before attach is synced on "unknown": the tool cannot know what it waits for."""
    for call in rk.recorded:
        tag = call.get("tag") or ""
        if not tag.startswith("clean:"):
            continue
        quiet = QUIET | {"outside"}
        if tag == "clean:event" and not rk.init_seen:
            quiet = quiet | {"unknown"}
        for s in rk.syncs_of(call):
            syncs = tag in ("clean:event", "clean:stream")
            if s["flagged"] or (syncs and s.get("verdict") not in quiet):
                ck.fail(f"pid {rk.pid} {tag} {call['name']} cycle {call['cycle']}: "
                        f"{s['kind']} verdict {s.get('verdict')}")


def check_accepts(ck, rk):
    """Each cycle's own accept sync (the cycle_bounds accept end) has verdict accept."""
    by_key = {(c["name"], c["before"], c["after"]): c for c in rk.recorded}
    for b in rk.bounds:
        ref, i = b["phases"]["accept"]["end"], b["cycle_bounds"]
        call = by_key.get((ref["name"], ref["before"], ref["after"]))
        if call is None or i in rk.cut_cycles or call["phase"] == "teardown":
            continue
        for s in rk.syncs_of(call):
            if s.get("verdict") != "accept" or s["flagged"]:
                ck.fail(f"pid {rk.pid} cycle {i} accept sync: {s['kind']} verdict "
                        f"{s.get('verdict')}, flagged {s['flagged']}")


def check_steps(ck, rk):
    """An eager draft's read of each step's token (the truth's draft-token syncs) has
    verdict step, inside the counted cycles; no other sync has it."""
    steps = 0
    for call in rk.recorded:
        is_step = call.get("tag") == "draft-token" and call["base"] == "cuStreamSynchronize"
        for s in rk.syncs_of(call):
            if not is_step and s.get("verdict") == "step":
                ck.fail(f"pid {rk.pid} {call['name']} {call.get('tag')} cycle "
                        f"{call['cycle']}: verdict step")
            elif is_step and s["cycle"] is not None:
                steps += 1
                if s.get("verdict") != "step":
                    ck.fail(f"pid {rk.pid} cycle {call['cycle']} draft step read: "
                            f"verdict {s.get('verdict')}")
    return steps


def host_of(call):
    args = call.get("args", {})
    return args.get("dst_host", args.get("src_host"))


def check_host(ck, rk, s, call):
    """host_memory against the truth's pinned allocations and the attach time."""
    host, mem = host_of(call), s.get("host_memory")
    if host is None or mem is None:
        return
    where = f"pid {rk.pid} {call['name']} {call.get('tag')} at {s['ts']}"
    alloc = rk.pinned_alloc(host, call["before"])
    if alloc is not None:
        came = "traced" if alloc["before"] >= rk.attach else "maps"
        if mem != "pinned" or s.get("host_from") != came:
            ck.fail(f"{where}: pinned, made {came}, reported {mem} from {s.get('host_from')}")
    elif mem == "pinned" or (mem == "unknown" and rk.init_seen):
        ck.fail(f"{where}: pageable, reported {mem}")
    # measured as pageable: it blocked; flagged, unless it is the loop's own read or outside
    elif s.get("host_from") == "measured" and (s["blocked_ns"] < WAITS_NS or
                                               (not s["flagged"] and
                                                s["verdict"] not in ("outside", "accept"))):
        ck.fail(f"{where}: measured pageable, blocked {s['blocked_ns']} ns")


def check_flags(ck, rk, planted_ts):
    for s in rk.syncs:
        if not (rk.attach <= s["ts"] <= rk.last):
            continue
        truth = rk.truth_of(s)
        if truth:
            check_host(ck, rk, s, truth[0])
        if (s.get("verdict") == "flagged") != bool(s["flagged"]):
            ck.fail(f"pid {rk.pid} sync at {s['ts']}: verdict {s.get('verdict')}, "
                    f"flagged {s['flagged']}")
        if not s["flagged"]:
            continue
        ck.flagged += 1
        if s["ts"] in planted_ts:
            ck.true_flags += 1
            continue
        tag = (truth[0].get("tag") or truth[0]["phase"]) if truth else "no truth call"
        ck.fail(f"pid {rk.pid} {s['kind']}@{s['position']} at {s['ts']} flagged: {tag}")


def check_rank(ck, rep, calls, summary, bounds):
    rk = Rank(rep, calls, summary, bounds)
    planted_ts = set()
    for call in spins(rk.recorded):
        check_plant(ck, rk, call, planted_ts)
    check_flags(ck, rk, planted_ts)
    check_clean(ck, rk)
    check_accepts(ck, rk)
    ck.steps = getattr(ck, "steps", 0) + check_steps(ck, rk)
    check_bounds(ck, rk)
    return rk


def check_bounds(ck, rk):
    # launches into a capture queue no work
    launches = [c for c in rk.recorded if c["base"] in LAUNCHES and c["depth"] == 0 and
                c["phase"] != "capture"]
    starts = [c["before"] for c in launches]
    pid = rk.pid
    for s in rk.syncs:
        truth = rk.truth_of(s)
        if not truth or s["result"] != 0:
            continue
        call = truth[0]
        i = bisect.bisect_right(starts, call["after"])
        nxt = launches[i] if i < len(launches) else None
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


def check_contract(ck, rep):
    """The verdict fields exist; unknown_syncs counts the unknown verdicts."""
    syncs = rep.get("syncs", [])
    missing = [k for k in ("verdict", "host_memory", "host_from", "serialises_with")
               if syncs and any(k not in s for s in syncs)]
    missing += [k for k in ("unknown_syncs", "could_sync") if k not in rep]
    if missing:
        ck.fail(f"report without {', '.join(missing)}: it predates the verdict contract")
        return False
    bad = {s.get("verdict") for s in syncs} - VERDICTS
    if bad:
        ck.fail(f"unknown verdicts {sorted(bad)}")
    unknown = sum(1 for s in syncs if s["verdict"] == "unknown")
    if rep["unknown_syncs"] != unknown:
        ck.fail(f"unknown_syncs {rep['unknown_syncs']}, but {unknown} syncs are unknown")
    not_syncs = sum(1 for s in syncs if not s["is_sync"])
    if not_syncs or len(syncs) != rep["sync_calls"]:
        ck.fail(f"syncs[] holds {len(syncs)} entries, {not_syncs} of them no sync, for "
                f"{rep['sync_calls']} sync calls")
    return True


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
                p["completion_calls"] * (so["entry_ps"] + so["return_ps"]) +
                p["stack_calls"] * so["stack_ps"]) / 1000
        if p["stack_calls"] > p["entry_only_calls"] + p["completion_calls"]:
            ck.fail(f"pid {p['pid']}: {p['stack_calls']} calls with a site, more than its calls")
        if abs(p["added_ns"] - want) > 1:
            ck.fail(f"pid {p['pid']}: added {p['added_ns']} ns != calls x cost {want:.0f}")
        if p["span_ns"] and abs(p["added_ms_per_s"] - want / 1e6 / (p["span_ns"] / 1e9)) > 1e-3:
            ck.fail(f"pid {p['pid']}: {p['added_ms_per_s']} ms/s != added over span")
        if p["cpu_ms_per_s"] and abs(p["percent_of_cpu"] -
                                     100 * p["added_ms_per_s"] / p["cpu_ms_per_s"]) > 1e-2:
            ck.fail(f"pid {p['pid']}: percent {p['percent_of_cpu']} != added / CPU")
    if not so["processes"]:
        ck.fail("self_overhead has no process")


def blocking(call):
    """A call that blocks by the CUDA rules: syncs, synchronous copies and memsets, alloc and
    free; a query that found its work done ends a spin (one sync), one failed by a capture is
    one too."""
    base = call["base"]
    if base in ("cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemFree",
                "cuMemAlloc"):
        return True
    if base.startswith(("cuMemcpy", "cuMemset")) and not base.endswith("Async"):
        return True
    return base in ("cuStreamQuery", "cuEventQuery") and call["result"] in (0, 900)


def legacy_work(call):
    """Work put on the legacy stream: a launch, an async copy or memset there."""
    base, stream = call["base"], call.get("args", {}).get("stream")
    work = base in LAUNCHES or (base.startswith(("cuMemcpy", "cuMemset")) and
                                base.endswith("Async"))
    return work and stream in (0, 1)


def count_rank(rk, counts, start):
    """The truth's sync calls, launches, copies and legacy-stream work, of one rank, entered
    from start to the last call. Calls the tracer can only class by how long they blocked (an
    async copy of host memory not pinned) count as the report says: a sync where syncs[]
    has it; else, no sync, a copy to the host of unknown memory that showed no wait, or
    legacy-stream work."""
    for call in rk.calls:
        tag = call.get("tag") or ""
        if call["depth"] != 0 or not start <= call["before"] <= rk.last:
            continue
        counts["launches"] += call["base"] in LAUNCHES
        counts["copies"] += call["base"].startswith(("cuMemcpy", "cuMemset"))
        if blocking(call) or call.get("serialises_with") is not None:
            counts["syncs"] += 1
        host = host_of(call)
        unpinned = host is not None and rk.pinned_alloc(host, call["before"]) is None
        if unpinned and call["base"].endswith("Async"):
            got = rk.syncs_of(call)
            if len(got) > 1:
                counts["bad"].append(f"{call['name']} {tag} at {call['before']}: "
                                     f"{len(got)} syncs")
                continue
            if got and got[0]["kind"] == "legacy" and legacy_work(call):
                count_legacy(rk, call, counts)
            elif got:
                counts["syncs"] += 1
            elif call["base"] == "cuMemcpyDtoHAsync":
                counts["quiet_host"] += 1
            elif legacy_work(call):
                count_legacy(rk, call, counts)
        elif legacy_work(call):
            count_legacy(rk, call, counts)


def count_legacy(rk, call, counts):
    """Legacy work the report could not judge (streams made before attach) counts as a sync
    of unknown verdict; the recall checks hold that verdict to where the truth allows it."""
    counts["legacy"] += 1
    got = [s for s in rk.syncs_of(call) if s["kind"] == "legacy" and not s["held_back"]]
    if call.get("serialises_with") is not None and got and got[0]["verdict"] != "unknown":
        counts["synchronised"] += 1
    elif got and got[0]["is_sync"]:
        counts["unknown"] += 1
        counts["syncs"] += call.get("serialises_with") is None


def legacy_syncs(syncs):
    """Legacy-stream work in syncs[]: it waited, or what it waited for cannot be told."""
    return [s for s in syncs if s["kind"] == "legacy" and not s["held_back"]]


def quiet_counts(rep):
    """could_sync[]'s legacy-stream work and copies of unknown host memory."""
    return tuple(sum(q["count"] for q in rep["could_sync"] if q["kind"] == kind)
                 for kind in ("legacy", "unknown-host"))


def truth_counts(ranks, start_of):
    counts = collections.Counter(bad=[])
    for rk in ranks:
        count_rank(rk, counts, start_of(rk))
    counts["quiet_legacy"] = counts["legacy"] - counts["synchronised"] - counts["unknown"]
    return counts


def check_counts(ck, rep, ranks):
    """syncs[] lists the sync calls, could_sync[] counts the calls that could have been and
    were not; from the attach mark on the syncs are the truth's one by one, the launches,
    copies and quiet calls its counts (calls made while the probes attached may be recorded:
    up to those more)."""
    counts = truth_counts(ranks, lambda rk: rk.attach)
    wide = truth_counts(ranks, lambda rk: rk.attach_start)
    for b in counts["bad"][:5]:
        ck.fail(f"counts: {b}")
    lw, syncs, rec = rep["legacy_work"], rep["syncs"], rep["recording"]
    quiet_legacy, quiet_host = quiet_counts(rep)
    total = (rep["sync_calls"], lw["calls"], lw["synchronised"] + lw["unknown"],
             rep["host_unknown_no_wait"])
    listed = (len(syncs), len(legacy_syncs(syncs)) + quiet_legacy, len(legacy_syncs(syncs)),
              quiet_host)
    if listed != total:
        ck.fail(f"sync_calls, legacy work, of it syncs, quiet host copies {total}, but syncs[] "
                f"and could_sync[] hold {listed}")
    inside = [s for rk in ranks for s in rk.syncs if rk.attach <= s["ts"] <= rk.last]
    got = (len(inside), len(legacy_syncs(inside)))
    want = (counts["syncs"], counts["synchronised"] + counts["unknown"])
    if got != want:
        ck.fail(f"syncs, of them legacy-stream work, from the attach mark on: report {got}, "
                f"truth {want}")
    names = ("launches", "copies", "quiet legacy work", "quiet host copies")
    got = (rec["launches"], rec["copies"], quiet_legacy, quiet_host)
    keys = ("launches", "copies", "quiet_legacy", "quiet_host")
    for name, n, key in zip(names, got, keys):
        if not counts[key] <= n <= wide[key]:
            ck.fail(f"{name}: report {n}, truth {counts[key]} from the attach mark on"
                    + (f", {wide[key]} from its start" if wide[key] != counts[key] else ""))
    exact = all(counts[k] == wide[k] for k in keys)
    return (f"syncs[] holds the {len(syncs)} syncs; of {counts['launches']} launches and "
            f"{counts['copies']} copies {counts['legacy']} on the legacy stream "
            f"({counts['synchronised']} synchronised, {counts['unknown']} unknown, "
            f"{quiet_legacy} in could_sync[]) as the truth"
            + ("" if exact else " within the calls made while attaching"))


def check_text(ck, rep, path):
    """The text report's lead lines give the JSON's counts, each out of its own whole: the
    calls, the launches and copies among them, the syncs; the legacy-stream work out of the
    launches and copies, the flagged syncs out of the syncs."""
    text = open(path).read()
    rec, lw = rep["recording"], rep["legacy_work"]
    want = [f"\nFlagged syncs: {rep['flagged_syncs']} of {rep['sync_calls']} syncs "]
    if rec["calls"]:
        want.append(f"  of the {rec['calls']} calls: {rec['launches']} launches, "
                    f"{rec['copies']} copies and memsets; {rep['sync_calls']} syncs\n")
    if lw["calls"]:
        did = f"{lw['synchronised']} did, syncs above" if lw["synchronised"] else "none did"
        want.append(f"  {lw['calls']} of {rec['launches'] + rec['copies']} launches and copies, "
                    f"on the legacy stream, could synchronise: {did}\n")
    if rep["host_unknown_no_wait"]:
        want.append(f"  ({rep['host_unknown_no_wait']} of {rec['copies']} copies: async, host "
                    "memory of unknown kind, no wait shown: not syncs)\n")
    for line in want:
        if line not in text:
            ck.fail(f"text report without {line.strip()!r}")
    return len(want)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--counts", action="store_true",
                    help="also check sync_calls and legacy_work against the truth")
    ap.add_argument("--text", help="also check the lead lines of this text report")
    ap.add_argument("truth", nargs="+")
    a = ap.parse_args()
    rep = json.load(open(a.report))
    ck = Checker()
    said = ""
    if check_contract(ck, rep):
        ranks = []
        for path in a.truth:
            ranks.append(check_rank(ck, rep, *load(path)))
        if a.counts:
            said = check_counts(ck, rep, ranks)
        if a.text:
            said += f"; the text's {check_text(ck, rep, a.text)} lead lines as the JSON's"
    check_overhead(ck, rep)
    for f in ck.failures[:20]:
        print("  FAIL:", f)
    recall = 100.0 * ck.found / ck.planted if ck.planted else 100.0
    precision = 100.0 * ck.true_flags / ck.flagged if ck.flagged else 100.0
    print(f"  {ck.planted} planted ({ck.quiet} not to flag), {ck.found} found (recall "
          f"{recall:.1f} %), {ck.flagged} flagged, {ck.true_flags} planted (precision "
          f"{precision:.1f} %), {len(ck.failures)} mismatches"
          + (f", {ck.steps} draft step reads" if getattr(ck, "steps", 0) else ""))
    if said:
        print(f"  {said}")
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
