#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Compare `specprobe report --json` of a specsim-server recording with the server's truth.

  check_report.py --report REPORT.json [--inventory full|launched] TRUTH...

A --sample recording's report is judged on the cycles its windows hold whole (from the
verify two cycles before them to the next cycle's verify; sampling.spans): those must be
there, each
as the truth has it, and no cycle a window cut.
Cycle and phase boundaries come from the truth's cycle_bounds lines where it has them,
else they are derived from its call lines (their phase and cycle tags) by the same
contract (docs/report-json.md, "Cycles and phases"). Checks:
- per rank, the number of cycles equals the truth's cycles that start after the
  recording's attach-complete mark and end before its last call (the first may go either
  way where its draft began within the loop's longest gap between draft steps after the
  mark, or the thread waited for a CPU then: a step of it may have come before);
- every boundary the report gives lies inside the before/after bracket of the call
  that defines it; launches per phase are equal;
- the graph inventory equals the truth's graph lines: every captured exec with its
  role, kernels (by name), side-stream kernels and collectives (--inventory full),
  or the role of every exec launched in the recording (--inventory launched).
With --text REPORT.txt, the text report's first five lines (docs/guide.md, "The first
screen"): cycles/s and the cycle's p50 inside the bounds the truth's brackets give the
reported cycles, each phase's share of the cycle inside its bracketed bounds, and the top
flagged sync one the server planted, at the position it was planted, called at a planting
function; no top flagged sync where nothing was planted.
"""
import argparse
import collections
import json
import re
import sys

LAUNCHES = {"cuGraphLaunch", "cuLaunchKernel", "cuLaunchKernelEx"}
SYNCS = {"cuStreamSynchronize", "cuEventSynchronize", "cuCtxSynchronize", "cuMemFree"}
SYNC_COPIES = {"cuMemcpy", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyDtoD", "cuMemsetD8",
               "cuMemsetD16", "cuMemsetD32"}
PHASES = ("draft", "verify", "accept", "extend")


def load_truth(paths):
    ranks = []
    for path in paths:
        lines = [json.loads(l) for l in open(path)]
        calls = [l for l in lines if "before" in l]
        summary = next(l for l in lines if l.get("summary"))
        graphs = [l for l in lines if "exec" in l and "role" in l]
        bounds = [l for l in lines if "cycle_bounds" in l]
        ranks.append({"calls": calls, "summary": summary, "graphs": graphs, "bounds": bounds,
                      "pid": summary["pid"], "rank": summary["rank"]})
    return ranks


def bounds_cycles(r):
    """The server's own cycle_bounds lines, in the shape truth_cycles gives."""
    cycles = []
    for b in sorted(r["bounds"], key=lambda b: b["cycle_bounds"]):
        ph = b["phases"]
        cycles.append({"index": b["cycle_bounds"], "start": b["start"], "end": b["end"],
                       **{p: (ph[p]["start"], ph[p]["end"]) for p in PHASES},
                       "launches": {"draft": b["draft_launches"],
                                    "verify": b["verify_launches"],
                                    "extend": b["extend_launches"]}})
    return cycles


def ref(call, edge):
    return {"name": call["base"], "edge": edge, "before": call["before"], "after": call["after"]}


def blocking(call, pinned_known):
    if call["base"] in SYNCS or call["base"] in SYNC_COPIES:
        return True
    # an async copy to pageable memory blocks; the tool knows only if it saw the pinning
    return pinned_known and call.get("tag") == "pageable-copy"


def truth_cycles(r, pinned_known):
    """Cycle and phase boundaries of one rank, as the contract defines them."""
    mode = r["summary"]["accept_mode"]
    loop = [c for c in r["calls"] if c["cycle"] >= 0 and c["depth"] == 0]
    by_cycle = collections.defaultdict(list)
    for c in loop:
        by_cycle[c["cycle"]].append(c)
    deferred = {c["args"].get("for_cycle"): c for c in r["calls"] if c.get("tag") == "deferred"}
    n = r["summary"]["cycles_run"]
    cycles = []
    for i in range(n):
        calls = by_cycle[i]
        launches = {p: [c for c in calls if c["phase"] == p and c["base"] in LAUNCHES]
                    for p in PHASES}
        d, v, x = launches["draft"], launches["verify"], launches["extend"]
        after_verify = [c for c in calls if c["phase"] == "accept"]
        if mode == "deferred":
            acc = deferred.get(i)
        else:
            want = "cuStreamSynchronize" if mode == "sync" else "cuEventSynchronize"
            acc = next(c for c in after_verify if c["base"] == want)
        blocks = [c for c in after_verify if blocking(c, pinned_known)]
        e = ref(blocks[-1], "return") if blocks else ref(x[0], "entry")
        cycles.append({"index": i, "start": ref(d[0], "entry"),
                       "draft": (ref(d[0], "entry"), ref(v[0], "entry")),
                       "verify": (ref(v[0], "entry"), ref(v[-1], "return")),
                       "accept": (ref(v[-1], "return"), ref(acc, "return") if acc else None),
                       "extend": (e, None),
                       "launches": {p: len(launches[p]) for p in PHASES},
                       "last_extend": ref(x[-1], "return")})
    for i, cy in enumerate(cycles):
        end = cycles[i + 1]["start"] if i + 1 < n else cy["last_extend"]
        cy["end"] = end
        cy["extend"] = (cy["extend"][0], end)
    return cycles


