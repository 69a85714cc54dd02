#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""--server-metrics against specsim's truth: every sample the recording kept equals what the
served counters held after the cycles done (each cycle's accepted tokens are in the truth),
and the report's figures are those samples' deltas over its span (a drop counted from 0).

check_servermetrics.py vllm|sglang TRUTH REC REPORT_JSON [--reset] [--few-drafts]
check_servermetrics.py hostile LOG REC REPORT_JSON REPORT_TXT RECORD_STDERR
    against hostile_metrics.py's LOG: each scrape recorded with the status its answer
    must give (a good one with exactly the values served, or slow on a loaded machine),
    no number of a hostile answer kept, the report's figures those of the good answers
    alone, and one line on stderr per kind of failure naming its cause.
check_servermetrics.py metrics HOST:PORT REC
    once specprobe's own --metrics endpoint says the trace ended: its specprobe_server_*
    series equal the recording's samples (counters: the increase since the first good
    scrape, a drop counted from 0; gauges: the last two good scrapes), under the pid the
    samples were kept under.
"""
import json
import re
import struct
import sys
import time

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


def increase(vals):
    """A counter's increase over its values in order, a drop read as a restart from 0."""
    total = 0.0
    for prev, v in zip(vals, vals[1:]):
        total += v if v < prev else v - prev
    return total


def want_exposition(rec):
    """{series name: value} that specprobe's endpoint must serve, and the samples' pid."""
    data = open(rec, "rb").read()
    tgid, failed, scrapes = 0, set(), {}
    for off, kind, size in recfile.records(data):
        if kind != SRVMETRIC:
            continue
        _, _, pid, ts, value, scrape, _, fam, _, status, _ = \
            struct.unpack_from("<HHIQdIiHBBI", data, off)
        tgid = pid or tgid
        if status:
            failed.add(scrape)
        elif fam:
            scrapes.setdefault((scrape, ts), {})[fam] = value
    good = [f for _, f in sorted(scrapes.items(), key=lambda x: x[0][1])]
    ts = [t for (_, t) in sorted(scrapes, key=lambda x: x[1])]
    want = {"specprobe_server_scrapes_total": len(good),
            "specprobe_server_scrape_failures_total": len(failed)}
    names = {GENERATED: "generated_tokens", DRAFTS: "drafts", DRAFT_TOKENS: "draft_tokens",
             ACCEPTED: "accepted_tokens"}
    for fam, name in names.items():
        # counted from the first good scrape that holds it, up to the last
        idx = [i for i, f in enumerate(good) if fam in f]
        if len(good) >= 2 and ts[-1] > ts[0] and idx and idx[0] < len(good) - 1:
            want[f"specprobe_server_{name}_total"] = increase([good[i][fam] for i in idx])
    if len(good) >= 2 and ts[-1] > ts[-2]:
        a, b = good[-2], good[-1]
        secs = (ts[-1] - ts[-2]) / 1e9
        if GENERATED in a and GENERATED in b:
            want["specprobe_server_tokens_per_second"] = increase([a[GENERATED],
                                                                   b[GENERATED]]) / secs
        length = 0
        if DRAFTS in a and ACCEPTED in a and increase([a[DRAFTS], b[DRAFTS]]) > 0:
            length = 1 + increase([a[ACCEPTED], b[ACCEPTED]]) / increase([a[DRAFTS], b[DRAFTS]])
        elif ACC_LEN in b:
            length = b[ACC_LEN]
        if length > 0:
            want["specprobe_server_accept_length"] = length
    return want, tgid


