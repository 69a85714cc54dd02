#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Reads top's screens and batch blocks and checks them against ground truth.

  check_top.py rate SCREEN HANG_CYCLE GT...   cycles/s of each rank against the truth
  check_top.py sampled screen|batch CAPTURE REC REPORT.json   --sample: the header's line
  check_top.py panels SCREEN CALL POS HUNG_CALL HUNG_RANK
  check_top.py replay BATCH REPORT_JSON   top --replay's end block against report --json
  check_top.py frames BATCH RECORDING INTERVAL   a batch replay's blocks against the
      recording's own span: from its first call to its last timed record
  check_top.py siteorder REPORT_JSON REPORT_TXT BATCH   flagged sites costliest first in
      report --json, the text report and top's end block
  check_top.py fit screen|batch CAPTURE WIDTH HEIGHT CALL POS SITE   a screen, or batch
      blocks, captured with joined lines (tmux capture-pane -J) at WIDTH x HEIGHT: no line
      longer than WIDTH, every line where its panel puts it (a row starts with its first
      column, none is the tail of another), the loops' cycles/s and TOK/S, the flagged CALL
      at POS with its call site (a function named SITE) in its row; the header's answer:
      its cycles/s those of the loop rows, and CALL named at SITE as the top flagged sync
"""
import json
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recfile  # noqa: E402

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
    sync = re.search(rf'^\s+\S+\s+\d+\s+{call}\s+{pos}\s', text, re.M)
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
        if in_sites and len(f) >= 8 and f[0] != 'rank':
            key = (f[2], f[3])
            totals[key] = totals.get(key, 0) + int(f[7])    # call_site may hold spaces
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


# kinds that carry a time at offset 8 (bpf/specprobe.h); the others hold tables or call sites
TIMED = {1, 2, 3, 4, 5, 6, 16, 17, 18, 19, 22, 23, 24, 25, 29, 30, 31}
STACK, OBJMAP = 26, 28


def recording_span(path):
    """(first call's time, last timed record's time, kinds counted) of a recording."""
    data = open(path, 'rb').read()
    first = last = 0
    kinds = {}
    for off, kind, size in recfile.records(data):
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind not in TIMED or size < 16:
            continue
        ts = struct.unpack_from('<Q', data, off + 8)[0]
        if kind == 1 and not first:
            first = ts
        last = max(last, ts)
    return first, last, kinds


def check_frames(batch, rec, interval):
    """One block per interval of the recording's span and an end block; none past the span."""
    first, last, kinds = recording_span(rec)
    span = (last - first) / 1e9
    times = [float(t) for t in re.findall(r'^== specprobe top \w+ t=([\d.]+)s', open(batch).read(),
                                          re.M)]
    want = int(span / interval) + 1
    said = (f'{len(times)} blocks over {span:.2f} s at {interval} s (want {want} +-2), '
            f'{kinds.get(STACK, 0)} stack and {kinds.get(OBJMAP, 0)} mapping records')
    bad = abs(len(times) - want) > 2
    late = [t for t in times if t > span + 0.05]
    if late:
        said += f'; blocks at t={late[0]} past the span'
        bad = True
    print(said)
    return 1 if bad else 0


def text_sites(path):
    """(call, position, kind, count, ms/cycle) of the text report's flagged site table."""
    rows, inside = [], False
    for line in open(path):
        if line.startswith('Flagged syncs:'):
            inside = True
            continue
        if inside and line.startswith('  not flagged'):
            break
        f = line.split()
        if inside and len(f) == 7 and f[0] != 'call':
            rows.append((f[0], f[1], f[2], int(f[4]), float(f[6])))
    return rows


def top_site_costs(lines):
    """blk_ms/cyc of the flagged rows of a top block, in order."""
    costs, inside = [], False
    for line in lines:
        if line.startswith('SYNCS'):
            inside = True
            continue
        if inside and (line.startswith('HUNG') or not line.strip()):
            break
        f = line.split()
        if inside and len(f) >= 8 and f[0] != 'rank':
            costs.append(float(f[6]))
    return costs


