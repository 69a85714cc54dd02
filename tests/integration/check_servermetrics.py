#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""--server-metrics against specsim's truth: every sample the recording kept equals what the
served counters held after the cycles done (each cycle's accepted tokens are in the truth),
and the report's figures are those samples' deltas over its span (a drop counted from 0).

check_servermetrics.py vllm|sglang TRUTH REC REPORT_JSON [--reset] [--few-drafts]
"""
import json
import struct
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import recfile  # noqa: E402

SRVMETRIC = 68
DRAFTS, DRAFT_TOKENS, ACCEPTED, GENERATED, ACC_LEN, ACC_RATE = 1, 2, 3, 4, 5, 6
GAUGE_CYCLES = 40


def samples(path):
    """{scrape: (ts, status, {family: value})} of the recording's server-metrics records."""
    data = open(path, "rb").read()
    out = {}
    for off, kind, size in recfile.records(data):
        if kind != SRVMETRIC:
            continue
        _, _, _tgid, ts, value, scrape, _rank, fam, _server, status, _series = \
            struct.unpack_from("<HHIQdIiHBBI", data, off)
        ts0, st0, fams = out.setdefault(scrape, (ts, status, {}))
        if status == 0:
            fams[fam] = value
    return out


def main():
    fmt, truth, rec, rep = sys.argv[1:5]
    reset, few = "--reset" in sys.argv, "--few-drafts" in sys.argv
    acc, k = {}, 0
    for line in open(truth):
        d = json.loads(line)
        if "accept_cycle" in d:
            acc[d["accept_cycle"]] = d["accepted"]
            k = d["k"]
    n = len(acc)
    assert n and sorted(acc) == list(range(n)), "truth: cycles' acceptance missing"
    prefix = [0]
    for c in range(n):
        prefix.append(prefix[-1] + acc[c])
    gen_at = {d + prefix[d]: d for d in range(n + 1)}

    good = [(s, ts, f) for s, (ts, st, f) in sorted(samples(rec).items()) if st == 0 and f]
    assert len(good) >= 2, f"{len(good)} good scrapes"
    checked = 0
    for s, ts, f in good:
        if reset:
            break
        if fmt == "vllm":
            d = int(f[DRAFTS])
            if few:
                continue
            want = {DRAFT_TOKENS: k * d, ACCEPTED: prefix[d], GENERATED: d + prefix[d]}
        else:
            g = int(f[GENERATED])
            assert g in gen_at, f"scrape {s}: {g} generated tokens fit no cycle count"
            d = gen_at[g]
            recent = [acc[c] + 1 for c in range(max(0, d - GAUGE_CYCLES), d)]
            mean = sum(reversed(recent)) / len(recent) if recent else 0.0
            want = {ACC_LEN: mean, ACC_RATE: (mean - 1) / k if recent else 0.0}
        for fam, v in want.items():
            assert abs(f[fam] - v) <= 1e-9 * max(1, abs(v)), \
                f"scrape {s} family {fam}: recorded {f[fam]}, truth {v} after {d} cycles"
        checked += 1

    r = json.load(open(rep))["server"]
    assert r and r["have"], f"report has no server figures: {r}"
    ts_of = {ts: i for i, (s, ts, f) in enumerate(good)}
    assert r["span_start_ns"] in ts_of and r["span_end_ns"] in ts_of, "span is not two scrapes"
    a, b = ts_of[r["span_start_ns"]], ts_of[r["span_end_ns"]]
    secs = (good[b][1] - good[a][1]) / 1e9

    def increase(fam):
        total, prev, drops = 0.0, good[a][2][fam], 0
        for _, _, f in good[a + 1:b + 1]:
            v = f[fam]
            total += v if v < prev else v - prev
            drops += v < prev
            prev = v
        return total, drops

    gen, drops = increase(GENERATED)
    assert r["generated_tokens"] == gen, f"generated {r['generated_tokens']} != {gen}"
    assert abs(r["tokens_per_s"] - gen / secs) <= 1e-9 * gen / secs, "tokens/s"
    if reset:
        assert drops >= 1 and r["resets"] >= 1, f"reset: {drops} drops, report {r['resets']}"
    if fmt == "vllm":
        dr, _ = increase(DRAFTS)
        ac, _ = increase(ACCEPTED)
        assert r["drafts"] == dr and r["accepted_tokens"] == ac, "vllm deltas"
        assert abs(r["accept_length"] - (1 + ac / dr)) <= 1e-12, "accept length"
        if not reset and not few:
            # the same from the truth alone: the cycles between the two scrapes
            da, db = int(good[a][2][DRAFTS]), int(good[b][2][DRAFTS])
            truth_len = 1 + (prefix[db] - prefix[da]) / (db - da)
            assert abs(r["accept_length"] - truth_len) <= 1e-12, "accept length vs truth"
            assert abs(dr - r["cycles"]) <= 2, f"{dr} drafts, {r['cycles']} cycles"
        assert r["counts_disagree"] == few, f"counts_disagree {r['counts_disagree']}"
    else:
        gauges = [f[ACC_LEN] for _, _, f in good[a + 1:b + 1]]
        assert r["accept_length_from"] == "gauge"
        assert abs(r["accept_length"] - sum(gauges) / len(gauges)) <= 1e-9, "gauge mean"
    print(f"{checked} scrapes equal the truth; span {secs:.2f} s, {gen:.0f} tokens, "
          f"{r['tokens_per_s']:.1f} tok/s, accept length {r['accept_length']:.3f}, "
          f"{r['cycles']} cycles")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"mismatch: {e}")
        sys.exit(1)
