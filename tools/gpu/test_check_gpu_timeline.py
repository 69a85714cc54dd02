#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""check_gpu_timeline.py on made-up truth and report pairs (no GPU needed).

  python3 tools/gpu/test_check_gpu_timeline.py
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_gpu_timeline as check  # noqa: E402

MS = 1_000_000
# per cycle on the GPU, ms: draft, verify, extend; the rest of a 10 ms cycle is accept
DRAFT, VERIFY, EXTEND, CYCLE = 2.0, 6.0, 0.5, 10.0
T0 = 5_000_000_000


def make_pair(timed=20, warmup=5, shift=None, gpu=True):
    """A truth and a report that agree exactly; the report has the warm-up cycles too."""
    truth = {"pid": 42, "cycles": timed, "warmup": warmup, "cycle_start_ns": [],
             "accept_ns": [], "gpu_ms": {p: [] for p in ("draft", "verify", "extend",
                                                         "accept", "cycle")}}
    cycles = []
    for n in range(warmup + timed):
        host = T0 + n * int(CYCLE * MS)
        gpu_start = host + 30_000  # the first draft launch's work starts 30 us in
        draft_end = gpu_start + int(DRAFT * MS)
        verify_end = draft_end + int(VERIFY * MS)
        ext_start = host + int((CYCLE - EXTEND - 0.2) * MS)
        start_ns = host + 10_000 + (shift or 0)
        cycle = {"pid": 42, "index": n, "start_ns": start_ns,
                 "gpu": {"phases": {
                     "draft": {"start_ns": gpu_start, "end_ns": draft_end,
                               "busy_ns": int(DRAFT * MS) - 100_000},
                     "verify": {"start_ns": draft_end, "end_ns": verify_end,
                                "busy_ns": int(VERIFY * MS)},
                     "extend": {"start_ns": ext_start, "end_ns": ext_start + int(EXTEND * MS),
                                "busy_ns": int(EXTEND * MS)}}} if gpu else None}
        cycles.append(cycle)
        if n >= warmup:
            truth["cycle_start_ns"].append(host)
            truth["accept_ns"].append(host + int(8.5 * MS))
            for p, v in (("draft", DRAFT), ("verify", VERIFY), ("extend", EXTEND),
                         ("accept", 1.0), ("cycle", CYCLE)):
                truth["gpu_ms"][p].append(v)
    # another process's cycles are not the decoder's
    cycles.append({"pid": 7, "index": 0, "start_ns": T0 + 10_000, "gpu": None})
    report = {"cycles": cycles, "summary": {"gpu": {"phases": {
        p: {"busy_ns": int(v * MS)} for p, v in (("draft", DRAFT), ("verify", VERIFY),
                                                 ("extend", EXTEND))}}}}
    return truth, report


def run(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ok = fn(*args)
    return ok, out.getvalue()


class Fidelity(unittest.TestCase):
    def test_exact_passes(self):
        ok, out = run(check.fidelity, *make_pair())
        self.assertTrue(ok, out)
        self.assertIn("paired 20 by time, 20 with GPU figures", out)
        self.assertEqual(out.count("PASS"), 3, out)

    def test_span_decides_not_busy(self):
        truth, report = make_pair()
        for c in report["cycles"]:  # busy well under the span: idle gaps between steps
            if c["gpu"]:
                c["gpu"]["phases"]["draft"]["busy_ns"] = int(1.0 * MS)
        ok, out = run(check.fidelity, truth, report)
        self.assertTrue(ok, out)

    def test_off_by_more_than_two_percent_fails(self):
        truth, report = make_pair()
        for c in report["cycles"]:  # 0.25 ms on a 10 ms cycle: 2.5 %
            if c["gpu"]:
                c["gpu"]["phases"]["verify"]["end_ns"] += int(0.25 * MS)
        ok, out = run(check.fidelity, truth, report)
        self.assertFalse(ok)
        line = [x for x in out.splitlines() if x.startswith("verify")][0]
        self.assertIn("FAIL", line)
        self.assertIn("+0.250", line)
        self.assertEqual(out.count("PASS"), 2, out)

    def test_within_two_percent_passes(self):
        truth, report = make_pair()
        for c in report["cycles"]:  # 0.15 ms: 1.5 %
            if c["gpu"]:
                c["gpu"]["phases"]["extend"]["start_ns"] -= int(0.15 * MS)
        ok, out = run(check.fidelity, truth, report)
        self.assertTrue(ok, out)

    def test_only_paired_cycles_count(self):
        truth, report = make_pair()
        # a warm-up cycle far off changes nothing: it is no timed cycle
        report["cycles"][0]["gpu"]["phases"]["draft"]["end_ns"] += 50 * MS
        # a timed cycle without GPU figures is left out, and the events of it too
        report["cycles"][10]["gpu"] = None
        truth["gpu_ms"]["draft"][5] = 100.0
        ok, out = run(check.fidelity, truth, report)
        self.assertTrue(ok, out)
        self.assertIn("paired 20 by time, 19 with GPU figures", out)

    def test_count_from_the_end_when_no_window_holds(self):
        truth, report = make_pair(shift=int(9 * MS))  # starts after every accept
        ok, out = run(check.fidelity, truth, report)
        self.assertIn("by count from the end", out)
        self.assertTrue(ok, out)

    def test_no_gpu_figures_fails(self):
        ok, out = run(check.fidelity, *make_pair(gpu=False))
        self.assertFalse(ok)
        self.assertIn("no paired cycle has GPU figures", out)

    def test_missing_phase_fails(self):
        truth, report = make_pair()
        for c in report["cycles"]:
            if c["gpu"]:
                del c["gpu"]["phases"]["extend"]
        ok, out = run(check.fidelity, truth, report)
        self.assertFalse(ok)
        self.assertIn("no cycle has its GPU span", out)


class HostOnly(unittest.TestCase):
    def test_host_only_passes(self):
        truth, report = make_pair(gpu=False)
        ok, out = run(check.host_only, report, truth)
        self.assertTrue(ok, out)
        self.assertIn("paired 20 by time", out)

    def test_gpu_figures_fail_host_only(self):
        truth, report = make_pair()
        ok, _ = run(check.host_only, report, truth)
        self.assertFalse(ok)

    def test_no_cycles_fail_host_only(self):
        ok, _ = run(check.host_only, {"cycles": []}, None)
        self.assertFalse(ok)


class CommandLine(unittest.TestCase):
    def call(self, *args):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "check_gpu_timeline.py")
        return subprocess.run([sys.executable, script, *args], capture_output=True,
                              text=True)

    def test_exit_codes(self):
        with tempfile.TemporaryDirectory() as d:
            truth, report = make_pair()
            paths = {}
            for name, doc in (("truth", truth), ("report", report)):
                paths[name] = os.path.join(d, name + ".json")
                with open(paths[name], "w") as f:
                    json.dump(doc, f)
            self.assertEqual(self.call(paths["truth"], paths["report"]).returncode, 0)
            self.assertEqual(self.call("--host-only", paths["report"]).returncode, 1)
            bad = self.call(paths["truth"], os.path.join(d, "none.json"))
            self.assertEqual(bad.returncode, 2)
            self.assertEqual(len(bad.stderr.splitlines()), 1, bad.stderr)


if __name__ == "__main__":
    unittest.main()
