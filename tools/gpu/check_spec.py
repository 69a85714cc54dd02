#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Check `specprobe report --json` of spec_compile.py's rounds against the program's truth.

  check_spec.py DIR        (DIR holds I-VARIANT.truth.json and I-VARIANT.report.json)

Every variant: cycles equal the round's (one may be cut at the recording's end); no
legacy or unknown-host sync flagged but the planted ones; the two real extra syncs of
each cycle (.item() after .nonzero(), the sync after torch.tensor([pos], device)) flagged
as stream syncs in accept in every cycle; the accept sync itself not flagged. Plants:
ctx at draft-verify, legacy at draft-verify naming the side stream (made after attach),
"unknown" for the side stream made before attach, pageable-copy at draft-verify. A
cuMemAlloc in the first two cycles of a round that uses a new stream (the caching
allocator's first blocks for it) is a real sync of the loop and allowed there.
Where the round's recording (I-VARIANT.sprb) is there too and SPECPROBE names the binary:
the async host copies that must keep their returns (the scalar's H2D from a pageable
tensor, the planted D2H into pageable memory) have them, and how many were recorded at
entry only (pinned memory known at attach) is printed.
"""
import collections
import glob
import json
import os
import subprocess
import sys


def expected(t):
    want = {("stream", "accept"): t["item"] + t["scalar_h2d"]}
    plant = {"ctx": ("ctx", "draft-verify"), "side": ("legacy", "draft-verify"),
             "pageable": ("pageable-copy", "draft-verify")}.get(t["plant"])
    if plant:
        want[plant] = t["planted"]
    return want


def copy_returns(rec_path):
    """Per async host copy kind: how many were recorded at entry only, how many returned."""
    counts = collections.Counter()
    dump = subprocess.run([os.environ["SPECPROBE"], "dump", "--json", rec_path],
                          capture_output=True, text=True, check=True).stdout
    for line in dump.splitlines():
        c = json.loads(line)
        if c.get("name") in ("cuMemcpyDtoHAsync", "cuMemcpyHtoDAsync"):
            quiet = c["ts_return"] is None and not c["unreturned"]
            counts[(c["name"], "entry only" if quiet else "returned")] += 1
    return counts


def check_copies(t, rec_path, check):
    counts = copy_returns(rec_path)
    pageable_d2h = t["planted"] if t["plant"] == "pageable" else 0
    check(counts[("cuMemcpyHtoDAsync", "returned")] >= t["scalar_h2d"] - 1 and
          counts[("cuMemcpyDtoHAsync", "returned")] >= pageable_d2h - 1,
          f"pageable copies keep their returns: {t['scalar_h2d']} H2D, {pageable_d2h} D2H "
          f"planted; recorded {dict(counts)}")
    # .nonzero()'s count, .item() and copy_(non_blocking) into pinned buffers
    print(f"     D2H into pinned buffers: {t['cycles'] + t['item'] + t['pinned_d2h']}; "
          f"recorded at entry only {counts[('cuMemcpyDtoHAsync', 'entry only')]}")


def check_round(truth_path, results):
    t = json.load(open(truth_path))
    rep = json.load(open(truth_path.replace(".truth.json", ".report.json")))
    name = os.path.basename(truth_path).replace(".truth.json", "")

    def check(ok, what):
        results.append(ok)
        print(("ok   " if ok else "FAIL ") + f"{name}: {what}")

    cycles = sum(lp["cycles"] for lp in rep["loops"] if lp["pid"] == t["pid"])
    check(t["cycles"] - 1 <= cycles <= t["cycles"], f"cycles {cycles} (round: {t['cycles']})")
    syncs = [s for s in rep["syncs"] if s["pid"] == t["pid"]]
    flagged = collections.Counter((s["kind"], s["position"]) for s in syncs if s["flagged"])
    flagged = collections.Counter({k: v for k, v in flagged.items() if k[0] != "alloc"})
    allocs = [s["cycle"] for s in syncs if s["flagged"] and s["kind"] == "alloc"]
    new_stream = t["plant"] in ("side", "side-pre")
    check(all(c is not None and c < 2 for c in allocs) and (new_stream or not allocs),
          f"cuMemAlloc flagged in cycles {allocs} (only the first two of a new stream's round)")
    want = expected(t)
    # one cycle of the round may lie past the recording's last counted cycle
    per_cycle = {k: v / t["cycles"] for k, v in want.items()}
    ok = set(flagged) == set(want) and all(
        want[k] - 2 * per_cycle[k] <= flagged[k] <= want[k] for k in want)
    check(ok, f"flagged {dict(flagged)} (want {want}, less one cycle's at the ends)")
    check(not any(s["flagged"] and s["verdict"] == "accept" for s in syncs),
          "the accept sync is not flagged")
    sites = [x for x in rep["flagged_sites"] if (x["kind"], x["position"]) == ("stream", "accept")]
    check(bool(sites) and sites[0]["cycles_with"] >= cycles - 1,
          f"the extra accept syncs flagged in {sites[0]['cycles_with'] if sites else 0} of "
          f"{cycles} cycles")
    unknown = collections.Counter((s["kind"], s["position"]) for s in syncs
                                  if s["verdict"] == "unknown")
    if t["plant"] == "side-pre":
        check(unknown.get(("legacy", "draft-verify"), 0) >= t["planted"] - 2,
              f"side stream made before attach: unknown {dict(unknown)}")
    if t["plant"] == "side":
        named = {s["serialises_with"] for s in syncs if s["flagged"] and s["kind"] == "legacy"}
        check(len(named) == 1 and None not in named, f"legacy flags name the side stream {named}")
    host = collections.Counter((s["call"], s["host_memory"], s["host_from"], s["verdict"])
                               for s in syncs if s["host_memory"])
    print(f"     host-memory verdicts: {dict(host)}")
    rec_path = truth_path.replace(".truth.json", ".sprb")
    if os.environ.get("SPECPROBE") and os.path.exists(rec_path):
        check_copies(t, rec_path, check)


def main():
    results = []
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.truth.json"))):
        check_round(path, results)
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
