#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Check the cycle_bounds lines of specsim-server ground truth files.

  check_cycles.py [--expect-tag TAG=N]... [--expect-plant KIND@POS=N]... TRUTH...

The options of the run come from each file's summary line. For every cycle run
there must be one cycle_bounds line; each REF in it must be a call line of the
loop thread (same name, before, after); the bounds must follow the order of
briefs/cycle-defs.md; and the launch and sync counts, E (extend start) and the
accept end are derived again here from the call lines and must agree. A call's
time is its before for an entry edge and its after for a return edge.

Planted calls (tags planted:, unknown:, companion:, clean:) must carry a
position and lie where it says, between the loop's own calls; --expect-plant
counts the planted calls of one kind at one position (for poll: spins, i.e.
queries that found the stream ready).

With --torch there is no extend launch: E is the return of the last blocking
call after verify, the last cycle ends at the return of its last call, and the
draft launches are the k graph launches, step j's exec as the j-th. Positions
follow the cycle: draft-verify from the first draft launch to the verify
launch, after-verify up to the accept result's copy, accept from that copy to
the next cycle's first draft launch.
"""
import argparse
import collections
import json
import sys

BLOCKING = {"cuCtxSynchronize", "cuCtxSynchronize_v2", "cuStreamSynchronize",
            "cuEventSynchronize", "cuMemcpy", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
            "cuMemcpyDtoD_v2", "cuMemFree_v2", "cuMemFreeHost"}
PAGEABLE_TAGS = {"pageable-copy", "planted:pageable-copy"}
PLANT_PREFIXES = ("planted:", "unknown:", "companion:", "clean:")
PHASES = ("draft", "verify", "accept", "extend")


def t_of(ref):
    return ref["before"] if ref["edge"] == "entry" else ref["after"]


def same(ref, call, edge):
    return (ref["name"] == call["name"] and ref["before"] == call["before"]
            and ref["after"] == call["after"] and ref["edge"] == edge)


def blocking(call):
    return call["name"] in BLOCKING or (call["name"] == "cuMemcpyDtoHAsync_v2"
                                        and call.get("tag") in PAGEABLE_TAGS)


def planted(call):
    return (call.get("tag") or "").startswith(PLANT_PREFIXES)


class Rank:
    def __init__(self, path):
        self.path = path
        lines = [json.loads(l) for l in open(path)]
        self.calls = [l for l in lines if "name" in l and l.get("depth", 0) == 0]
        self.bounds = [l for l in lines if "cycle_bounds" in l]
        self.execs = {l["exec"]: l for l in lines if "exec" in l and "role" in l}
        summary = [l for l in lines if l.get("summary")]
        self.summary = summary[0] if summary else None
        self.torch = bool(self.summary and self.summary.get("torch"))
        self.by_key = collections.defaultdict(list)
        for c in self.calls:
            self.by_key[(c["name"], c["before"], c["after"])].append(c)
        self.errors = []

    def expect(self, cond, what):
        if not cond:
            self.errors.append(f"{self.path}: {what}")
        return cond

    def call_of(self, ref, tid, where):
        found = [c for c in self.by_key.get((ref["name"], ref["before"], ref["after"]), [])
                 if c["tid"] == tid]
        self.expect(len(found) == 1, f"{where}: REF {ref} is no call line of thread {tid}")
        return found[0] if found else None


def expected_draft_launches(s, cycle):
    k, mode, dk = s["draft_k"], s["draft_mode"], s["draft_kernels"]
    if s.get("torch"):
        return k
    per_step = dk if mode == "eager" else 1
    steps = k if mode != "one-graph" else 1
    n = s["extra_draft_every"]
    extra = n > 0 and (cycle + 1) % n == 0
    return (steps + extra) * per_step


def iteration_calls(r, tid):
    """Loop calls of the loop thread, grouped by iteration, in order."""
    by_cycle = collections.defaultdict(list)
    for c in r.calls:
        if c["tid"] == tid and c["cycle"] >= 0:
            by_cycle[c["cycle"]].append(c)
    return by_cycle


def draft_launch(c, torch=False):
    names = ("cuGraphLaunch",) if torch else ("cuGraphLaunch", "cuLaunchKernel")
    return c["phase"] == "draft" and not planted(c) and c["name"] in names


def check_roles(r, i, drafts, verifies, extends):
    s = r.summary
    sched = s["batch_schedule"]
    bs = sched[i % len(sched)]
    for c in drafts + verifies + extends:
        if c["name"] != "cuGraphLaunch":
            continue
        role = "draft" if c in drafts else "verify" if c in verifies else "extend"
        e = r.execs.get(c["args"]["exec"])
        if r.expect(e is not None, f"cycle {i}: {role} launch of an unknown exec"):
            r.expect(e["role"] == role and e["batch"] == bs,
                     f"cycle {i}: {role} launch replays {e['role']} batch {e['batch']}, "
                     f"want batch {bs}")
    if r.torch:
        steps = [r.execs.get(c["args"]["exec"], {}).get("step") for c in drafts]
        r.expect(steps == list(range(s["draft_k"])), f"cycle {i}: draft steps {steps}")
    if s["verify_pieces"] > 1:
        pieces = [r.execs.get(c["args"]["exec"], {}).get("piece") for c in verifies]
        r.expect(pieces == list(range(s["verify_pieces"])), f"cycle {i}: verify pieces {pieces}")


def check_derived(r, b, calls, last):
    """Counts and E from the call lines of the iteration."""
    i, s, ph = b["cycle_bounds"], r.summary, b["phases"]
    drafts = [c for c in calls if draft_launch(c, r.torch)]
    verifies = [c for c in calls if c["phase"] == "verify" and c["name"] == "cuGraphLaunch"
                and not planted(c)]
    extends = [c for c in calls if c["phase"] == "extend" and c["name"] == "cuGraphLaunch"
               and not planted(c)]
    syncs = [c for c in calls if blocking(c)]
    want = (expected_draft_launches(s, i), s["verify_pieces"], 0 if r.torch else 1)
    got = (b["draft_launches"], b["verify_launches"], b["extend_launches"])
    r.expect(got == want, f"cycle {i}: draft/verify/extend launches {got}, want {want}")
    r.expect((len(drafts), len(verifies), len(extends)) == want,
             f"cycle {i}: call lines hold {len(drafts)}/{len(verifies)}/{len(extends)} launches")
    r.expect(b["syncs"] == len(syncs), f"cycle {i}: syncs {b['syncs']}, call lines {len(syncs)}")
    if r.torch:
        return check_torch_tail(r, b, calls, syncs, drafts, verifies, last)
    if not (drafts and verifies and extends):
        return
    r.expect(same(b["start"], drafts[0], "entry"),
             f"cycle {i}: start is not the first draft launch")
    r.expect(same(ph["verify"]["start"], verifies[0], "entry"), f"cycle {i}: V")
    r.expect(same(ph["verify"]["end"], verifies[-1], "return"), f"cycle {i}: Ve")
    after = [c for c in syncs if c["before"] >= verifies[-1]["after"]
             and c["after"] <= extends[0]["before"]]
    want_e = (after[-1], "return") if after else (extends[0], "entry")
    r.expect(same(ph["extend"]["start"], *want_e), f"cycle {i}: extend start is not E")
    if last:
        r.expect(same(b["end"], extends[-1], "return"), f"cycle {i}: last cycle's end")
    check_roles(r, i, drafts, verifies, extends)


def check_torch_tail(r, b, calls, syncs, drafts, verifies, last):
    """E, the last cycle's end and the launch order, with no extend launch."""
    i, ph = b["cycle_bounds"], b["phases"]
    if not (drafts and verifies):
        return
    # the draft's setup, the staged position upload the iteration before made, starts it
    uploads = [c for c in r.calls if c["tid"] == drafts[0]["tid"]
               and c["name"].startswith("cuMemcpyHtoDAsync") and c["after"] <= drafts[0]["before"]]
    r.expect(uploads and same(b["start"], uploads[-1], "entry"),
             f"cycle {i}: start is not the draft's setup (its position upload)")
    r.expect(same(ph["verify"]["start"], verifies[0], "entry"), f"cycle {i}: V")
    r.expect(same(ph["verify"]["end"], verifies[-1], "return"), f"cycle {i}: Ve")
    # a sync after the next draft's setup began leaves no extend: it starts at the cycle's end
    after = [c for c in syncs if c["before"] >= verifies[-1]["after"]]
    if r.expect(after, f"cycle {i}: no sync after verify"):
        past = not last and after[-1]["after"] > t_of(b["end"])
        r.expect(ph["extend"]["start"] == b["end"] if past
                 else same(ph["extend"]["start"], after[-1], "return"), f"cycle {i}: extend start")
    if last:
        r.expect(same(b["end"], calls[-1], "return"), f"cycle {i}: last cycle's end")
    r.expect(all(c["args"].get("stream", 0) == 0 for c in calls
                 if c.get("tag") is None and "stream" in c["args"]),
             f"cycle {i}: loop calls off the legacy stream")
    check_roles(r, i, drafts, verifies, [])


