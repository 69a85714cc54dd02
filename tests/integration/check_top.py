#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Reads top's screens and batch blocks and checks them against ground truth.

  check_top.py rate SCREEN HANG_CYCLE GT...   cycles/s of each rank against the truth
  check_top.py panels SCREEN CALL POS HUNG_CALL HUNG_RANK
  check_top.py replay BATCH REPORT_JSON   top --replay's end block against report --json
"""
import json
import re
import sys

LOOP_ROW = re.compile(r'^\s+(-|\d+)\s+(\d+)\s+(\d+)\s+(idle|[\d.]+)\s')


def loop_rows(lines):
    """(rank, pid, tid, cycles/s or None, total) of the LOOPS table of one block or screen."""
    rows, in_loops = [], False
    for line in lines:
        if re.match(r'^\s*(LOOPS|RANK\s+PID\s+TID\s+CYCLES)', line):
            in_loops = True
            continue
        if in_loops and not LOOP_ROW.match(line):
            if line.strip().startswith('rank'):
                continue
            break
        if in_loops:
            f = line.split()
            rate = None if f[3] == 'idle' else float(f[3])
            rows.append((f[0], int(f[1]), int(f[2]), rate, int(f[7])))
    return rows


def truth_spans(paths):
    """Per rank: the truth's cycles in order, each (start, end)."""
    ranks = {}
    for path in paths:
        spans = {}
        rank = None
        for line in open(path):
            rec = json.loads(line)
            if 'phase' in rec and 'start' in rec and 'name' not in rec:
                c = rec['cycle']
                rank = rec['rank']
                s, e = spans.get(c, (rec['start'], rec['end']))
                spans[c] = (min(s, rec['start']), max(e, rec['end']))
        ranks[str(rank)] = [spans[c] for c in sorted(spans)]
    return ranks


def check_rate(screen, gts, hang_cycle):
    """A screen from before the hang whose window holds every cycle so far: the truth's rate
    over the same cycles (the first TOTAL), counted as top counts them."""
    rows = [r for r in loop_rows(open(screen).read().splitlines()) if r[3]]
    spans = truth_spans(gts)
    if len(rows) != len(spans):
        print(f'{len(rows)} loop rows with a rate, the truth has {len(spans)} ranks')
        return 1
    bad, said = 0, []
    for rank, pid, tid, rate, total in rows:
        cycles = spans.get(rank, [])[:total]
        if total >= hang_cycle or len(cycles) < 10:
            print(f'rank {rank}: {total} cycles on screen, cannot compare')
            return 1
        truth = len(cycles) / ((cycles[-1][1] - cycles[0][0]) / 1e9)
        said.append(f'rank {rank} {rate} (truth {truth:.1f})')
        if abs(rate - truth) > 0.05 * truth:
            bad = 1
    print('cycles/s ' + ', '.join(said))
    return bad


def check_panels(screen, call, pos, hung_call, hung_rank):
    text = open(screen).read()
    sync = re.search(rf'^\s+\S+\s+{call}\s+{pos}\s', text, re.M)
    hung = re.search(rf'^\s+{hung_rank}\s+\d+\s+\d+\s+{hung_call}\s+([\d.]+)', text, re.M)
    if not sync:
        print(f'no {call} at {pos} in the sync panel')
    if not hung:
        print(f'no {hung_call} of rank {hung_rank} in the hung panel')
    if sync and hung:
        print(f'{call} at {pos} flagged; {hung_call} of rank {hung_rank} hung {hung.group(1)} s')
    return 0 if sync and hung else 1


def end_block(path):
    blocks = open(path).read().split('== specprobe top ')
    ends = [b for b in blocks if b.startswith('end')]
    return ends[-1].splitlines() if ends else []


def site_totals(lines):
    totals, in_sites = {}, False
    for line in lines:
        if line.startswith('SYNCS'):
            in_sites = True
            continue
        if in_sites and (line.startswith('HUNG') or not line.strip()):
            break
        f = line.split()
        if in_sites and len(f) >= 7 and f[0] != 'rank':
            key = (f[1], f[2])
            totals[key] = totals.get(key, 0) + int(f[-1])
    return totals


def check_replay(batch, report_path):
    lines = end_block(batch)
    rep = json.load(open(report_path))
    if not lines:
        print('no end block')
        return 1
    bad = 0
    rows = {(r[1], r[2]): r for r in loop_rows(lines)}
    # the rate is over the last window: the report's over the run only when the run fits in it
    title = re.search(r't=([\d.]+)s window=([\d.]+)s', lines[0])
    whole = title and float(title.group(1)) <= float(title.group(2))
    for lp in rep['loops']:
        row = rows.get((lp['pid'], lp['tid']))
        # windows may tell a lead's role only later than the whole run does: a cycle at a
        # loop's edge may differ, never more
        if not row or abs(row[4] - lp['cycles']) > 1:
            print(f"loop {lp['pid']}/{lp['tid']}: report {lp['cycles']} cycles, top {row}")
            bad = 1
        elif whole and row[3] and abs(row[3] - lp['cycles_per_s']) > 0.02 * lp['cycles_per_s']:
            print(f"loop {lp['tid']}: {row[3]} cycles/s, report {lp['cycles_per_s']}")
            bad = 1
    want = {}
    for s in rep['flagged_sites']:
        key = (s['call'], s['position'])
        want[key] = want.get(key, 0) + s['count']
    got = site_totals(lines)
    if got != want:
        print(f'flagged sites: top {got}, report {want}')
        bad = 1
    if not bad:
        print(f"{len(rep['loops'])} loops, {sum(want.values())} flagged syncs as the report")
    return bad


def main():
    cmd = sys.argv[1]
    if cmd == 'rate':
        return check_rate(sys.argv[2], sys.argv[4:], int(sys.argv[3]))
    if cmd == 'panels':
        return check_panels(*sys.argv[2:7])
    if cmd == 'replay':
        return check_replay(sys.argv[2], sys.argv[3])
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main())
