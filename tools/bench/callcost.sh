#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Added host time per probed call, measured side by side: each round runs the
# same program untraced, traced, and untraced while another process is traced
# (the probes are on the library's inode, so it still takes the trap).
#   tools/bench/callcost.sh [ROUNDS] [CALLS]      (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-5}
CALLS=${2:-200000}
BENCH=$TOP/.output/bench/callcost
SPECPROBE=$TOP/specprobe
TMP=$(mktemp -d /tmp/specprobe-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT

wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }

traced_run() {	# $1: round; the tracer follows this very process
	local out=$TMP/traced.$1 pid rec
	rm -f "$TMP/go"
	"$BENCH" "$CALLS" "$TMP/go" >"$out" &
	pid=$!
	wait_file "$out"
	"$SPECPROBE" record -o "$TMP/traced.$1.sprb" -p "$pid" 2>"$TMP/rec.err" &
	rec=$!
	wait_file "$TMP/traced.$1.sprb"
	touch "$TMP/go"
	wait "$pid"
	wait "$rec"
	"$SPECPROBE" dump "$TMP/traced.$1.sprb" 2>&1 >/dev/null | grep -o '[0-9]* dropped' >>"$TMP/drops"
	tail -1 "$out"
}

other_run() {	# $1: round; the tracer follows a decoy that maps the same library
	local decoy rec
	"$BENCH" 1 "$TMP/never" >"$TMP/decoy.out" &
	decoy=$!
	wait_file "$TMP/decoy.out"
	"$SPECPROBE" record -o "$TMP/other.$1.sprb" -p "$decoy" 2>/dev/null &
	rec=$!
	wait_file "$TMP/other.$1.sprb"
	"$BENCH" "$CALLS"
	kill -INT "$rec"
	wait "$rec" || true
	kill "$decoy"
	wait "$decoy" 2>/dev/null || true
}

for r in $(seq "$ROUNDS"); do
	"$BENCH" "$CALLS" >>"$TMP/untraced.jsonl"
	traced_run "$r" >>"$TMP/traced.jsonl"
	other_run "$r" >>"$TMP/other.jsonl"
done

python3 - "$TMP" "$ROUNDS" "$CALLS" <<'PY'
import json, statistics, sys
tmp, rounds, calls = sys.argv[1], sys.argv[2], sys.argv[3]
def med(name, key):
    rows = [json.loads(l) for l in open(f"{tmp}/{name}.jsonl")]
    return statistics.median(r[key] for r in rows)
print(f"{rounds} interleaved rounds of {calls} calls per kind; median ns per call")
print("| call | untraced | traced | added | other process traced | added |")
print("|---|---|---|---|---|---|")
for key, label in (("entry_only_ns", "cuLaunchKernel (entry only)"),
                   ("completion_ns", "cuEventQuery (entry + completion)"),
                   ("plain_ns", "cuCtxGetDevice (not probed)")):
    u, t, o = med("untraced", key), med("traced", key), med("other", key)
    print(f"| {label} | {u:.1f} | {t:.1f} | {t - u:+.1f} | {o:.1f} | {o - u:+.1f} |")
drops = [l.split()[0] for l in open(f"{tmp}/drops")]
print(f"drops in traced runs: {', '.join(drops)}")
PY