def inside(ts, r):
    return r is not None and ts is not None and r["before"] <= ts <= r["after"]


class Checker:
    def __init__(self):
        self.failures = []
        self.compared = 0

    def expect(self, cond, what):
        self.compared += 1
        if not cond:
            self.failures.append(what)


def draft_gap(r):
    """The longest time between two draft launches of one cycle, by the truth's calls."""
    last, gap = {}, 0
    for c in r["calls"]:
        if c.get("phase") != "draft" or c["base"] not in LAUNCHES or c.get("cycle", -1) < 0:
            continue
        if c["cycle"] in last:
            gap = max(gap, c["before"] - last[c["cycle"]])
        last[c["cycle"]] = c["after"]
    return gap


def sampled_cycles(cycles, spans):
    """--sample: the cycles a window holds whole, from the verify two cycles before them
    (a window opening on a launch may cut its forward) to the next cycle's verify (want),
    and those that may be counted, from the verify before them on (either)."""
    want, either = [], []
    for i, cy in enumerate(cycles[1:], 1):
        prev, nxt = cycles[i - 1], cycles[i + 1] if i + 1 < len(cycles) else None
        a = cycles[i - 2]["verify"][0] if i >= 2 else None
        if a and nxt and any(lo <= a["before"] and nxt["verify"][1]["after"] <= hi
                             for lo, hi in spans):
            want.append(cy)
        elif any(lo <= prev["verify"][0]["after"] and cy["end"]["before"] <= hi
                 for lo, hi in spans):
            either.append(cy)
    return want, either


def check_cycles(ck, rep, r, tool_cycles):
    attach = rep["recording"]["attach_done_ns"]
    last = rep["recording"]["last_ns"] or 0
    pinned_known = any(c["base"] == "cuMemHostAlloc" and c["before"] >= attach
                       for c in r["calls"])
    want, either = [], []
    cycles = bounds_cycles(r) if r["bounds"] else truth_cycles(r, pinned_known)
    # planted launches count in the report's phases but not in the truth's launch counts
    count_launches = not r["summary"].get("plants")
    # a thread that waited for a CPU from the mark to its first record cannot tell a draft
    # begun before the mark from one begun after it: its first cycle may go either way
    late = any(lp.get("late_start_ns", 0) > 0 for lp in rep["loops"] if lp["pid"] == r["pid"])
    # a draft begun within the loop's longest gap between draft steps after the mark may
    # have had a step before it: the first such cycle may be counted or not
    gap = draft_gap(r)
    for cy in cycles:
        acc = cy["accept"][1]
        refs = [cy["end"]] + ([acc] if acc else [])
        if cy["start"]["before"] > last:
            continue
        # a call whose bracket straddles the end of the recording may or may not be in it
        whole = all(ref_["after"] <= last for ref_ in refs)
        if cy["start"]["before"] >= attach and (late or cy["start"]["before"] < attach + gap):
            late = False
            gap = 0
            either.append(cy)
        elif cy["start"]["before"] >= attach and whole:
            want.append(cy)
        elif cy["start"]["after"] >= attach:
            either.append(cy)     # the attach mark or the end fell inside a bracket
    spans = (rep.get("sampling") or {}).get("spans")
    if spans:
        want, either = sampled_cycles(cycles, spans)
    got = sorted(tool_cycles, key=lambda c: c["start_ns"])
    ok_count = len(want) <= len(got) <= len(want) + len(either)
    ck.expect(ok_count, f"rank {r['rank']}: {len(got)} cycles reported, truth has {len(want)}"
                        f" after the attach mark (+{len(either)} at the mark or the end)")
    starts = {c["start_ns"]: c for c in got}
    for cy in want + either:
        tool = next((c for ts, c in starts.items() if inside(ts, cy["start"])), None)
        if cy in either and tool is None:
            continue
        where = f"rank {r['rank']} cycle {cy['index']}"
        ck.expect(tool is not None, f"{where}: no reported cycle starts inside its first draft "
                                    f"launch [{cy['start']['before']}, {cy['start']['after']}]")
        if tool is None:
            continue
        ck.expect(inside(tool["end_ns"], cy["end"]), f"{where}: end {tool['end_ns']} outside "
                                                     f"{cy['end']}")
        for p in PHASES:
            start, end = cy[p]
            ph = tool["phases"][p]
            ck.expect(inside(ph["start_ns"], start),
                      f"{where}: {p} start {ph['start_ns']} outside {start}")
            if end is not None:
                ck.expect(inside(ph["end_ns"], end),
                          f"{where}: {p} end {ph['end_ns']} outside {end}")
            if count_launches and p in cy["launches"]:
                ck.expect(ph["launches"] == cy["launches"][p],
                          f"{where}: {p} launches {ph['launches']} != {cy['launches'][p]}")


