#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Check a trace from 'specprobe export' against the recording it came from.

  check_perfetto.py TRACE --dump DUMP.jsonl --report REPORT.json
  check_perfetto.py TRACE --counts     (slices and instants per track kind and name)
  check_perfetto.py TRACE --call-sites (calls per name and call_site annotation)
  check_perfetto.py TRACE --server REC (the server's counter tracks against REC's samples)
  check_perfetto.py TRACE --sample REC (--sample: the window slices against REC's windows)

Parses the protobuf wire format itself (no packages) and checks: the first packet is a
clock snapshot; every track event has the sequence id; interned ids (event names,
categories, annotation names) are defined before use on a cleared sequence; every track
is described; slices nest and timestamps do not go back on each track; every call of the
dump is on its thread's track exactly once; cycles per loop and flagged syncs equal the
report's; flows and graph roles are there. With --server: the tracks "server tokens/s" and
"server accept length" hold, at each good scrape but the last, exactly the figures of the
recorded samples from it to the next (counter deltas, a drop counted from 0; else the gauge).
"""
import argparse
import json
import struct
import sys
from collections import Counter, defaultdict

sys.path.insert(0, __file__.rsplit('/', 1)[0])
import recfile  # noqa: E402


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def fields(buf):
    """(field, wire type, value) of one message; LEN values as bytes."""
    i, n = 0, len(buf)
    while i < n:
        tag, i = varint(buf, i)
        num, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v = int.from_bytes(buf[i:i + 8], 'little')
            i += 8
        elif wt == 2:
            ln, i = varint(buf, i)
            v = bytes(buf[i:i + ln])
            if len(v) != ln:
                raise ValueError('length past the end')
            i += ln
        elif wt == 5:
            v = int.from_bytes(buf[i:i + 4], 'little')
            i += 4
        else:
            raise ValueError('wire type %d' % wt)
        yield num, wt, v
    if i != n:
        raise ValueError('message overruns its length')


def msg(buf):
    d = defaultdict(list)
    for num, _, v in fields(buf):
        d[num].append(v)
    return d


def one(d, num, default=None):
    return d[num][-1] if d.get(num) else default


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


class Checker:
    def __init__(self):
        self.errors = []
        self.tracks = {}            # uuid -> descriptor fields
        self.names, self.cats, self.ann_names = {}, {}, {}
        self.stack = defaultdict(list)
        self.last_ts = {}
        self.events = []            # (uuid, type, ts, name, cats, annotations, flows)
        self.counters = defaultdict(list)   # uuid -> [(ts, value)]
        self.spans = defaultdict(list)      # uuid -> [(begin, end)] of its slices, as ended

    def err(self, text):
        if len(self.errors) < 20:
            self.errors.append(text)

    def packet(self, idx, pkt):
        p = msg(pkt)
        flags = one(p, 13, 0)
        if idx == 0:
            if not p.get(6):
                self.err('first packet is not a clock snapshot')
            if not flags & 1:
                self.err('first packet does not clear the incremental state')
        if p.get(12):
            if not self.cleared:
                self.err('packet %d: interned data before the sequence was cleared' % idx)
            idata = msg(one(p, 12))
            for field, table in ((1, self.cats), (2, self.names), (3, self.ann_names)):
                for e in idata.get(field, []):
                    e = msg(e)
                    table[one(e, 1)] = one(e, 2).decode()
        if flags & 1:
            self.cleared = True
        if p.get(60):
            self.descriptor(msg(one(p, 60)))
        if p.get(11):
            if one(p, 10) != 1:
                self.err('packet %d: track event without sequence id 1' % idx)
            if 8 not in p:
                self.err('packet %d: track event without a timestamp' % idx)
            self.event(idx, one(p, 8, 0), msg(one(p, 11)), flags)

    def descriptor(self, d):
        uuid = one(d, 1)
        desc = {'parent': one(d, 5), 'name': (one(d, 2) or b'').decode()}
        if d.get(3):
            pd = msg(one(d, 3))
            desc['pid'] = one(pd, 1)
            desc['name'] = (one(pd, 6) or b'').decode()
        if d.get(4):
            td = msg(one(d, 4))
            desc['pid'], desc['tid'] = one(td, 1), one(td, 2)
        desc['counter'] = bool(d.get(8))
        old = self.tracks.get(uuid)
        if old and (old.get('pid'), old.get('tid'), old['parent']) != \
                (desc.get('pid'), desc.get('tid'), desc['parent']):
            self.err('track %d described twice with another identity' % uuid)
        self.tracks[uuid] = desc

    def event(self, idx, ts, e, flags):
        uuid, kind = one(e, 11, 0), one(e, 9, 0)
        if uuid not in self.tracks:
            self.err('packet %d: track %d not described before use' % (idx, uuid))
        name_iid, cat_iids = one(e, 10), e.get(3, [])
        if (name_iid or cat_iids) and not flags & 2:
            self.err('packet %d: interned ids without SEQ_NEEDS_INCREMENTAL_STATE' % idx)
        if name_iid is not None and name_iid not in self.names:
            self.err('packet %d: name iid %d not interned' % (idx, name_iid))
        for c in cat_iids:
            if c not in self.cats:
                self.err('packet %d: category iid %d not interned' % (idx, c))
        if ts < self.last_ts.get(uuid, 0):
            self.err('packet %d: track %d goes back in time' % (idx, uuid))
        self.last_ts[uuid] = ts
        if kind == 1:
            self.stack[uuid].append(ts)
        elif kind == 2:
            if not self.stack[uuid]:
                self.err('packet %d: END with no open slice on track %d' % (idx, uuid))
            else:
                self.spans[uuid].append((self.stack[uuid].pop(), ts))
        elif kind == 4 and not self.tracks.get(uuid, {}).get('counter'):
            self.err('packet %d: counter value on a slice track' % idx)
        if kind == 4:
            if 44 in e:     # double_counter_value, fixed64 bits
                value = struct.unpack('<d', one(e, 44).to_bytes(8, 'little'))[0]
            else:
                value = signed(one(e, 30, 0))
            self.counters[uuid].append((ts, value))
        if e.get(4) and not flags & 2:
            self.err('packet %d: interned annotation names without SEQ_NEEDS' % idx)
        if kind in (1, 3):
            ann = {}
            for a in e.get(4, []):
                a = msg(a)
                val = [v for k, vs in a.items() if k not in (1, 10) for v in vs]
                ann[self.annotation_name(idx, a)] = val[0] if val else None
            # GPU executions (--gpu) carry their own name, not an interned one
            name = self.names.get(name_iid) if name_iid is not None else \
                (one(e, 23) or b'').decode() or None
            self.events.append((uuid, kind, ts, name,
                                [self.cats.get(c) for c in cat_iids], ann, e.get(47, [])))

    def annotation_name(self, idx, a):
        """Annotation names are interned (DebugAnnotation.name_iid = 1)."""
        if 10 in a:
            self.err('packet %d: annotation name not interned' % idx)
            return one(a, 10).decode()
        iid = one(a, 1)
        if iid not in self.ann_names:
            self.err('packet %d: annotation name iid %s not interned' % (idx, iid))
        return self.ann_names.get(iid)

    def run(self, data):
        self.cleared = False
        n = 0
        for num, wt, pkt in fields(data):
            if num != 1 or wt != 2:
                raise ValueError('not a Trace: field %d' % num)
            self.packet(n, pkt)
            n += 1
        for uuid, st in self.stack.items():
            if st:
                self.err('track %d: %d slices never ended' % (uuid, len(st)))
        return n


SRVMETRIC = 68
DRAFTS, DRAFT_TOKENS, ACCEPTED, GENERATED, ACC_LEN = 1, 2, 3, 4, 5


def server_samples(path):
    """[(ts, {family: value})] of the recording's good scrapes, in order."""
    data = open(path, 'rb').read()
    scrapes = {}
    for off, kind, size in recfile.records(data):
        if kind != SRVMETRIC:
            continue
        _, _, _, ts, value, scrape, _, fam, _, status, _ = \
            struct.unpack_from('<HHIQdIiHBBI', data, off)
        if status == 0 and fam:
            scrapes.setdefault((scrape, ts), {})[fam] = value
    return sorted(((ts, f) for (_, ts), f in scrapes.items()), key=lambda x: x[0])


def server_want(good):
    """{track name: [(ts, value)]}: each span between two good scrapes, at its start."""
    want = {'server tokens/s': [], 'server accept length': []}

    def delta(a, b, fam):
        return b[fam] if b[fam] < a[fam] else b[fam] - a[fam]

    for (ta, a), (tb, b) in zip(good, good[1:]):
        if tb <= ta:
            continue
        both = [f for f in a if f in b]
        if GENERATED in both:
            want['server tokens/s'].append((ta, delta(a, b, GENERATED) / ((tb - ta) / 1e9)))
        length = 0
        if DRAFTS in both and ACCEPTED in both and delta(a, b, DRAFTS) > 0:
            length = 1 + delta(a, b, ACCEPTED) / delta(a, b, DRAFTS)
        elif ACC_LEN in b:
            length = b[ACC_LEN]
        if length > 0:
            want['server accept length'].append((ta, length))
    return want


def check_server(c, rec):
    good = server_samples(rec)
    want = server_want(good)
    got = {c.tracks[u]['name']: vals for u, vals in c.counters.items()
           if c.tracks.get(u, {}).get('name', '').startswith('server ')}
    for name, vals in want.items():
        if got.get(name) != vals:
            have = got.get(name, [])
            diff = next((i for i, (x, y) in enumerate(zip(have, vals)) if x != y),
                        min(len(have), len(vals)))
            c.err('%s: %d values, the samples give %d; first difference at %d: %s against %s' %
                  (name, len(have), len(vals), diff, have[diff:diff + 1], vals[diff:diff + 1]))
    for text in c.errors:
        print(text)
    if c.errors:
        return 1
    print('%d scrapes: %d tokens/s and %d accept-length values equal the samples' %
          (len(good), len(want['server tokens/s']), len(want['server accept length'])))
    return 0


SAMPLE, SAMPLE_OPEN = 72, 1


def sample_windows(path):
    """(on_ms, every_ms, [(open, close or None)]) of the recording's SP_REC_SAMPLE records."""
    data = open(path, 'rb').read()
    on = every = None
    wins = []
    for off, kind, size in recfile.records(data):
        if kind != SAMPLE or size < 40:
            continue
        flags, ts, _, on, every = struct.unpack_from('<IQQII', data, off + 4)
        if flags & SAMPLE_OPEN:
            if not wins or wins[-1][1] is not None:
                wins.append([ts, None])
        elif wins and wins[-1][1] is None:
            wins[-1][1] = ts
    return on, every, wins


def check_sample(c, rec):
    """--sample: one slice per window of REC on a track saying so; cycles/s over each."""
    on, every, wins = sample_windows(rec)
    if not wins:
        print('%s has no --sample windows' % rec)
        return 1
    tracks = [u for u, t in c.tracks.items() if t['name'].startswith('launch probes (sampled')]
    if len(tracks) != 1 or '--sample %dms/%dms' % (on, every) not in c.tracks[tracks[0]]['name']:
        c.err('no single launch-probes track naming --sample %dms/%dms' % (on, every))
        tracks = tracks[:1]
    spans = sorted(c.spans[tracks[0]]) if tracks else []
    last = max(ts for _, _, ts, *_ in c.events)
    if len(spans) != len(wins):
        c.err('%d window slices, the recording has %d windows' % (len(spans), len(wins)))
    for (b, e), (o, cl) in zip(spans, wins):
        if b != o or (cl is not None and e != cl) or (cl is None and e < b):
            c.err('window slice [%d, %d], the recording says [%d, %s]' % (b, e, o, cl))
    rate = [u for u, t in c.tracks.items() if t['counter'] and t['name'].startswith('cycles/s')]
    if len(rate) != 1 or 'sampled' not in c.tracks[rate[0]]['name']:
        c.err('the cycles/s track does not say it is sampled')
    starts = [ts for u, k, ts, name, *_ in c.events if name == 'cycle']
    got = dict(c.counters[rate[0]]) if rate else {}
    whole = 0
    for b, e in spans:
        n = sum(1 for ts in starts if b <= ts <= e)
        whole += n
        if e > b and abs(got.get(b, -1) * (e - b) / 1e9 - n) > 1e-6 * max(n, 1):
            c.err('cycles/s at %d is %s, %d cycles in %d ns' % (b, got.get(b), n, e - b))
    if len(got) != sum(1 for b, e in spans if e > b):
        c.err('%d cycles/s values, not one per window' % len(got))
    if whole != len(starts):
        c.err('%d cycles outside every window' % (len(starts) - whole))
    for text in c.errors:
        print(text)
    if c.errors:
        return 1
    print('%d windows of --sample %dms/%dms as the recording has them, %d cycles in them, '
          'cycles/s over each window' % (len(wins), on, every, whole))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('trace')
    ap.add_argument('--dump')
    ap.add_argument('--report')
    ap.add_argument('--counts', action='store_true')
    ap.add_argument('--call-sites', action='store_true')
    ap.add_argument('--server', metavar='REC')
    ap.add_argument('--sample', metavar='REC')
    args = ap.parse_args()
    if not args.counts and not args.call_sites and not args.server and not args.sample and \
            not (args.dump and args.report):
        ap.error('--dump and --report, --counts, --call-sites or --server')
    c = Checker()
    try:
        packets = c.run(open(args.trace, 'rb').read())
    except (ValueError, IndexError) as e:
        print('trace does not parse: %s' % e)
        return 1
    kind_of = lambda uuid: uuid & 7     # track uuids are id << 3 | kind
    if args.server:
        return check_server(c, args.server)
    if args.sample:
        return check_sample(c, args.sample)
    if args.call_sites:
        sites = Counter((e[3], e[5]['call_site'].decode()) for e in c.events
                        if isinstance(e[5].get('call_site'), bytes) and e[5].get('stack'))
        for (name, site), n in sorted(sites.items()):
            print('%s %s: %d' % (name, site, n))
        return 1 if c.errors else 0
    if args.counts:
        kinds = {1: 'slice', 3: 'instant'}
        counts = Counter((kind_of(e[0]), kinds[e[1]], e[3]) for e in c.events)
        for (track, kind, name), n in sorted(counts.items()):
            print('track kind %d %s %s: %d' % (track, kind, name, n))
        return 1 if c.errors else 0
    calls = Counter()
    for uuid, kind, ts, name, cats, ann, flows in c.events:
        if kind_of(uuid) == 2:
            t = c.tracks[uuid]
            calls[(t['pid'], t['tid'], ann.get('seq'))] += 1
    want = Counter()
    for line in open(args.dump):
        j = json.loads(line)
        want[(j['pid'], j['tid'], j['seq'])] += 1
    if calls != want:
        c.err('calls differ from the dump: %d missing, %d extra' %
              (sum((want - calls).values()), sum((calls - want).values())))
    rep = json.load(open(args.report))
    cycles = Counter(c.tracks[u]['name'].split()[3] for u, k, ts, name, *_ in c.events
                     if name == 'cycle')
    want_cycles = Counter({str(lp['tid']): lp['cycles'] for lp in rep['loops'] if lp['cycles']})
    if cycles != want_cycles or sum(cycles.values()) != len(rep['cycles']):
        c.err('cycles per loop %s, the report has %s' % (dict(cycles), dict(want_cycles)))
    flagged = [e for e in c.events if 'flagged-sync' in e[4]]
    if len(flagged) != rep['flagged_syncs']:
        c.err('%d flagged syncs, the report has %d' % (len(flagged), rep['flagged_syncs']))
    launch_flows = {f for e in c.events if kind_of(e[0]) == 2 for f in e[6]}
    linked = sum(1 for e in flagged if e[6] and e[6][0] in launch_flows)
    # --gpu: executions on GPU stream tracks (kind 0), matched ones flowing from their call
    gpu = [e for e in c.events if kind_of(e[0]) == 0 and 'gpu' in e[4]]
    # graph launches always start a flow; a copy made before the first execution came does not
    gpu_unlinked = sum(1 for e in gpu if e[6] and e[3].startswith('graph 0x') and
                       e[6][0] not in launch_flows)
    if gpu_unlinked:
        c.err('%d graph executions with a flow no launch starts' % gpu_unlinked)
    roles = Counter(e[3] for e in c.events if 'graph' in e[4])
    if rep['cycles'] and not roles.get('cuGraphLaunch verify'):
        c.err('no graph launch named as verify')
    for text in c.errors:
        print(text)
    if c.errors:
        return 1
    print('%d packets, %d calls once each, %d cycles, %d flagged syncs (%d with a flow to '
          'a launch), %d role-named launches' % (packets, sum(calls.values()),
                                                 sum(cycles.values()), len(flagged), linked,
                                                 sum(roles.values())))
    if gpu:
        print('%d GPU executions, %d with a flow from their call' %
              (len(gpu), sum(1 for e in gpu if e[6])))
    return 0


if __name__ == '__main__':
    sys.exit(main())