def costliest_first(sites):
    """True when each site costs more than the next, or as much with more calls, or the same
    count and a name not after the next one's."""
    for a, b in zip(sites, sites[1:]):
        ka = (-a['blocked_ns_per_cycle'], -a['count'], a['call'])
        kb = (-b['blocked_ns_per_cycle'], -b['count'], b['call'])
        if ka > kb:
            return False
    return True


def check_siteorder(report_json, report_txt, batch):
    sites = json.load(open(report_json))['flagged_sites']
    text = text_sites(report_txt)
    top = top_site_costs(end_block(batch))
    bad = 0
    if len(sites) < 2:
        print(f'{len(sites)} flagged sites: nothing to order')
        return 1
    if not costliest_first(sites):
        print('report --json: ' + ', '.join(f"{s['call']} {s['blocked_ns_per_cycle']:.0f}"
                                            for s in sites))
        bad = 1
    want = [(s['call'], s['position'], s['kind'], s['count']) for s in sites[:len(text)]]
    if [r[:4] for r in text] != want or len(text) != min(len(sites), 8):
        print(f'text report order {text}, --json {want}')
        bad = 1
    if any(a[4] < b[4] for a, b in zip(text, text[1:])):
        print(f'text report not costliest first: {text}')
        bad = 1
    if len(top) < 2 or any(a < b for a, b in zip(top, top[1:])):
        print(f'top end block blk_ms/cyc {top}')
        bad = 1
    by_count = sorted(sites, key=lambda s: -s['count'])
    if not bad:
        print('costliest first: ' + ', '.join(
            f"{s['call']}@{s['position']} {s['blocked_ns_per_cycle'] / 1e6:.3f} ms/cycle "
            f"x{s['count']}" for s in sites) +
            ('' if by_count == sites else ' (not the count order)'))
    return bad


# A table's header: its column names, some of several words.
HEAD_WORDS = ["PHASES d v a e, blank other", "PHASES d v a e", "P50 ms", "P99 ms", "FLAGGED SYNC", "BLK ms/CYC", "CALL SITE",
              "HUNG CALL", "AGE s", "ENTRY POINT"]
NUMBER = r'-?[\d.]+%?'


def head_columns(line):
    for words in HEAD_WORDS:
        line = line.replace(words, words.replace(' ', '_'))
    return line.split()


def row_ok(cols, line):
    """A table row has a value under each column, the first being the rank (or -)."""
    f = line.split()
    if cols[0].lower() == 'rank' and not re.match(r'^(-|\d+)$', f[0] if f else ''):
        return False
    bar = [c for c in cols if c.startswith('PHASES_d_v_a_e')]
    if bar:                             # the bar may hold spaces: one value, bracketed
        m = re.search(r'\[[dvae ]*\]', line)
        f = (line[:m.start()] + 'bar' + line[m.end():]).split() if m else f
    if cols[-1].lower() == 'call_site':
        if len(f) == len(cols) - 1:
            return True                 # no call site recorded for this row
        return len(f) >= len(cols)      # "symbol+0x48 (object)": a site of several words
    return len(f) == len(cols)


class Panels:
    """Lines read panel by panel; what matches no panel's shape is a fragment."""

    def __init__(self):
        self.bad, self.rates, self.sites, self.cols = [], [], [], None
        self.heads, self.answers, self.top_syncs, self.where = [], [], [], []

    def row(self, n, line):
        if not row_ok(self.cols, line):
            self.bad.append(f'line {n}: not a row of its table: {line!r}')
            return
        f = line.split()
        names = [c.lower() for c in self.cols]
        if 'cycles/s' in names and f[names.index('cycles/s')] != 'idle':
            self.rates.append(float(f[names.index('cycles/s')].lstrip('~')))
        self.heads.append(names)
        for key in ('flagged_sync', 'call'):
            if key in names and 'position' in names:
                self.sites.append((f[names.index(key)], f[names.index('position')]))
                if names[-1] == 'call_site' and len(f) >= len(names):
                    self.where.append(' '.join(f[len(names) - 1:]))

    def answer(self, line):
        """The header's two lines: rates and shares, then the top flagged sync."""
        m = re.match(r'^ ?~?([\d.]+) cycles/s  (-|[\d.]+) tok/s  p50 ~?[\d.]+ ms  ', line)
        if m:
            self.answers.append(float(m.group(1)))
            return True
        m = re.match(r'^ ?top flagged: (\w+) (?:[a-z-]+ )?[\d.]+% of cycle(?: at (.*))?$', line)
        if m:
            self.top_syncs.append((m.group(1), m.group(2)))
            return True
        return re.match(r'^ ?no (cycle|flagged sync) in the window$', line) is not None