def metrics_main(addr, rec):
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    import check_metrics
    host, port = addr.rsplit(":", 1)
    for _ in range(600):
        got = check_metrics.scrape(host, int(port))
        if got and "\nspecprobe_tracing 0\n" in got[2]:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the endpoint never said the trace ended")
    text = got[2]
    problems = check_metrics.parse_exposition(text)
    assert not problems, f"exposition: {problems[:3]}"
    want, tgid = want_exposition(rec)
    have = {}
    for m in re.finditer(r'^(specprobe_server_\w+)\{([^}]*)\} (\S+)$', text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        assert labels.get("pid") == str(tgid) and "rank" in labels, \
            f"{m.group(1)}: labels {labels}, the samples' pid {tgid}"
        have[m.group(1)] = float(m.group(3))
    assert have == want, f"served {have}, the recording gives {want}"
    assert f'specprobe_cycles_total{{pid="{tgid}",' in text, f"no cycles of pid {tgid} beside"
    print(f"{len(have)} specprobe_server_ series equal the recording's samples "
          f"({want.get('specprobe_server_generated_tokens_total', 0):.0f} tokens, "
          f"{want.get('specprobe_server_tokens_per_second', 0):.1f} tok/s last)")


STATUSES = ["ok", "down", "slow", "not_text", "too_big", "http", "no_family", "closed",
            "bad_length", "bad_sample", "bad_value"]
# the line each kind of failure gets: what failed, then why (the schedule's first of the kind)
HOSTILE_LINES = {
    "bad_value": "a value its family cannot hold: vllm:generation_tokens_total = -5: below 0",
    "bad_sample": "a sample that is not the text format: vllm:generation_tokens_total: a value "
                  "that is no Prometheus number in 'vllm:generation_tokens_total{engine=",
    "bad_length": "the answer's length is wrong: Content-Length '-1' is no byte count",
    "closed": "the connection closed before a whole answer: the server closed the connection "
              "without an answer",
    "too_big": "the answer is over 8 MiB: its Content-Length is 100000000 bytes",
    "no_family": "no figure to read: none of the vLLM or SGLang speculative-decoding families",
    "not_text": "the answer is not the Prometheus text format: its Transfer-Encoding is chunked",
}


def hostile_main(log, rec, rep_json, rep_txt, rec_err):
    from collections import Counter
    from hostile_metrics import MARK, SCHEDULE
    served = [json.loads(line) for line in open(log)]
    got = [(s, st, f) for s, (ts, st, f) in sorted(samples(rec).items())]
    last_bad = max(i for i, s in enumerate(served) if s["status"] != "ok")
    assert len(got) > last_bad + 1, f"{len(got)} scrapes recorded, the schedule ended at {last_bad}"
    assert len(got) <= len(served), f"{len(got)} scrapes recorded, {len(served)} answered"
    want_failed = Counter()
    for s, (scrape, st, fams) in zip(served, got):
        status = STATUSES[st] if st < len(STATUSES) else st
        assert MARK not in fams.values(), f"scrape {scrape} ({s['case']}) kept {fams}"
        if s["status"] == "ok" and status == "slow":
            want_failed["slow"] += 1  # the answer came late on a loaded machine: no number
            continue
        assert status == s["status"], f"scrape {scrape}: {s['case']} recorded as {status}"
        if status == "ok":
            assert fams == {int(k): float(v) for k, v in s["values"].items()}, \
                f"scrape {scrape}: recorded {fams}, served {s['values']}"
        else:
            want_failed[status] += 1
    assert sum(want_failed.values()) >= len(SCHEDULE)

    r = json.load(open(rep_json))["server"]
    assert r["have"] and r["resets"] == 0, f"have {r['have']}, resets {r['resets']}"
    assert r["failed_by"] == dict(want_failed), f"failed_by {r['failed_by']}, {want_failed}"
    assert r["failed_scrapes"] == sum(want_failed.values()), "failed_scrapes"
    good = {ts: f for ts, st, f in samples(rec).values() if st == 0 and f}
    a, b = good[r["span_start_ns"]], good[r["span_end_ns"]]
    assert r["generated_tokens"] == b[GENERATED] - a[GENERATED], "generated tokens"
    assert r["drafts"] == b[DRAFTS] - a[DRAFTS], "drafts"
    assert abs(r["accept_length"] - 2.6) < 1e-12, f"accept length {r['accept_length']}"
    assert abs(r["acceptance_rate"] - 16 / 30) < 1e-12, f"rate {r['acceptance_rate']}"

    err = open(rec_err).read().splitlines()
    for status in sorted(set(want_failed) - {"slow"}):
        lines = [line for line in err if HOSTILE_LINES[status] in line]
        assert len(lines) == 1, f"{status}: {len(lines)} lines saying '{HOSTILE_LINES[status]}'"
    said = [line for line in err if "--server-metrics" in line]
    assert len(said) == len(set(want_failed)), f"{len(said)} lines: {said}"
    for wrong in ("HTML", "none of the vLLM or SGLang speculative-decoding families (SGLang"):
        assert not any(wrong in line for line in said), f"'{wrong}' said: {said}"
    txt = open(rep_txt).read()
    assert "counter drop" not in txt, "a counter drop reported"
    by = ", ".join(f"{n} {k}" for k, n in sorted(want_failed.items(),
                                                key=lambda kv: STATUSES.index(kv[0])))
    assert f"{sum(want_failed.values())} scrape(s) failed ({by})" in txt, f"text: ({by})"
    print(f"{len(got)} scrapes as answered ({len(SCHEDULE)} hostile, none kept: {by}); "
          f"accept length {r['accept_length']:.2f}, {r['generated_tokens']:.0f} tokens")


def main():
    if sys.argv[1] == "metrics":
        return metrics_main(*sys.argv[2:4])
    if sys.argv[1] == "hostile":
        return hostile_main(*sys.argv[2:7])
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