def capture_kernel_names(r):
    """Kernel names captured into each exec, from the truth's capture-phase calls."""
    names, kernels, per_exec, current = {}, {}, {}, None
    for c in r["calls"]:
        a = c.get("args") or {}
        if c["base"] == "cuModuleGetFunction":
            names[a["func"]] = a.get("name")
        elif c["base"] == "cuLibraryGetKernel":
            kernels[a["kernel"]] = a["name"]
        elif c["base"] == "cuKernelGetFunction":
            names[a["func"]] = kernels.get(a["kernel"])
        elif c["base"] == "cuStreamBeginCapture":
            current = collections.Counter()
        elif c["base"] in ("cuLaunchKernel", "cuLaunchKernelEx") and current is not None \
                and c["depth"] == 0:
            current[names.get(a["func"])] += 1
        elif c["base"].startswith("cuGraphInstantiate") and current is not None:
            per_exec[a["exec"]] = current
            current = None
    return per_exec


def check_eager(ck, rep, r):
    """A loop with no graph (--eager-loop): its forwards are eager, with a draft and a
    verify among them; the loop's verify is one of them."""
    eager = [g for g in rep["graphs"] if g["pid"] == r["pid"] and g.get("eager")]
    roles = {g["role"] for g in eager if g["launches"]}
    ck.expect({"draft", "verify"} <= roles, f"rank {r['rank']}: eager forwards with roles "
                                            f"{sorted(roles)}, want draft and verify")
    graphs = [g for g in rep["graphs"] if g["pid"] == r["pid"] and not g.get("eager")]
    ck.expect(not graphs, f"rank {r['rank']}: {len(graphs)} graphs in a loop without any")
    for lp in rep["loops"]:
        if lp["pid"] == r["pid"]:
            ck.expect(lp["verify_from"].startswith("eager-"),
                      f"rank {r['rank']}: verify_from {lp['verify_from']}")


def check_eager_verify(ck, rep, r):
    """Graph drafts and an eager verify (--verify-mode eager): the verify is an eager forward,
    no graph is."""
    eager = [g for g in rep["graphs"] if g["pid"] == r["pid"] and g.get("eager") and g["launches"]]
    ck.expect(eager and all(g["role"] == "verify" for g in eager),
              f"rank {r['rank']}: eager forwards with roles {[g['role'] for g in eager]}")


