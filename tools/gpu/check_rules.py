#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Rules of reading and of the first screen, checked on a real PyTorch program.

  check_rules.py reports DIR          each DIR/*.report.json: no duplicate, out-of-order or
                                      unknown-cookie record, no cut; flagged sites costliest first
  check_rules.py stops RECORD_ERR OUT  every stop continued by the tracer, none by the watchdog;
                                      the program ran to its end (OUT has its "done")
"""
import glob
import json
import re
import sys


def check_reports(folder):
    bad = 0
    for path in sorted(glob.glob(f"{folder}/*.report.json")):
        name = path.rsplit("/", 1)[-1]
        r = json.load(open(path))
        inp = r.get("input", {})
        wrong = {k: v for k, v in inp.items() if v not in (0, None)}
        print(f"{'ok  ' if not wrong else 'FAIL'} {name}: input {wrong or 'sound'}")
        bad += bool(wrong)
        costs = [s["blocked_ns_per_cycle"] for s in r.get("flagged_sites", [])]
        ordered = costs == sorted(costs, reverse=True)
        print(f"{'ok  ' if ordered else 'FAIL'} {name}: flagged sites by ms/cycle "
              f"{[round(c / 1e6, 3) for c in costs]}")
        bad += not ordered
    return 1 if bad else 0


def check_stops(record_err, out):
    text = open(record_err).read()
    took = [float(m) for m in re.findall(r"continued ([\d.]+) ms after its stop", text)]
    watchdog = re.findall(r"which it has not done: continued", text)
    done = "done" in open(out).read()
    ok = took and not watchdog and done
    print(f"{'ok  ' if ok else 'FAIL'} -- CMD: {len(took)} stops continued by the tracer "
          f"after {', '.join(f'{t:.1f}' for t in took)} ms; {len(watchdog)} by the watchdog; "
          f"program {'ran to its end' if done else 'did not finish'}")
    return 0 if ok else 1


def main(argv):
    if len(argv) == 3 and argv[1] == "reports":
        return check_reports(argv[2])
    if len(argv) == 4 and argv[1] == "stops":
        return check_stops(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
