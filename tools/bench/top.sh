#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# What top costs beyond record, side by side in one run: ROUNDS alternating rounds of the
# simulated server's decode loop made fast (short GPU times, many eager launches: a high call
# rate with cycles), traced from the gate by `record -o` or by `top --batch -o`. The tracer's
# CPU time (user + system, from wait4) per call made, and its peak memory; then top's CPU
# beyond record as a share of one core at 100 k calls/s. Memory flat: top --replay of a short
# and of a 10x longer recording, peak memory of each, beside report's.
#   tools/bench/top.sh [ROUNDS] [CYCLES]      (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-6}
CYCLES=${2:-4000}
TMP=$(mktemp -d /tmp/specprobe-topbench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export SPECPROBE=$TOP/specprobe SERVER=$TOP/.output/specsim/specsim-server
FAST="--draft-us 5 --verify-us 20 --accept-us 5 --extend-us 5 --eager 40 --layers 1"
python3 - "$TMP" "$ROUNDS" "$CYCLES" "$FAST" <<'PY'
import json, os, subprocess, sys, time
tmp, rounds, cycles, fast = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
sp, server = os.environ["SPECPROBE"], os.environ["SERVER"]

def wait_file(path, tenths=300):
    for _ in range(tenths):
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return True
        time.sleep(0.1)
    return False

def run(arm, i, n):
    d = f"{tmp}/{arm}{i}"
    os.makedirs(d)
    srv = subprocess.Popen([server, "-q", "-n", str(n), *fast, "--ground-truth", f"{d}/gt",
                            "--ready-file", f"{d}/ready", "--go-file", f"{d}/go"])
    wait_file(f"{d}/ready")
    pid = open(f"{d}/ready").readline().strip()
    rec = f"{d}/rec.sprb"
    cmd = [sp, "record", "-o", rec, "-p", pid] if arm == "record" else \
          [sp, "top", "--batch", "-o", rec, "-p", pid]
    out = open(f"{d}/out", "w")
    tr = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    wait_file(rec)
    time.sleep(0.3)
    open(f"{d}/go", "w").close()
    srv.wait()
    _, status, ru = os.wait4(tr.pid, 0)
    calls = sum(1 for line in open(f"{d}/gt.rank0") if line.startswith('{"name"'))
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss, calls, rec

rows = {"record": [], "top": []}
for i in range(rounds):
    for arm in (("record", "top") if i % 2 == 0 else ("top", "record")):
        cpu, rss, calls, rec = run(arm, i, cycles)
        rows[arm].append((cpu, rss, calls))
        last = rec
per_call = {a: [cpu / calls for cpu, _, calls in r] for a, r in rows.items()}
calls = rows["record"][0][2]
span = [json.loads(l) for l in open(f"{tmp}/record0/gt.rank0") if l.startswith('{"name"')]
rate = len(span) / ((span[-1]["after"] - span[0]["before"]) / 1e9)
print(f"{rounds} rounds of each, alternating; {calls} calls a round, {rate:,.0f} calls/s made")
for a in ("record", "top"):
    v = sorted(per_call[a])
    print(f"  {a:6}: CPU {1e6 * v[len(v) // 2]:.2f} us per call (median; "
          f"{1e6 * v[0]:.2f}-{1e6 * v[-1]:.2f}), peak memory "
          f"{max(r[1] for r in rows[a]) / 1024:.1f} MiB")
pairs = sorted(t - r for t, r in zip(per_call["top"], per_call["record"]))
extra = pairs[len(pairs) // 2]
print(f"top beyond record: {1e6 * extra:.2f} us per call (median of paired rounds) = "
      f"{100 * extra * 1e5:.1f} % of one core at 100 k calls/s")

def peak(cmd):
    """Peak memory in MiB, from time(1): a child of this big process would count its pages."""
    r = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    return int(r.stderr.split()[-1]) / 1024

short = run("short", 0, cycles // 10)[3]
print("memory over the recording's length (peak MiB):")
for name, path in (("short", short), ("10x", last)):
    size = os.path.getsize(path) / 2**20
    t = peak([sp, "top", "--batch", "--replay", path, "--speed", "0"])
    r = peak([sp, "report", path])
    print(f"  {name:5} recording {size:6.1f} MiB: top --replay {t:6.1f}, report {r:6.1f}")
PY