def check_graphs(ck, rep, r, inventory):
    if r["summary"].get("eager_loop"):
        check_eager(ck, rep, r)
        return
    if r["summary"].get("verify_mode") == "eager":
        check_eager_verify(ck, rep, r)
    tool = {int(g["exec"], 16): g for g in rep["graphs"]
            if g["pid"] == r["pid"] and not g.get("eager")}
    truth = {g["exec"]: g for g in r["graphs"]}
    if inventory == "launched":
        for h, g in tool.items():
            if not g["launches"] or h not in truth:
                continue
            ck.expect(g["role"] == truth[h]["role"],
                      f"rank {r['rank']} exec {h:#x}: role {g['role']} != {truth[h]['role']}")
        launched = sum(1 for g in tool.values() if g["launches"])
        ck.expect(launched > 0, f"rank {r['rank']}: no launched graph in the report")
        return
    names = capture_kernel_names(r)
    ck.expect(set(tool) == set(truth),
              f"rank {r['rank']}: execs {sorted(set(tool) ^ set(truth))} in only one of "
              f"report and truth")
    for h, t in truth.items():
        g = tool.get(h)
        if g is None:
            continue
        where = f"rank {r['rank']} exec {h:#x} ({t['role']} batch {t['batch']})"
        ck.expect(g["captured"], f"{where}: not captured")
        ck.expect(g["role"] == t["role"], f"{where}: role {g['role']} != {t['role']}")
        ck.expect(g["kernels"] == t["kernels"], f"{where}: kernels {g['kernels']} != {t['kernels']}")
        ck.expect(g["side_kernels"] == t["side_kernels"],
                  f"{where}: side kernels {g['side_kernels']} != {t['side_kernels']}")
        ck.expect(g["collective_count"] == t["collectives"],
                  f"{where}: collectives {g['collective_count']} != {t['collectives']}")
        got_names = collections.Counter({k["name"]: k["count"] for k in g["kernel_names"]})
        ck.expect(got_names == names.get(h), f"{where}: kernels {dict(got_names)} != "
                                             f"{dict(names.get(h) or {})}")

# what the server plants, and the functions of its own that make each (the call site; the
# compiler may inline free_in_loop into accept_phase)
PLANT_TAGS = {"planted-sync": "plant", "planted:": "plant",
              "free-in-loop": "free_in_loop|accept_phase", "pageable-copy": "accept_phase"}
HEAD_RATE = re.compile(r"specprobe report: ([\d.]+) cycles/s, (- tok/s \(no --server-metrics\)|"
                       r"[\d.]+ tok/s), cycle p50 ([\d.]+) ms, (\d+) cycles$")
HEAD_SPLIT = re.compile(r"  host a cycle \(mean ([\d.]+) ms\): (.*)$")
HEAD_SYNC = re.compile(r"  top flagged sync: (\w+) at ([a-z-]+), ([\d.]+) % of the cycle "
                       r"\(([\d.]+) ms blocked\)$")
HEAD_SITE = re.compile(r"    called at (\S.*): (\d+) calls(, \d+ more flagged elsewhere)?$")


