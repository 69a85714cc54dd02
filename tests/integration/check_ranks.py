#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Ranks learned from what the processes show, against the simulated server's truth.

  check_ranks.py report REPORT_JSON REPORT_TXT FROM GT...   each rank process's rank in the
      report equals the truth's for its pid, learned as FROM, and the text says so
  check_ranks.py top BATCH GT...   top's loop and flagged-sync rows: one per rank, each with
      its pid's rank, no two the same
"""
import json
import re
import sys

HOW = {"nccl-init": "its ncclCommInitRank call, traced", "environ": "its environment",
       "title": "its process title", "device": "the one GPU it has open"}


def truth_ranks(paths):
    """{pid: (rank, nranks)} from each rank's summary line."""
    ranks = {}
    for path in paths:
        for line in open(path):
            rec = json.loads(line)
            if rec.get("summary"):
                ranks[rec["pid"]] = (rec["rank"], rec["nranks"])
    return ranks


def check_report(report_json, report_txt, want_from, gts):
    truth = truth_ranks(gts)
    procs = {p["pid"]: p for p in json.load(open(report_json))["processes"]}
    text = open(report_txt).read()
    bad = []
    for pid, (rank, nranks) in sorted(truth.items()):
        p = procs.get(pid)
        if not p:
            bad.append(f"pid {pid}: not in the report")
            continue
        if p["rank"] != rank or p["rank_from"] != want_from:
            bad.append(f"pid {pid}: rank {p['rank']} from {p['rank_from']}, "
                       f"truth {rank} from {want_from}")
        # only the environment and NCCL init tell the size of the world
        if want_from in ("environ", "nccl-init") and p["nranks"] != nranks:
            bad.append(f"pid {pid}: nranks {p['nranks']}, truth {nranks}")
        if not re.search(rf"^  pid {pid}: rank {rank} from {re.escape(HOW[want_from])}",
                         text, re.M):
            bad.append(f"pid {pid}: the text report does not say how its rank was learned")
    others = [pid for pid, p in procs.items() if pid not in truth and p["rank"] is not None]
    if others:
        bad.append(f"pids {others} have a rank and are no rank of the truth")
    for b in bad:
        print(b)
    if not bad:
        print(f"{len(truth)} ranks as the truth's, from {want_from}")
    return 1 if bad else 0


def table(lines, start, width):
    """Rows (split) of the table after the line starting with start, of at least width."""
    rows, inside = [], False
    for line in lines:
        if line.startswith(start):
            inside = True
            continue
        if inside and (not line.startswith("  ") or not line.strip()):
            break
        f = line.split()
        if inside and len(f) >= width and f[0] != "rank" and f[0] != "at":
            rows.append(f)
    return rows


def num(field):
    return -1 if field == "-" else int(field)


def check_top(batch, gts):
    truth = truth_ranks(gts)
    lines = open(batch).read().split("== specprobe top ")[-1].splitlines()
    loops = [(num(f[0]), int(f[1])) for f in table(lines, "LOOPS", 8)]
    sites = [tuple(f[:5]) for f in table(lines, "SYNCS flagged", 8)]
    bad = []
    if sorted(loops) != sorted((r, pid) for pid, (r, _) in truth.items()):
        bad.append(f"loop rows (rank, pid) {loops}, truth {sorted(truth.items())}")
    if len(set(sites)) != len(sites) or len(sites) < len(truth):
        bad.append(f"flagged rows not one per rank: {sites}")
    for s in sites:
        if truth.get(int(s[1]), (None,))[0] != num(s[0]):
            bad.append(f"flagged row {s}: rank {s[0]} is not pid {s[1]}'s")
    for b in bad:
        print(b)
    if not bad:
        print(f"{len(loops)} loop rows and {len(sites)} flagged rows, one per rank")
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 6 and argv[1] == "report":
        return check_report(argv[2], argv[3], argv[4], argv[5:])
    if len(argv) >= 4 and argv[1] == "top":
        return check_top(argv[2], argv[3:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
