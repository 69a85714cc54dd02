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
"""
import collections
import json
import re
import socket
import sys
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
    for path in paths:
        for line in open(path):
            d = json.loads(line)
            if "before" in d:
                name = d["name"][1:] if d["name"].startswith("pnccl") else d["name"]
                if name in symbols and d["before"] >= attach_done:
                    calls[(d["pid"], d["base"])] += 1
                ranks[d["pid"]] = d["rank"]
            elif "cycle" in d and "phase" in d and "start" in d:
                cycles[d["pid"]].add(d["cycle"])
    return calls, {pid: len(c) for pid, c in cycles.items()}, ranks


def check_truth(prom, job, planted, header, paths):
    calls, cycles, ranks = load_truth(header, paths)
    sel = f'{{job="{job}"}}'
    bad = []
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
    print("70 idle connections (64 served at once, each for 5 s at most), then 431 oversized, "
          "405 POST, 404 other path, 400 garbage, and a whole scrape")
    return 0


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
    if cmd == "abuse":
        return abuse(argv[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
