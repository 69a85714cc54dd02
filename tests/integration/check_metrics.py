#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Checks specprobe's /metrics through a real Prometheus and by scraping it directly.

  check_metrics.py ports N                     N free TCP ports on 127.0.0.1
  check_metrics.py listening PORT              the local addresses listening on PORT
  check_metrics.py ready PROM PID              until Prometheus answers /-/ready (or PID ends)
  check_metrics.py wait-up PROM JOB            until Prometheus scraped JOB (up == 1)
  check_metrics.py wait-final PROM JOB         until a scrape of JOB shows the trace ended
  check_metrics.py truth PROM JOB PLANTED HEADER GT...  Prometheus's values against the truth
                     (HEADER: dump -H of the recording: the probed symbols, the attach mark)
  check_metrics.py exit-scrapes URL PID OUT    scrape until PID is gone; every answer whole
  check_metrics.py abuse URL                   idle, oversized and wrong requests
  check_metrics.py final URL OUT               scrape until the trace ended; that scrape to OUT
  check_metrics.py sampled SCRAPE REC REPORT   --sample: the sampling series against REC's
                     windows and its report, the HELP of the families read from windows
  check_metrics.py slow-clients URL PID N SCRAPES CAP  SCRAPES whole scrapes while N slow
                     connections are held open; PID's fd limit has room for CAP clients
"""
import collections
import json
import os
import re
import select
import socket
import sys
import threading
import time
import urllib.parse
import urllib.request

from check_truth import probed_symbols

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def listening(port):
    """Addresses in LISTEN state on port, from /proc/net/tcp and tcp6, as ss prints them."""
    found = []
    for path, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        try:
            lines = open(path).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, p = local.split(":")
            if state != "0A" or int(p, 16) != port:
                continue
            raw = bytes.fromhex(addr)
            if v6:
                words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                found.append(f"[{socket.inet_ntop(socket.AF_INET6, words)}]:{port}")
            else:
                found.append(f"{socket.inet_ntop(socket.AF_INET, raw[::-1])}:{port}")
    return found


def ready(prom, pid):
    for _ in range(300):
        if not alive(pid):
            return 1
        try:
            with urllib.request.urlopen(f"{prom}/-/ready", timeout=2) as r:
                if r.status == 200:
                    return 0
        except OSError:
            pass
        time.sleep(0.1)
    return 1


def query(prom, expr):
    url = f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{expr}: {body}")
    return [(s["metric"], float(s["value"][1])) for s in body["data"]["result"]]


def wait_for(prom, expr, want, seconds=60):
    for _ in range(seconds * 4):
        try:
            if any(v == want for _, v in query(prom, expr)):
                return True
        except OSError:
            pass
        time.sleep(0.25)
    return False


def load_truth(header, paths):
    """Calls per (pid, entry) of the probed symbols, cycles per pid, and each pid's rank."""
    attach_done, symbols = probed_symbols(header)
    calls, cycles, ranks = collections.Counter(), collections.defaultdict(set), {}
    early = 0
    for path in paths:
        for line in open(path):
            d = json.loads(line)
            if "before" in d:
                name = d["name"][1:] if d["name"].startswith("pnccl") else d["name"]
                if name in symbols and d["before"] >= attach_done:
                    calls[(d["pid"], d["base"])] += 1
                early += name in symbols and d["before"] < attach_done
                ranks[d["pid"]] = d["rank"]
            elif "cycle" in d and "phase" in d and "start" in d:
                cycles[d["pid"]].add(d["cycle"])
    return calls, {pid: len(c) for pid, c in cycles.items()}, ranks, early


def check_truth(prom, job, planted, header, paths):
    calls, cycles, ranks, early = load_truth(header, paths)
    sel = f'{{job="{job}"}}'
    bad = []
    if early:
        # a loop started before the attach mark was not traced whole: the test's gate is wrong
        bad.append(f"{early} calls before the attach mark (the server started before the "
                   f"probes were in place)")
    got = collections.Counter()
    for m, v in query(prom, "specprobe_calls_total" + sel):
        got[(int(m["pid"]), m["entry"])] += int(v)
        want_rank = str(ranks.get(int(m["pid"]), ""))
        if len(paths) > 1 and m.get("rank", "") != want_rank:
            bad.append(f"pid {m['pid']} has rank '{m.get('rank', '')}', truth {want_rank}")
    if got != calls:
        bad.append(f"calls differ: missing {dict(calls - got)}, extra {dict(got - calls)}")
    flagged = sum(v for m, v in query(prom, "specprobe_flagged_syncs_total" + sel)
                  if m["entry"] == "cuStreamSynchronize" and m["position"] == "draft-verify")
    if flagged != planted:
        bad.append(f"{flagged:.0f} flagged draft-verify cuStreamSynchronize, {planted} planted")
    drops = sum(v for _, v in query(prom, "specprobe_dropped_records_total" + sel))
    if drops:
        bad.append(f"{drops:.0f} dropped records")
    up = [v for _, v in query(prom, "up" + sel)]
    if up != [1.0]:
        bad.append(f"up is {up}")
    cycle_bad, got_cycles = check_cycles(prom, sel, cycles)
    bad += cycle_bad
    if bad:
        print("; ".join(bad))
        return 1
    print(f"{sum(calls.values())} calls of {len(set(e for _, e in calls))} entry points in "
          f"{len(cycles)} processes exact, {planted} flagged syncs, {got_cycles} cycles of the "
          f"truth's {sum(cycles.values())}, cumulative histograms, no drops, up 1")
    return 0