def check_accept(r, b, nxt, tid):
    i, mode = b["cycle_bounds"], r.summary["accept_mode"]
    a_ref = b["phases"]["accept"]["end"]
    a = r.call_of(a_ref, tid, f"cycle {i} accept end")
    want = "cuStreamSynchronize" if mode == "sync" else "cuEventSynchronize"
    r.expect(a_ref["name"] == want and a_ref["edge"] == "return",
             f"cycle {i}: accept ends at {a_ref}")
    if a is None:
        return
    if mode != "deferred":
        r.expect(a["cycle"] == i and a["phase"] == "accept",
                 f"cycle {i}: accept sync in {a['cycle']}")
        return
    # the deferred sync of cycle i is made one iteration later (after the loop for the last)
    r.expect(a.get("tag") == "deferred" and a["args"].get("for_cycle") == i,
             f"cycle {i}: accept end is not the deferred sync for it")
    if nxt is not None:
        r.expect(a["cycle"] == i + 1 and t_of(a_ref) > t_of(nxt["start"]),
                 f"cycle {i}: deferred accept end does not lie in the next iteration")
    else:
        r.expect(a["phase"] == "teardown", f"cycle {i}: last deferred sync not after the loop")


def check_order(r, b, nxt):
    i, ph = b["cycle_bounds"], b["phases"]
    pairs = [(b["start"], ph["draft"]["start"]), (ph["draft"]["end"], ph["verify"]["start"]),
             (ph["verify"]["end"], ph["accept"]["start"]), (ph["extend"]["end"], b["end"])]
    for x, y in pairs:
        r.expect(x == y, f"cycle {i}: {x} and {y} should be one edge")
    d, v, ve = t_of(b["start"]), t_of(ph["verify"]["start"]), t_of(ph["verify"]["end"])
    a, e, end = t_of(ph["accept"]["end"]), t_of(ph["extend"]["start"]), t_of(b["end"])
    r.expect(d <= v <= ve <= a and ve <= e <= end, f"cycle {i}: bounds out of order")
    r.expect(b["start"]["edge"] == "entry" and ph["verify"]["start"]["edge"] == "entry"
             and ph["verify"]["end"]["edge"] == "return", f"cycle {i}: edges")
    if nxt is not None:
        r.expect(b["end"] == nxt["start"], f"cycle {i}: does not end where cycle {i + 1} starts")
    if r.summary["accept_mode"] != "deferred":
        r.expect(a <= e, f"cycle {i}: accept ends after extend starts")


