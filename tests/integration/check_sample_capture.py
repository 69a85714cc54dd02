# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A record --sample recording against specsim's truth: windows, launches in them, the rest whole.

  check_sample_capture.py REC[,SEGMENT...] DUMP_JSON ON_MS EVERY_MS TRUTH...

SP_REC_SAMPLE records come from the recording's bytes (a --max-size ring's segments in
turn), calls from `specprobe dump --json`.
Launch probes are in over [open ts, close ts] and for a moment on either side, so a truth
launch whose whole call lies in a window is recorded, and a recorded one lies in a window
and overlaps a truth call there. Every other probed call is recorded as often as made.
"""
import bisect
import collections
import json
import struct
import sys

import recfile

SAMPLE, OPEN, DETACHED, STACK = 72, 1, 2, 26


def samples(paths):
    """(data, offset, size) of each SP_REC_SAMPLE in the files, in turn."""
    for path in paths:
        data = open(path, "rb").read()
        for off, kind, size in recfile.records(data):
            if kind == SAMPLE:
                yield data, off, size


def windows(paths, on_ms, every_ms):
    """[(open ts, close ts, whole from, whole to)], after checking that the records alternate
    and rise: where the tracer set an edge late (late_us), launches are all in only between
    the whole bounds."""
    out, opened, last_ts = [], None, 0
    for data, off, size in samples(paths):
        if size != 40:
            sys.exit(f"SAMPLE record of {size} bytes at {off}")
        _, _, flags, ts, cost, on, every, probes, late = struct.unpack_from("<HHIQQIIII", data,
                                                                            off)
        if (on, every) != (on_ms, every_ms):
            sys.exit(f"SAMPLE at {off} says {on}/{every} ms, asked {on_ms}/{every_ms}")
        if flags == DETACHED:
            # the detach's cost, after the close it follows, at that close's edge
            if opened is not None or not out or ts != out[-1][1]:
                sys.exit(f"SAMPLE detached at {off} follows no close at its ts")
            continue
        if ts <= last_ts:
            sys.exit(f"SAMPLE at {off}: ts {ts} not after the last one's {last_ts}")
        last_ts = ts
        if (flags == OPEN) != (opened is None):
            sys.exit(f"SAMPLE at {off}: {'open' if flags == OPEN else 'close'} out of turn")
        if flags == OPEN:
            if not probes:
                sys.exit(f"SAMPLE open at {off} put no launch probe in")
            opened = (ts, ts + late * 1000)
        else:
            out.append((opened[0], ts, opened[1], ts - late * 1000))
            opened = None
    if opened is not None:
        sys.exit("the last window is not closed")
    return out


def stacks_alone(paths):
    """Stack records whose call (same process, thread and call number) is not in the files."""
    calls, stacks = set(), []
    for path in paths:
        data = open(path, "rb").read()
        for off, kind, _ in recfile.records(data):
            if kind == recfile.CALL:
                calls.add(tuple(recfile.call_fields(data, off)[2:]))
            elif kind == STACK:
                stacks.append(struct.unpack_from("<III", data, off + 4))
    return sum(1 for s in stacks if s not in calls)


def inside(wins, ts):
    """The window holding ts, or None."""
    i = bisect.bisect_right([w[0] for w in wins], ts) - 1
    return wins[i] if i >= 0 and ts <= wins[i][1] else None


def main():
    rec, dump, on_ms, every_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    wins = windows(rec.split(","), on_ms, every_ms)
    if len(wins) < 2:
        sys.exit(f"{len(wins)} window(s): the run should span several")
    calls = [json.loads(line) for line in open(dump)]
    launch_names = {c["name"] for c in calls if c["class"] == "launch"}
    truth = [json.loads(line) for path in sys.argv[5:] for line in open(path)]
    truth = [t for t in truth if "base" in t and "before" in t]
    made = collections.Counter(t["base"] for t in truth)
    got = collections.Counter(c["name"] for c in calls)

    # everything but launches all the time: each probed name as often as specsim made it
    others = 0
    for name, n in got.items():
        if name in launch_names:
            continue
        if n != made[name]:
            sys.exit(f"{name}: {n} recorded, {made[name]} made")
        others += n
    syncs = sum(n for c, n in got.items() if c.endswith("Synchronize"))
    if not syncs:
        sys.exit("no sync recorded")

    launches = [c for c in calls if c["name"] in launch_names]
    for c in launches:
        if not inside(wins, c["ts_entry"]):
            sys.exit(f"{c['name']} seq {c['seq']} at {c['ts_entry']} lies in no window")
    alone = stacks_alone(rec.split(","))
    if alone:
        sys.exit(f"{alone} stack records without their call")
    made_launches = [t for t in truth if t["base"] in launch_names]
    whole = sum(1 for t in made_launches
                if (w := inside(wins, t["before"])) and t["before"] >= w[2] and t["after"] <= w[3])
    touching = sum(1 for t in made_launches
                   if inside(wins, t["before"]) or inside(wins, t["after"]) or
                   any(t["before"] < w[0] and t["after"] > w[1] for w in wins))
    if not whole <= len(launches) <= touching:
        sys.exit(f"{len(launches)} launches recorded; {whole} made wholly inside windows, "
                 f"{touching} touching one")
    if len(launches) >= len(made_launches):
        sys.exit(f"{len(launches)} launches recorded of {len(made_launches)} made: not sampled")
    stacked = sum(1 for c in launches if c.get("stack"))
    print(f"{len(wins)} windows; {len(launches)} of {len(made_launches)} launches, all in "
          f"windows ({whole} made wholly inside{f', {stacked} with a stack' if stacked else ''}); "
          f"{syncs} syncs and {others} other calls as made")


if __name__ == "__main__":
    main()