def read_screen(lines, p):
    """The curses screen: title, tracer line, then tables of a header and rows, blank lines
    between them, the key line last."""
    for n, line in enumerate(lines):
        if n == 0:
            ok = line.startswith(' specprobe top ')
        elif n in (1, 2):
            ok = p.answer(line)
        elif n == 3:
            ok = re.match(r'^ (probes|records|drops|probes cost)', line) is not None
        elif n == 4 and line.startswith(' sampled '):
            ok = True                   # --sample: what the windows saw
        elif not line.strip():
            p.cols, ok = None, True
        elif re.match(r'^ (RANK|ENTRY POINT) ', line):
            p.cols, ok = head_columns(line.split('  (open')[0]), True
        elif line.startswith(('  no flagged syncs', '  none')):
            ok = True
        elif n == len(lines) - 1 and re.match(r'^ (\? help|\d+ flagged syncs)', line):
            ok = True                   # the key line, right under a table that fills
        elif p.cols:
            p.row(n, line)
            ok = True
        else:
            ok = n == len(lines) - 1 and re.match(r'^ (\? help|\d+ flagged syncs)', line)
        if not ok:
            p.bad.append(f'line {n}: {line!r}')


BATCH_LINES = (r'^== specprobe top ', r'^tracer: ', r'^probes cost ', r'^sampled ',
               r'^(LOOPS|CALLS)$',
               r'^SYNCS flagged$', r'^HUNG open>', r'^  \(\d+ more flagged')


def read_batch(lines, p):
    """Blocks of text: each line one of the block's own, or a row of the table above it."""
    for n, line in enumerate(lines):
        if p.answer(line):
            continue
        if not line.strip() or any(re.match(b, line) for b in BATCH_LINES):
            p.cols = ([] if line in ('LOOPS', 'SYNCS flagged') or line.startswith('HUNG')
                      else ['entry', 'rate'] if line == 'CALLS' else p.cols)
            continue
        elif p.cols == []:
            p.cols = head_columns(line)
            if p.cols[0] != 'rank':
                p.bad.append(f'line {n}: a table without its header: {line!r}')
        elif p.cols:
            p.row(n, line)
        else:
            p.bad.append(f'line {n}: {line!r}')


def check_answer(p, call, site):
    """The header names what the tables show: cycles/s among the loop rows' (their mean),
    and the flagged call at its site."""
    if not p.answers:
        p.bad.append('no header line with cycles/s')
    elif p.rates and not min(p.rates) - 0.05 <= p.answers[-1] <= max(p.rates) + 0.05:
        p.bad.append(f'header {p.answers[-1]} cycles/s, the loop rows {p.rates}')
    if not any(c == call and w and site in w for c, w in p.top_syncs):
        p.bad.append(f'no header naming {call} at {site}: {p.top_syncs[-3:]}')
    if not any(site in w for w in p.where):
        p.bad.append(f'no flagged row with its call site {site}: {p.where[-3:]}')
    if not any('tok/s' in h for h in p.heads):
        p.bad.append('no TOK/S column')