def first(calls, pred):
    return next((c for c in calls if pred(c)), None)


def first_draft_launch(r, cycle):
    """The entry of a cycle's first draft launch: positions are placed by launches, the
    draft's setup before it keeps the place it was made at (the accept's, or before the loop)."""
    d = first(r.calls, lambda x: x["cycle"] == cycle and draft_launch(x, r.torch))
    return d["before"] if d else None


def torch_region(r, c, calls, b, nxt):
    """Where a position lies in a --torch cycle, as the module docstring says."""
    ph, pos = b["phases"], c["position"]
    ve = ph["verify"]["end"]["after"]
    copy = first(calls, lambda x: x["before"] > ve and x["name"] == "cuMemcpyDtoHAsync_v2"
                 and not planted(x))
    next_d = first_draft_launch(r, c["cycle"] + 1) if nxt else None
    regions = {
        "draft-verify": (b["start"]["before"], ph["verify"]["start"]["before"]),
        "after-verify": (ve, copy["before"] if copy else None),
        "accept": (copy["before"] if copy else ve, next_d),
    }
    return regions.get(pos, (ve, next_d))


def plant_region(r, c, calls, b, nxt):
    """(after, before): the call must start at or after one and end by the other."""
    pos, i = c["position"], c["cycle"]
    if r.torch:
        return torch_region(r, c, calls, b, nxt)
    ve = b["phases"]["verify"]["end"]["after"]
    own = [x for x in calls if not planted(x)]
    accept = [x for x in own if x["phase"] == "accept"]
    extends = [x for x in own if x["phase"] == "extend" and x["name"] == "cuGraphLaunch"]
    next_d = nxt["start"]["before"] if nxt else None
    if pos == "draft-verify":
        drafts = [x for x in calls if draft_launch(x)]
        return drafts[-1]["after"], b["phases"]["verify"]["start"]["before"]
    if pos == "after-verify":
        return ve, accept[0]["before"]
    if pos == "accept":
        copy = [x for x in accept if x["name"] == "cuMemcpyDtoHAsync_v2"][-1]
        sync = first(accept, lambda x: x["before"] > copy["after"]
                     and x["name"] in ("cuStreamSynchronize", "cuEventSynchronize"))
        return copy["after"], sync["before"] if sync else extends[0]["before"]
    if pos == "extend":
        return extends[-1]["after"], next_d
    # outside, in the loop: after this cycle's extend plants, before the next cycle
    ext = [x for x in calls if planted(x) and x["position"] == "extend"]
    return (ext[-1] if ext else extends[-1])["after"], next_d


