#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Compares recorded Python stacks of sync_sites.py with its marked lines.

  check_sites.py STACKS.jsonl SOURCE MINOR COUNT
STACKS: one JSON object per sync call, {"fn": name, "frames": [{"file", "function",
"line"}, ...]} innermost first (pystack_probe), or `specprobe dump --json` lines,
whose calls with a "stack" are taken with its "python" frames. Every call must
match one expected site exactly (file, function and line of each frame listed),
and each site must be seen as many times as sync_sites.py makes it. Prints one line per failure, exits 1 if any.
"""
import json
import re
import sys


def markers(source):
    lines = {}
    with open(source, encoding="utf-8") as f:
        for no, text in enumerate(f, 1):
            m = re.search(r"# at:(\w+)", text)
            if m:
                lines[m.group(1)] = no
    return lines


def expected_sites(at, minor, count):
    """(fn, [(function, line)...] innermost first, calls): the frames checked per site."""
    def name(qual):
        return qual if minor >= 11 else qual.split(".")[-1]
    main = [("main", None), ("<module>", at["module"])]
    return {
        "inner": ("cuStreamSynchronize", [("inner", at["inner"]), ("outer", at["outer"]),
                                          ("main", at["main_outer"])] + main[1:], count),
        "step": ("cuCtxSynchronize", [(name("Model.step"), at["step"]),
                                      ("main", at["main_step"])] + main[1:], count + 1),
        "gen": ("cuStreamSynchronize", [("gen", at["gen"]), ("main", at["main_gen"])]
                + main[1:], count + 2),
        "alt_a": ("cuCtxSynchronize", [("sync_helper", at["helper"]), ("main", at["alt_a"])]
                  + main[1:], count),
        "alt_b": ("cuCtxSynchronize", [("sync_helper", at["helper"]), ("main", at["alt_b"])]
                  + main[1:], count),
        "latin": ("cuCtxSynchronize", [("größe", at["latin"]), ("main", at["main_latin"])]
                  + main[1:], 1),
        "cjk": ("cuCtxSynchronize", [("同步", at["cjk"]), ("main", at["main_cjk"])]
                + main[1:], 1),
        # A thread's outer frames are threading.py's: only ours are checked.
        "thread": ("cuCtxSynchronize", [(name("Model.step"), at["step"]),
                                        ("in_thread", at["thread"])], count),
    }


def matches(call, fn, frames, source, whole):
    got = call.get("frames", [])
    if call.get("fn") != fn or len(got) < len(frames) or (whole and len(got) != len(frames)):
        return False
    for (func, line), frame in zip(frames, got):
        if frame.get("file") != source or frame.get("function") != func or \
                frame.get("line") != line:
            return False
    return True


def as_call(row):
    """A dump --json call as {"fn", "frames"}; None for a call without a stack."""
    if "frames" in row:
        return row
    if "stack" not in row:
        return None
    return {"fn": row.get("name"), "seq": row.get("seq"), "frames": row["stack"]["python"]}


def main():
    path, source, minor, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    calls = [as_call(json.loads(l)) for l in open(path, encoding="utf-8") if l.strip()]
    calls = [c for c in calls if c is not None]
    sites = expected_sites(markers(source), minor, count)
    seen = {site: 0 for site in sites}
    failures = 0
    for call in calls:
        hit = [s for s, (fn, frames, _) in sites.items()
               if matches(call, fn, frames, source, s != "thread")]
        if len(hit) != 1:
            print(f"FAIL: call matches no site: {json.dumps(call, ensure_ascii=False)}")
            failures += 1
            continue
        seen[hit[0]] += 1
    for site, (_, _, want) in sites.items():
        if seen[site] != want:
            print(f"FAIL: site {site}: {seen[site]} calls recorded, {want} made")
            failures += 1
    print(f"{len(calls)} calls, {sum(seen.values())} matched their sites, {failures} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