def check_fit(mode, capture, width, height, call, pos, site):
    lines = open(capture).read().rstrip('\n').split('\n')
    p = Panels()
    long = [(n, len(l)) for n, l in enumerate(lines) if len(l) > width]
    if mode == 'screen' and len(lines) > height:
        p.bad.append(f'{len(lines)} lines on a screen of {height}')
    (read_screen if mode == 'screen' else read_batch)(lines, p)
    if long:
        p.bad.append(f'lines longer than {width}: {long[:5]}')
    if not p.rates:
        p.bad.append('no loop row with its cycles/s')
    if (call, pos) not in p.sites:
        p.bad.append(f'no flagged {call} at {pos}: {sorted(set(p.sites))}')
    check_answer(p, call, site)
    for b in p.bad[:6]:
        print(b)
    if not p.bad:
        print(f'{len(lines)} lines within {width} columns, cycles/s '
              f'{", ".join(f"{r:.1f}" for r in p.rates[:4])} (header {p.answers[-1]}), TOK/S, '
              f'{call} at {pos} flagged, at {site} in its row and the header')
    return 1 if p.bad else 0


SAMPLED = re.compile(r'^ ?sampled (\S+)/(\S+): launches seen (\d+) % of the time; ~ from '
                     r'(\d+) whole cycles$')




def as_taken(ms):
    """A duration as --sample takes it: 40ms, 2.5s."""
    return '%gs' % (ms / 1000) if ms >= 1000 and ms % 100 == 0 else '%dms' % ms


def check_sampled(mode, capture, rec, report_path):
    """--sample: the header says the duty cycle, the share seen and the whole cycles as the
    recording and its report have them; every loop figure and launch rate is marked '~',
    no other call's rate."""
    lines = open(capture).read().rstrip('\n').split('\n')
    sampling = json.load(open(report_path))['sampling']
    on, every, opens = recfile.sample_duty(rec)
    bad = []
    heads = [n for n, l in enumerate(lines) if SAMPLED.match(l)]
    if not heads:
        print('no sampled line in the header')
        return 1
    block = lines[heads[-1] - 5:] if mode == 'batch' else lines
    m = SAMPLED.match(lines[heads[-1]])
    if (m.group(1), m.group(2)) != (as_taken(on), as_taken(every)):
        bad.append(f'duty {m.group(1)}/{m.group(2)}, the recording {on}ms/{every}ms')
    if abs(int(m.group(3)) - 100 * sampling['seen_share']) > 0.5 + 1e-9:
        bad.append(f'seen {m.group(3)} %, the report {100 * sampling["seen_share"]:.2f} %')
    if int(m.group(4)) != sampling['cycles_whole']:
        bad.append(f'{m.group(4)} whole cycles, the report {sampling["cycles_whole"]}')
    if sampling['windows'] != opens:
        bad.append(f'the report has {sampling["windows"]} windows, the recording {opens}')
    if not any(re.match(r'^ ?~[\d.]+ cycles/s .* p50 ~', l) for l in block):
        bad.append('the answer line does not mark its cycles/s and p50')
    rows, at = [], [n for n, l in enumerate(block) if re.match(r'^\s*(LOOPS$|RANK\s+PID\s+(TID\s+)?CYC)', l)]
    for l in block[at[-1] + 1:] if at else []:
        if re.match(r'^\s+rank\s', l):
            continue
        if not re.match(r'^\s+(-|\d+)\s+\d+\s', l):
            break
        rows.append(l)
    figures = [c for l in rows for c in l.split() if c[-1:] == '%' or '.' in c]
    if not rows or not all(c.startswith('~') for c in figures):
        bad.append(f'loop figures not all marked: {rows[:2]}')
    launch = [l for l in block if re.match(r'^ +cuLaunchKernel +~[\d.]+(/s)?$', l)]
    plain = [l for l in block if re.match(r'^ +cuStreamSynchronize +[\d.]+(/s)?$', l)]
    if not launch or not plain:
        bad.append('cuLaunchKernel not marked or cuStreamSynchronize marked in the calls')
    for b in bad:
        print(b)
    if not bad:
        print(f'{m.group(0).strip()} as the recording ({opens} windows) and its report have it, '
              f'{len(figures)} loop figures and the launch rate marked ~')
    return 1 if bad else 0


def main():
    cmd = sys.argv[1]
    if cmd == 'sampled':
        return check_sampled(*sys.argv[2:6])
    if cmd == 'fit':
        return check_fit(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                         *sys.argv[6:9])
    if cmd == 'frames':
        return check_frames(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    if cmd == 'siteorder':
        return check_siteorder(*sys.argv[2:5])
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
