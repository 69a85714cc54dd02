# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A recording cut by sample_cut against its input: the windows the options make, what they
keep and drop, and the numbering a sampled recorder would have given.

check_sample_cut.py IN OUT IN_CALLS OUT_CALLS ON_MS EVERY_MS PHASE_MS [NESTED]
IN_CALLS and OUT_CALLS are `specprobe dump --json` of each. Prints one line per failure and
exits 1 on any; else one line of counts.

check_sample_cut.py nest IN IN_CALLS ON_MS EVERY_MS PHASE_MS NESTED_IN NESTED
writes NESTED_IN: IN with two other calls made children of the launch before them (one
launch outside every window, one inside), and NESTED: where the cut must put them."""
import json
import struct
import sys
from collections import defaultdict

import recfile

SAMPLE, SAMPLE_OPEN = 72, 1
MS = 1000000


def load_calls(path):
    with open(path) as f:
        return [c for c in map(json.loads, f) if "name" in c]


def samples(data):
    """(open, ts, on_ms, every_ms, probes) of each SP_REC_SAMPLE, in file order."""
    out = []
    for off, kind, size in recfile.records(data):
        if kind == SAMPLE:
            flags, ts, _, on, every, probes = struct.unpack_from("<IQQIII", data, off + 4)
            out.append((flags & SAMPLE_OPEN == SAMPLE_OPEN, ts, on, every, probes))
    return out


def key(c):
    return (c["pid"], c["tid"], c["ts_entry"], c["name"])


def check_windows(wins, t0, on, every, phase, last_call, errs):
    """Open/close alternate, rise, and sit where the options put them; a window the
    input's end cuts closes at its last time, no earlier than its last call."""
    for i, (is_open, ts, w_on, w_every, _) in enumerate(wins):
        if is_open != (i % 2 == 0):
            errs.append(f"sample record {i}: {'open' if is_open else 'close'} out of turn")
        if i and ts < wins[i - 1][1]:
            errs.append(f"sample record {i}: ts {ts} before the previous {wins[i - 1][1]}")
        if (w_on, w_every) != (on, every):
            errs.append(f"sample record {i}: says {w_on}/{w_every} ms")
        start = t0 + phase * MS + (i // 2) * every * MS
        want = start if is_open else start + on * MS
        cut = i == len(wins) - 1 and not is_open and last_call <= ts < want
        if ts != want and not cut:
            errs.append(f"sample record {i}: ts {ts}, the options give {want}")
    if len(wins) % 2:
        errs.append("the last window is never closed")


def renumbered(out_calls, errs):
    """Each thread numbers its calls 1, 2, 3 ... in entry order; parents are among them."""
    by_thread = defaultdict(list)
    for c in out_calls:
        by_thread[(c["pid"], c["tid"])].append(c)
    for thread, calls in by_thread.items():
        seqs = [c["seq"] for c in sorted(calls, key=lambda c: c["ts_entry"])]
        if seqs != list(range(1, len(seqs) + 1)):
            errs.append(f"thread {thread}: calls numbered {seqs[:8]}..., not 1, 2, 3 ...")
        known = set(seqs)
        for c in calls:
            if c["parent_seq"] and c["parent_seq"] not in known:
                errs.append(f"thread {thread}: call {c['seq']} names parent "
                            f"{c['parent_seq']}, which the output lacks")


CALL_SEQ, CALL_PARENT, CALL_DEPTH = 24, 28, 32  # struct sp_call_rec
RET_DEPTH = 30  # struct sp_ret_rec


def in_options(ts, t0, on, every, phase):
    first = t0 + phase * MS
    return ts >= first and (ts - first) % (every * MS) <= on * MS


def nest(argv):
    """Make a launch enclose the call after it, as NCCL's calls enclose their launches."""
    src, calls_path, on, every, phase, dst, expect_path = argv
    data = bytearray(open(src, "rb").read())
    cls = {(c["pid"], c["tid"], c["seq"]): c["class"] for c in load_calls(calls_path)}
    entries = recfile.calls(data)
    t0 = entries[0][3]
    rets = recfile.returns(data)
    prev, want = {}, {}
    for off, _, _, ts, tgid, tid, seq in entries:
        p = prev.get((tgid, tid))
        prev[(tgid, tid)] = (off, ts, seq)
        if not p or p[2] + 1 != seq or cls.get((tgid, tid, seq)) == "launch":
            continue
        if cls.get((tgid, tid, p[2])) != "launch" or data[off + CALL_DEPTH]:
            continue
        inside = in_options(p[1], t0, int(on), int(every), int(phase))
        if inside in want:
            continue
        struct.pack_into("<I", data, off + CALL_PARENT, p[2])
        data[off + CALL_DEPTH] = 1
        if (tgid, tid, seq) in rets:
            data[rets[(tgid, tid, seq)] + RET_DEPTH] = 1
        want[inside] = {"pid": tgid, "tid": tid, "ts": ts, "parent_ts": p[1]}
    if len(want) != 2:
        sys.exit(f"{src}: no launch followed by another call on its thread, "
                 f"{'inside' if True not in want else 'outside'} a window")
    open(dst, "wb").write(data)
    with open(expect_path, "w") as f:
        json.dump([dict(v, kept_parent=k) for k, v in want.items()], f)


def check_nested(path, calls_out, errs):
    """A call whose launch went hangs from the launch's parent, one level up."""
    at = {(c["pid"], c["tid"], c["ts_entry"]): c for c in calls_out}
    for e in json.load(open(path)):
        c = at.get((e["pid"], e["tid"], e["ts"]))
        parent = at.get((e["pid"], e["tid"], e["parent_ts"]))
        if not c:
            errs.append(f"nested call at {e['ts']} missing from the output")
        elif e["kept_parent"] and (not parent or c["parent_seq"] != parent["seq"]
                                   or c["depth"] != 1):
            errs.append(f"call at {e['ts']}: parent {c['parent_seq']} depth {c['depth']}, "
                        f"its launch is {parent and parent['seq']} at depth 0")
        elif not e["kept_parent"] and (parent or c["parent_seq"] or c["depth"]):
            errs.append(f"call at {e['ts']}: parent {c['parent_seq']} depth {c['depth']}, "
                        "its launch was taken out")


def main():
    if len(sys.argv) == 9 and sys.argv[1] == "nest":
        nest(sys.argv[2:])
        return
    if len(sys.argv) not in (8, 9):
        sys.exit(__doc__)
    data_in = open(sys.argv[1], "rb").read()
    data_out = open(sys.argv[2], "rb").read()
    calls_in, calls_out = load_calls(sys.argv[3]), load_calls(sys.argv[4])
    on, every, phase = (int(a) for a in sys.argv[5:8])
    errs = []

    t0 = recfile.calls(data_in)[0][3]
    last_call = max(max(c["ts_entry"], c["ts_return"] or 0) for c in calls_in)
    wins = samples(data_out)
    check_windows(wins, t0, on, every, phase, last_call, errs)
    spans = [(wins[i][1], wins[i + 1][1]) for i in range(0, len(wins) - 1, 2)]

    def inside(ts):
        return any(a <= ts <= b for a, b in spans)

    launch_in = [c for c in calls_in if c["class"] == "launch"]
    other_in = [c for c in calls_in if c["class"] != "launch"]
    launch_out = [c for c in calls_out if c["class"] == "launch"]
    other_out = [c for c in calls_out if c["class"] != "launch"]
    outside = [c for c in launch_out if not inside(c["ts_entry"])]
    if outside:
        errs.append(f"{len(outside)} launches kept outside every window, the first at "
                    f"{outside[0]['ts_entry']}")
    want = sorted(key(c) for c in launch_in if inside(c["ts_entry"]))
    if sorted(key(c) for c in launch_out) != want:
        errs.append(f"{len(launch_out)} launches kept, {len(want)} entered inside a window")
    # every other call whole: entry, completion, result, arguments
    strip = ("seq", "parent_seq", "depth")

    def whole(c):
        return json.dumps({k: v for k, v in c.items() if k not in strip}, sort_keys=True)
    if sorted(map(whole, other_in)) != sorted(map(whole, other_out)):
        errs.append(f"other calls differ: {len(other_in)} in, {len(other_out)} out")
    renumbered(calls_out, errs)
    if len(sys.argv) == 9:
        check_nested(sys.argv[8], calls_out, errs)
    for e in errs[:20]:
        print(e)
    if errs:
        sys.exit(1)
    print(f"{len(spans)} windows, {len(launch_out)} of {len(launch_in)} launches kept, "
          f"{len(other_out)} other calls kept of {len(other_in)}")


if __name__ == "__main__":
    main()