def check_cycles(prom, sel, cycles):
    """Cycles per process as the truth has them (a window may miss one at a loop's edge)."""
    bad = []
    got = collections.Counter()
    for m, v in query(prom, "specprobe_cycles_total" + sel):
        got[int(m["pid"])] += int(v)
    for pid, n in cycles.items():
        if not n - 1 <= got[pid] <= n:
            bad.append(f"pid {pid}: {got[pid]} cycles, truth {n}")
    counts = {m["pid"]: v for m, v in query(prom, "specprobe_cycle_seconds_count" + sel)}
    buckets = collections.defaultdict(list)
    for m, v in query(prom, "specprobe_cycle_seconds_bucket" + sel):
        le = float("inf") if m["le"] == "+Inf" else float(m["le"])
        buckets[m["pid"]].append((le, v))
    for pid, bs in buckets.items():
        values = [v for _, v in sorted(bs)]
        if values != sorted(values) or values[-1] != counts.get(pid):
            bad.append(f"pid {pid}: buckets {values} not cumulative up to count {counts.get(pid)}")
    for pid in cycles:
        if str(pid) not in buckets:
            bad.append(f"pid {pid}: no cycle-time histogram")
    return bad, sum(got.values())


def parse_exposition(text):
    """Problems of a text exposition: every sample parses, has a TYPE, ends the document."""
    problems, typed = [], set()
    if not text.endswith("\n"):
        problems.append("does not end with a newline")
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        if not m:
            problems.append(f"bad line {line!r}")
            continue
        name, labels, value = m.group(1), m.group(3) or "", m.group(4)
        base = re.sub(r'_(bucket|sum|count)$', '', name)
        if name not in typed and base not in typed:
            problems.append(f"{name} has no TYPE line")
        if labels and "".join(x.group(0) for x in LABEL.finditer(labels)) != labels:
            problems.append(f"bad labels {labels!r}")
        try:
            float(value)
        except ValueError:
            problems.append(f"bad value {value!r}")
    return problems


def scrape(host, port, timeout=10):
    """One raw GET: (status, content type, body) or None when refused."""
    try:
        s = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        return None
    with s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    fields = dict(l.split(": ", 1) for l in lines[1:] if ": " in l)
    if int(fields.get("Content-Length", -1)) != len(body):
        raise ValueError(f"{len(body)} bytes of a body of {fields.get('Content-Length')}")
    return int(lines[0].split()[1]), fields.get("Content-Type", ""), body.decode()


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def exit_scrapes(url, pid, out):
    u = urllib.parse.urlparse(url)
    whole, refused, ended, last = 0, 0, 0, ""
    while alive(pid) or refused < 3:
        try:
            got = scrape(u.hostname, u.port)
        except (OSError, ValueError) as e:
            print(f"a scrape came back broken: {e}")
            return 1
        if got is None:
            refused += 1
            time.sleep(0.05)
            continue
        status, ctype, body = got
        problems = parse_exposition(body)
        if status != 200 or not ctype.startswith("text/plain; version=0.0.4") or problems:
            print(f"status {status}, type {ctype!r}: {problems[:3]}")
            return 1
        whole += 1
        ended += "\nspecprobe_tracing 0\n" in body
        last = body
    with open(out, "w") as f:
        f.write(last)
    if whole < 5:
        print(f"only {whole} scrapes answered")
        return 1
    print(f"{whole} scrapes while the target ran and exited all whole and valid "
          f"({ended} after the trace ended), then refused")
    return 0


def raw(host, port, data, timeout=10):
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(data)
        got = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return got.decode(errors="replace").split("\r\n")[0]
            got += chunk


