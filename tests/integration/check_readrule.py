# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Recordings made bad on purpose, and what a reader must make of them (test_readrule.sh)."""
import json
import struct
import sys
from recfile import RET, call_fields, calls, records, returns


def load(path):
    return bytearray(open(path, "rb").read())


def cut_points(src, n):
    """n offsets strictly inside records, spread over the file, and the record boundaries near them."""
    data = load(src)
    recs = list(records(data))
    step = max(1, len(recs) // n)
    for off, _, size in recs[step // 2::step][:n]:
        print(off + size // 2, off)


def unknown_cookie(src, dst):
    """The middle call's cookie out of range: prints its (pid, tid, seq)."""
    data = load(src)
    c = calls(data)
    off, _, _, _, tgid, tid, seq = c[len(c) // 2]
    struct.pack_into("<I", data, off + 4, 40000)
    open(dst, "wb").write(data)
    print(tgid, tid, seq)


def duplicate(src, dst, k):
    """Every k-th of the calls that return written twice, each with its return: prints how many records."""
    data = load(src)
    rets = returns(data)
    picks = [c for c in calls(data) if (c[4], c[5], c[6]) in rets][::k]
    extra = {}
    for off, size, _, _, tgid, tid, seq in picks:
        extra[off] = size
        extra[rets[(tgid, tid, seq)]] = struct.unpack_from("<H", data, rets[(tgid, tid, seq)] + 2)[0]
    out = bytearray(data[:16 + struct.unpack_from("<I", data, 12)[0]])
    for off, _, size in records(data):
        out += data[off:off + size]
        if off in extra:
            out += data[off:off + size]
    open(dst, "wb").write(out)
    print(len(extra))


def back_in_time(src, dst):
    """The middle call stamped before its thread's previous record; prints its (pid, tid, seq)."""
    data = load(src)
    last = {}
    recs = [(off, kind) for off, kind, _ in records(data) if kind in (1, RET)]
    for off, kind in recs:
        _, ts, tgid, tid, seq = call_fields(data, off)
        if kind == 1 and tid in last and off > recs[len(recs) // 2][0]:
            struct.pack_into("<Q", data, off + 8, last[tid] - 1000)
            open(dst, "wb").write(data)
            print(tgid, tid, seq)
            return
        last[tid] = ts


def unseen_pid(src, dst):
    """The middle call's pid with its byte 3 set (a pid the recording never saw): prints its (pid, tid, seq)."""
    data = load(src)
    c = calls(data)
    off, _, _, _, tgid, tid, seq = c[len(c) // 2]
    struct.pack_into("<I", data, off + 16, tgid | 1 << 24)
    open(dst, "wb").write(data)
    print(tgid, tid, seq)


def header_end(data):
    return 16 + struct.unpack_from("<I", data, 12)[0]


def without(data, drop):
    """data less the records at the offsets in drop."""
    out = bytearray(data[:header_end(data)])
    for off, _, size in records(data):
        if off not in drop:
            out += data[off:off + size]
    return out


def remove_calls(src, dst, n):
    """n consecutive entry records of the thread of the middle call taken out (its numbers skip): prints n."""
    data = load(src)
    c = calls(data)
    _, _, _, _, tgid, tid, _ = c[len(c) // 2]
    mine = [t[0] for t in c if (t[4], t[5]) == (tgid, tid)]
    at = len(mine) // 2
    open(dst, "wb").write(without(data, set(mine[at:at + n])))
    print(n)


def remove_run(src, dst, nbytes):
    """Whole records from the middle of the file taken out, nbytes or a little more: prints the calls in
    them and how many of those a later call of their thread shows missing."""
    data = load(src)
    recs = list(records(data))
    drop, taken = set(), 0
    for off, _, size in recs[len(recs) // 2:]:
        if taken >= nbytes:
            break
        drop.add(off)
        taken += size
    open(dst, "wb").write(without(data, drop))
    # a call is known missing by a later call of its thread
    gone = [t for t in calls(data) if t[0] in drop]
    last = {}
    for t in calls(data):
        if t[0] not in drop:
            last[(t[4], t[5])] = max(last.get((t[4], t[5]), 0), t[6])
    print(len(gone), sum(last.get((t[4], t[5]), 0) > t[6] for t in gone))


def keys(jsonl):
    out = {}
    for line in open(jsonl):
        c = json.loads(line)
        key = (c["pid"], c["tid"], c["seq"])
        assert key not in out, f"{key} twice"
        out[key] = c
    return out


def same_prefix(whole, cut_file, cut_jsonl, whole_jsonl):
    """The cut's calls are those whose entry lies whole before the cut; those returned there as in the whole."""
    data = load(whole)
    size = len(load(cut_file))
    rets = returns(data)
    want = {(t[4], t[5], t[6]) for t in calls(data) if t[0] + t[1] <= size}
    got, full = keys(cut_jsonl), keys(whole_jsonl)
    if set(got) != want:
        print(f"{len(got)} calls, {len(want)} expected: {sorted(set(got) ^ want)[:3]}")
        return 1
    for k, c in got.items():
        r = rets.get(k)
        if r is not None and r + struct.unpack_from("<H", data, r + 2)[0] <= size \
                and c != full[k]:
            print(f"call {k} differs from the whole recording's")
            return 1
    return 0


def input_field(report_json, field):
    print(json.load(open(report_json))["input"][field])


def recording_field(report_json, field):
    print(json.load(open(report_json))["recording"][field])


if __name__ == "__main__":
    fn = globals()[sys.argv[1]]
    sys.exit(fn(*[int(a) if a.isdigit() else a for a in sys.argv[2:]]))
