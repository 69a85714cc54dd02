#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Are spec_compile.py's syncs attributed to the Python lines that made them?

  check_sites.py SPECPROBE SPECDIR [SOURCE]

SPECDIR is tools/gpu/run_spec.sh's output (recordings, reports, truth). Each sync that
report flags (and the accept sync it does not flag) is joined by thread and entry time
with its call in `dump --json`, and the innermost frame in SOURCE (spec_compile.py) is
compared with the line that the source marks for it. Flagged calls of an entry point
whose probe walks no stack (launches) are listed, not counted against it.
"""
import collections
import glob
import json
import os
import subprocess
import sys

# what each marked line does, found by a piece of its text
MARKS = {
    "item": ".item())",
    "accept": "# the accept sync",
    "scalar_h2d": "# pageable H2D, then a stream sync",
    "ctx": "torch.cuda.synchronize()\n            truth[\"planted\"]",
    "side": "self.side_y = self.side_x @ self.side_w",
    "pageable": "self.pageable.copy_(drafted",
}
# what a plant's flagged calls are, at its marked line
PLANTED = {"ctx": ("cuCtxSynchronize", "torch.cuda.synchronize()"),
           "pageable": ("cuMemcpyDtoHAsync", "the pageable copy")}


def marked_lines(source):
    text = open(source).read()
    lines = {}
    for what, needle in MARKS.items():
        at = text.find(needle)
        if at >= 0:
            lines[what] = text.count("\n", 0, at) + 1
    return lines


def calls_by_key(sp, rec):
    out = subprocess.run([sp, "dump", "--json", rec], capture_output=True, text=True, check=True)
    calls = {}
    for line in out.stdout.splitlines():
        c = json.loads(line)
        if "ts_entry" in c:
            calls[(c["tid"], c["ts_entry"])] = c
    return calls


def site(call, source):
    for f in (call.get("stack") or {}).get("python") or []:
        if os.path.basename(f.get("file") or "") == os.path.basename(source):
            return f["line"]
    return None


def check_variant(sp, rec, source, lines, results):
    name = os.path.basename(rec)[:-5]
    report = json.load(open(rec[:-5] + ".report.json"))
    calls = calls_by_key(sp, rec)
    walked = {c["name"] for c in calls.values() if c.get("stack")}
    flagged, unflagged = collections.Counter(), collections.Counter()
    no_stack, never_walked = 0, collections.Counter()
    for s in report["syncs"]:
        c = calls.get((s["tid"], s["ts"]))
        if c is None or s.get("position") == "outside":
            continue
        line = site(c, source)
        if line is None and s["call"] not in walked:
            never_walked[s["call"]] += s["flagged"]
        elif line is None:
            no_stack += s["flagged"]
        else:
            (flagged if s["flagged"] else unflagged)[(s["call"], line)] += 1
    by_line = {v: k for k, v in lines.items()}
    print(f"{name}: flagged by site {dict((f'{c}@{by_line.get(l, l)}', n) for (c, l), n in flagged.items())}")
    print(f"{name}: not flagged by site {dict((f'{c}@{by_line.get(l, l)}', n) for (c, l), n in unflagged.items())}")
    truth = json.load(open(rec[:-5] + ".truth.json"))
    want_item = truth["item"]
    got_item = sum(n for (c, l), n in flagged.items() if l == lines["item"])
    results.append((abs(got_item - want_item) <= 2,
                    f"{name}: .item() syncs flagged at line {lines['item']}: {got_item} (truth {want_item})"))
    stray = {k: n for k, n in flagged.items() if k[1] not in lines.values()}
    results.append((not stray, f"{name}: flagged syncs at unmarked lines: {stray}"))
    accept = sum(n for (c, l), n in unflagged.items() if l == lines["accept"])
    results.append((accept >= truth["cycles"] - 2,
                    f"{name}: accept sync (line {lines['accept']}) seen unflagged: {accept}"))
    results.append((no_stack == 0, f"{name}: flagged syncs without a Python frame: {no_stack}"))
    if +never_walked:
        print(f"{name}: flagged, of calls whose probe walks no stack: {dict(+never_walked)}")
    plant = truth["plant"]
    if plant == "side":
        got = never_walked["cuLaunchKernel"]
        results.append((abs(got - truth["planted"]) <= 2,
                        f"{name}: side-stream launches flagged, with no stack: {got} "
                        f"(truth {truth['planted']})"))
    if plant in PLANTED:
        call, what = PLANTED[plant]
        got = flagged[(call, lines[plant])]
        results.append((abs(got - truth["planted"]) <= 2,
                        f"{name}: {what} flagged at line {lines[plant]}: {got} "
                        f"(truth {truth['planted']})"))


def main():
    sp, spec_dir = sys.argv[1], sys.argv[2]
    source = sys.argv[3] if len(sys.argv) > 3 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "spec_compile.py")
    lines = marked_lines(source)
    print(f"marked lines in {source}: {lines}")
    results = []
    for rec in sorted(glob.glob(os.path.join(spec_dir, "*.sprb"))):
        check_variant(sp, rec, source, lines, results)
    for ok, text in results:
        print(("ok   " if ok else "FAIL ") + text)
    failed = sum(not ok for ok, _ in results)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