def abuse(url):
    u = urllib.parse.urlparse(url)
    # more idle connections than are served at once: they time out, and the rest get through
    idle = [socket.create_connection((u.hostname, u.port)) for _ in range(70)]
    want = {
        "oversized request": (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n",
                              "431"),
        "POST": (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "405"),
        "other path": (b"GET /nothing HTTP/1.1\r\n\r\n", "404"),
        "garbage": (b"\x00\x01\x02\r\n\r\n", "400"),
    }
    bad = []
    for name, (data, code) in want.items():
        try:
            line = raw(u.hostname, u.port, data)
        except OSError as e:
            line = str(e)
        if code not in line:
            bad.append(f"{name}: {line!r}")
    got = scrape(u.hostname, u.port, timeout=30)
    if not got or got[0] != 200 or parse_exposition(got[2]):
        bad.append("no whole scrape with 70 idle connections open")
    for s in idle:
        s.close()
    if bad:
        print("; ".join(bad))
        return 1
    print("70 idle connections (each closed 2 s after it came unless its request did), then "
          "431 oversized, 405 POST, 404 other path, 400 garbage, and a whole scrape")
    return 0


class SlowClients:
    """n connections held open from a thread: half idle, half sending a request head a byte a
    second; one the server closes (its deadline, or the cap) is made again, for at most
    `seconds` in all."""

    HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 60 + b"\r\n\r\n"

    def __init__(self, host, port, n, seconds=180):
        self.addr, self.n, self.until = (host, port), n, time.monotonic() + seconds
        self.socks = {}  # socket -> bytes of HEAD sent, or None for an idle one
        self.made, self.closed, self.answered = 0, 0, 0
        self.stop = threading.Event()
        for i in range(n):
            self.open(i % 2 == 0)
        self.first = set(self.socks)  # closed by the server once each, before the end
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def open(self, idle):
        try:
            s = socket.create_connection(self.addr, timeout=30)
        except OSError:
            return
        s.setblocking(False)
        self.socks[s] = None if idle else 0
        self.made += 1

    def reap(self):
        poller = select.poll()
        by_fd = {s.fileno(): s for s in self.socks}
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        for fd, _ in poller.poll(0):
            s = by_fd[fd]
            try:
                got = s.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                got = b""
            if got:
                # a dripped head that got whole before its deadline was answered
                self.answered += 1
            idle = self.socks.pop(s) is None
            self.first.discard(s)
            s.close()
            self.closed += 1
            self.open(idle)

    def drip(self):
        for s, sent in list(self.socks.items()):
            if sent is None or sent >= len(self.HEAD) - 1:
                continue  # never the last byte: the head stays partial
            try:
                s.send(self.HEAD[sent:sent + 1])
                self.socks[s] = sent + 1
            except OSError:
                pass

    def run(self):
        next_drip = 0
        while not self.stop.is_set() and time.monotonic() < self.until:
            self.reap()
            if time.monotonic() >= next_drip:
                self.drip()
                next_drip = time.monotonic() + 1
            self.stop.wait(0.05)

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def fd_room(pid):
    """The soft RLIMIT_NOFILE of pid and the descriptors it has open."""
    with open(f"/proc/{pid}/limits") as f:
        soft = next(int(l.split()[3]) for l in f if l.startswith("Max open files"))
    return soft, len(os.listdir(f"/proc/{pid}/fd"))


def slow_clients(url, pid, n, scrapes, cap):
    """n slow connections held open while `scrapes` scrapes each get a whole document, half a
    second apart; then every first slow connection is closed by the server's deadline."""
    u = urllib.parse.urlparse(url)
    slow = SlowClients(u.hostname, u.port, n)
    good, bad = 0, []
    try:
        soft, in_use = fd_room(pid)
        for _ in range(scrapes):
            try:
                got = scrape(u.hostname, u.port, timeout=30)
            except (OSError, ValueError) as e:
                got = None
                bad.append(str(e))
            if got and got[0] == 200 and not parse_exposition(got[2]):
                good += 1
            elif got:
                bad.append(f"status {got[0]}: {parse_exposition(got[2])[:2]}")
            elif not bad or bad[-1] != "refused":
                bad.append("refused")
            time.sleep(0.5)
        # the deadline is 2 s; a minute is a bound waited out generously
        for _ in range(600):
            if not slow.first:
                break
            time.sleep(0.1)
    finally:
        slow.close()
    # the tracer's descriptors, less the slow ones it held, plus a full cap of clients
    if soft < in_use - n + cap:
        bad.append(f"RLIMIT_NOFILE {soft} leaves no room for {cap} clients beside {in_use} fds")
    if slow.first:
        bad.append(f"{len(slow.first)} of the first {n} slow connections still open after 60 s")
    if slow.answered:
        bad.append(f"{slow.answered} partial requests answered")
    if good != scrapes or slow.made < n or bad:
        print(f"{good} of {scrapes} scrapes whole with {slow.made} slow connections made: "
              f"{'; '.join(bad[:3])}")
        return 1
    print(f"{good} of {scrapes} scrapes whole and valid while {n} slow connections were held "
          f"({slow.made} made; each closed unanswered by the server's deadline and made "
          f"again; fd limit {soft})")
    return 0