def check_plants(r):
    plants = [c for c in r.calls if planted(c)]
    loop_start = first_draft_launch(r, r.bounds[0]["cycle_bounds"]) if r.bounds else None
    bounds = {b["cycle_bounds"]: b for b in r.bounds}
    by_cycle = collections.defaultdict(list)
    for c in r.calls:
        by_cycle[c["cycle"]].append(c)
    for c in plants:
        what = f"{c['tag']} {c['name']} in cycle {c['cycle']}"
        if not r.expect(c.get("position") in ("draft-verify", "after-verify", "accept",
                                              "extend", "outside"), f"{what}: position"):
            continue
        fails = c["tag"].endswith("capture-sync") or c["tag"] == "planted:poll"
        r.expect(c["result"] == 0 or fails, f"{what}: result {c['result']}")
        if c["tag"].endswith("capture-sync"):
            r.expect(c["phase"] == "capture", f"{what}: not made during capture")
            continue
        if c["cycle"] < 0:
            r.expect(c["position"] == "outside" and (loop_start is None
                                                     or c["after"] <= loop_start),
                     f"{what}: outside the loop but not before it")
            continue
        b = bounds.get(c["cycle"])
        if not r.expect(b is not None, f"{what}: no bounds for its cycle"):
            continue
        nxt = bounds.get(c["cycle"] + 1)
        lo, hi = plant_region(r, c, by_cycle[c["cycle"]], b, nxt)
        r.expect(lo <= c["before"] and (hi is None or c["after"] <= hi),
                 f"{what}: not at {c['position']} ({lo} .. {hi}, call {c['before']})")


def count_plants(r, spec):
    what, n = spec.rsplit("=", 1)
    kind, pos = what.split("@")
    got = sum(1 for c in r.calls if c.get("tag") == f"planted:{kind}"
              and c.get("position") == pos and (kind != "poll" or c["result"] == 0))
    r.expect(got == int(n), f"{got} planted {kind} at {pos}, want {n}")


def check_rank(r):
    s = r.summary
    if not r.expect(s is not None, "no summary line"):
        return
    n = s["cycles_run"]
    idx = [b["cycle_bounds"] for b in r.bounds]
    r.expect(idx == list(range(n)), f"cycle_bounds for cycles {idx[:5]}..., want 0..{n - 1}")
    if not r.bounds:
        return
    tid = r.bounds[0]["tid"]
    by_cycle = iteration_calls(r, tid)
    for k, b in enumerate(r.bounds):
        i = b["cycle_bounds"]
        r.expect(b["rank"] == s["rank"] and b["tid"] == tid and b["pid"] == s["pid"],
                 f"cycle {i}: rank/pid/tid")
        refs = [b["start"], b["end"]]
        refs += [b["phases"][p][e] for p in PHASES for e in ("start", "end")]
        for ref in refs:
            r.call_of(ref, tid, f"cycle {i}")
        nxt = r.bounds[k + 1] if k + 1 < len(r.bounds) else None
        check_order(r, b, nxt)
        check_accept(r, b, nxt, tid)
        check_derived(r, b, by_cycle.get(i, []), nxt is None)
    check_plants(r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect-tag", action="append", default=[],
                    help="TAG=N: N top-level calls with this tag per rank")
    ap.add_argument("--expect-plant", action="append", default=[],
                    help="KIND@POS=N: N planted calls of KIND at POS per rank")
    ap.add_argument("--min-cycles", type=int, default=1)
    ap.add_argument("truth", nargs="+")
    a = ap.parse_args()
    errors = []
    for path in a.truth:
        r = Rank(path)
        check_rank(r)
        if r.summary:
            r.expect(r.summary["cycles_run"] >= a.min_cycles,
                     f"{r.summary['cycles_run']} cycles run, want at least {a.min_cycles}")
        tags = collections.Counter(c.get("tag") for c in r.calls)
        for spec in a.expect_plant:
            count_plants(r, spec)
        for spec in a.expect_tag:
            tag, n = spec.rsplit("=", 1)
            r.expect(tags[tag] == int(n), f"{tags[tag]} calls tagged {tag}, want {n}")
        errors += r.errors
    for e in errors[:20]:
        print("    " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