def p50(values):
    v = sorted(values)
    return v[max((len(v) * 50 + 99) // 100 - 1, 0)]


def bracket_cycles(rep, r):
    """Each reported cycle of the rank with its truth cycle: [(tool, truth)], or None when
    a reported cycle starts inside no truth cycle's first draft launch."""
    cycles = bounds_cycles(r) if r["bounds"] else truth_cycles(r, True)
    pairs = []
    for c in (c for c in rep["cycles"] if c["pid"] == r["pid"]):
        cy = next((cy for cy in cycles if inside(c["start_ns"], cy["start"])), None)
        if cy is None:
            return None
        pairs.append((c, cy))
    return pairs


def span(a, b):
    """Least and most time between two bracketed calls."""
    return max(b["before"] - a["after"], 0), b["after"] - a["before"]


def check_rates(ck, m, pairs_of):
    rates_lo, rates_hi, lo, hi = [], [], [], []
    for pairs in pairs_of:
        d = [span(cy["start"], cy["end"]) for _, cy in pairs]
        lo += [x for x, _ in d]
        hi += [y for _, y in d]
        if d:
            rates_lo.append(len(d) * 1e9 / sum(y for _, y in d))
            rates_hi.append(len(d) * 1e9 / max(sum(x for x, _ in d), 1))
    rate, cycle_p50, n = float(m.group(1)), float(m.group(3)), int(m.group(4))
    ck.expect(n == len(lo), f"head: {n} cycles, the report's JSON {len(lo)}")
    rlo, rhi = sum(rates_lo) / len(rates_lo), sum(rates_hi) / len(rates_hi)
    ck.expect(rlo - 0.05 <= rate <= rhi + 0.05, f"head: {rate} cycles/s outside the truth's "
                                                 f"[{rlo:.2f}, {rhi:.2f}]")
    plo, phi = p50(lo) / 1e6, p50(hi) / 1e6
    ck.expect(plo - 0.0005 <= cycle_p50 <= phi + 0.0005,
              f"head: cycle p50 {cycle_p50} ms outside the truth's [{plo:.4f}, {phi:.4f}]")


def check_split(ck, m, pairs_of):
    """Each phase's share of the cycle: its spans' least sum over the cycles' most, and back."""
    shares = dict((k, float(v)) for k, v in re.findall(r"(\w+) (\d+)%", m.group(2)))
    whole = [span(cy["start"], cy["end"]) for pairs in pairs_of for _, cy in pairs]
    for p in PHASES:
        ends = [cy[p] for pairs in pairs_of for _, cy in pairs]
        if p not in shares or any(e[1] is None for e in ends):
            ck.expect(p in shares, f"head: no share for {p}")
            continue
        part = [span(a, b) for a, b in ends]
        lo = 100 * sum(x for x, _ in part) / sum(y for _, y in whole)
        hi = 100 * sum(y for _, y in part) / max(sum(x for x, _ in whole), 1)
        ck.expect(lo - 0.5 <= shares[p] <= hi + 0.5,
                  f"head: {p} {shares[p]} % of the cycle outside the truth's [{lo:.1f}, {hi:.1f}]")


def check_top_sync(ck, lines, truths):
    planted = [c for r in truths for c in r["calls"]
               if any(c.get("tag", "").startswith(t) for t in PLANT_TAGS)]
    sync = HEAD_SYNC.match(lines[2])
    if not sync:
        ck.expect(lines[2].startswith("  flagged syncs: none") or not planted,
                  f"head line 3: {lines[2]!r}")
        return
    call, pos = sync.group(1), sync.group(2)
    # the demo's planted sync is between draft and verify; a free in the loop goes unplaced
    where = {"planted-sync": "draft-verify"}
    ok = [c for c in planted if c["base"] == call and
          c.get("position", where.get(c["tag"], pos)) == pos]
    ck.expect(ok, f"head: top flagged sync {call} at {pos}: nothing planted so "
                  f"({sorted({(c['base'], c.get('position')) for c in planted})})")
    site = HEAD_SITE.match(lines[3])
    makers = {m for c in ok for t, m in PLANT_TAGS.items() if c["tag"].startswith(t)}
    ck.expect(site and any(re.search(m, site.group(1)) for m in makers),
              f"head: the top flagged sync's site is none of {sorted(makers)}: {lines[3]!r}")
    if site:
        ck.expect(0 < int(site.group(2)) <= len(planted),
                  f"head: {site.group(2)} calls at the site, {len(planted)} planted")


def check_head(ck, rep, truths, path):
    """The text report's first five lines against the truth."""
    lines = open(path).read().split("\n")[:5]
    rate = HEAD_RATE.match(lines[0])
    ck.expect(rate, f"head line 1: {lines[0]!r}")
    pairs_of = [bracket_cycles(rep, r) for r in truths]
    ck.expect(all(p is not None for p in pairs_of), "head: a reported cycle no truth cycle has")
    if rate and all(p is not None for p in pairs_of):
        check_rates(ck, rate, pairs_of)
        split = HEAD_SPLIT.match(lines[1])
        ck.expect(split, f"head line 2: {lines[1]!r}")
        if split:
            check_split(ck, split, pairs_of)
    check_top_sync(ck, lines, truths)
    ck.expect(lines[4].startswith("  host "), f"head line 5: {lines[4]!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--inventory", choices=("full", "launched"), default="full")
    ap.add_argument("--verify-from", help="how every loop's verify must have been told")
    ap.add_argument("--text", help="the text report, whose first five lines are checked")
    ap.add_argument("truth", nargs="+")
    a = ap.parse_args()
    rep = json.load(open(a.report))
    ck = Checker()
    truths = load_truth(a.truth)
    if a.text:
        check_head(ck, rep, truths, a.text)
    for r in truths:
        loops = [l for l in rep["loops"] if l["pid"] == r["pid"]]
        ck.expect(len(loops) == 1, f"rank {r['rank']}: {len(loops)} loops for pid {r['pid']}")
        if r["summary"]["nranks"] > 1 and loops and a.inventory == "full":
            ck.expect(loops[0]["rank"] == r["rank"],
                      f"pid {r['pid']}: rank {loops[0]['rank']} != {r['rank']}")
        if a.verify_from:
            for lp in loops:
                ck.expect(lp["verify_from"] == a.verify_from,
                          f"rank {r['rank']}: verify_from {lp['verify_from']} != {a.verify_from}")
        check_cycles(ck, rep, r, [c for c in rep["cycles"] if c["pid"] == r["pid"]])
        check_graphs(ck, rep, r, a.inventory)
    for f in ck.failures[:20]:
        print("  FAIL:", f)
    print(f"  {len(rep['cycles'])} cycles, {ck.compared} comparisons, {len(ck.failures)} "
          f"mismatches")
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