def final(url, out, seconds=120):
    u = urllib.parse.urlparse(url)
    end = time.time() + seconds
    while time.time() < end:
        got = scrape(u.hostname, u.port)
        if got and got[0] == 200 and re.search(r'^specprobe_tracing 0$', got[2], re.M):
            open(out, 'w').write(got[2])
            return 0
        time.sleep(0.2)
    print(f'no scrape of {url} after the trace ended')
    return 1


# families whose values come from --sample's windows only, and some that do not
WINDOWED = ('specprobe_cycles_total', 'specprobe_cycles_per_second',
            'specprobe_phase_seconds_total', 'specprobe_blocked_seconds_total',
            'specprobe_cycle_seconds', 'specprobe_calls_total')
WHOLE = ('specprobe_flagged_syncs_total', 'specprobe_records_total')


def check_sampled(path, rec, report_path):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import recfile
    text = open(path).read()
    bad = parse_exposition(text)
    values, helps = collections.defaultdict(float), {}
    for line in text.splitlines():
        if line.startswith('# HELP '):
            name, _, help_text = line[7:].partition(' ')
            helps[name] = help_text
        elif line and not line.startswith('#'):
            m = SAMPLE.match(line)
            if m:
                values[m.group(1)] += float(m.group(4))
    on, every, opens = recfile.sample_duty(rec)
    sampling = json.load(open(report_path))['sampling']
    want = {'specprobe_sample_on_seconds': on / 1e3,
            'specprobe_sample_every_seconds': every / 1e3,
            'specprobe_sample_windows_total': opens,
            'specprobe_sample_whole_cycles_total': sampling['cycles_whole'],
            'specprobe_cycles_total': sampling['cycles_whole']}
    for name, v in want.items():
        if name not in values or abs(values[name] - v) > 1e-9:
            bad.append(f'{name} {values.get(name)}, the recording and its report {v}')
    ratio = values.get('specprobe_sample_seen_ratio', -1)
    if abs(ratio - sampling['seen_share']) > 0.005:
        bad.append(f'seen ratio {ratio}, the report {sampling["seen_share"]}')
    for name in WINDOWED:
        if 'Sampled (--sample)' not in helps.get(name, ''):
            bad.append(f'{name}: its HELP does not say it is sampled')
    for name in WHOLE:
        if 'Sampled' in helps.get(name, 'Sampled'):
            bad.append(f'{name}: its HELP says sampled, or it is missing')
    for b in bad[:6]:
        print(b)
    if not bad:
        print(f'--sample {on}ms/{every}ms, {opens} windows, {sampling["cycles_whole"]} whole '
              f'cycles, seen ratio {ratio:.3f} as the recording and its report have them; '
              f'{len(WINDOWED)} families say they are sampled')
    return 1 if bad else 0


def main(argv):
    cmd = argv[1]
    if cmd == "ports":
        print(" ".join(str(p) for p in free_ports(int(argv[2]))))
        return 0
    if cmd == "listening":
        print(" ".join(listening(int(argv[2]))))
        return 0
    if cmd == "ready":
        return ready(argv[2], int(argv[3]))
    if cmd == "wait-up":
        return 0 if wait_for(argv[2], f'up{{job="{argv[3]}"}}', 1.0) else 1
    if cmd == "wait-final":
        return 0 if wait_for(argv[2], f'specprobe_tracing{{job="{argv[3]}"}}', 0.0) else 1
    if cmd == "truth":
        return check_truth(argv[2], argv[3], int(argv[4]), argv[5], argv[6:])
    if cmd == "exit-scrapes":
        return exit_scrapes(argv[2], int(argv[3]), argv[4])
    if cmd == "final":
        return final(argv[2], argv[3])
    if cmd == "sampled":
        return check_sampled(argv[2], argv[3], argv[4])
    if cmd == "abuse":
        return abuse(argv[2])
    if cmd == "slow-clients":
        return slow_clients(argv[2], int(argv[3]), int(argv[4]), int(argv[5]), int(argv[6]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
