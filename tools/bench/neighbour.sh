#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# What a process that is NOT traced pays while specprobe traces another one:
# its calls per second alone, while the traced process maps the same library
# file, and while the traced process maps a different copy of the library.
# Rounds interleave the three ways, so noise hits them alike.
#   tools/bench/neighbour.sh [ROUNDS] [CALLS]      (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-5}
CALLS=${2:-200000}
BENCH=$TOP/.output/bench/callcost
SPECPROBE=$TOP/specprobe
TMP=$(mktemp -d /tmp/specprobe-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
mkdir -p "$TMP/copy"
cp "$TOP/.output/lookalike/libcuda.so.1" "$TMP/copy/"

wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }

# neighbour_run ROUND NAME [LIBDIR]: trace a decoy (LIBDIR's copy if given), time the neighbour
neighbour_run() {
	local decoy rec out=$TMP/decoy.$1.$2
	if [ -n "${3:-}" ]; then
		LD_LIBRARY_PATH=$3 "$BENCH" 1 "$TMP/never" >"$out" &
	else
		"$BENCH" 1 "$TMP/never" >"$out" &
	fi
	decoy=$!
	wait_file "$out"
	"$SPECPROBE" record -o "$TMP/$2.$1.sprb" -p "$decoy" 2>/dev/null &
	rec=$!
	wait_file "$TMP/$2.$1.sprb"
	sleep 0.2
	"$BENCH" "$CALLS" >>"$TMP/$2.jsonl"
	kill -INT "$rec"
	wait "$rec" || true
	kill "$decoy"
	wait "$decoy" 2>/dev/null || true
}

for r in $(seq "$ROUNDS"); do
	"$BENCH" "$CALLS" >>"$TMP/alone.jsonl"
	neighbour_run "$r" same
	neighbour_run "$r" copy "$TMP/copy"
done

python3 - "$TMP" "$ROUNDS" "$CALLS" <<'PY'
import json, statistics, sys
tmp, rounds, calls = sys.argv[1], sys.argv[2], sys.argv[3]
def rate(name, key):
    rows = [json.loads(l) for l in open(f"{tmp}/{name}.jsonl")]
    return 1e9 / statistics.median(r[key] for r in rows)
print(f"{rounds} interleaved rounds of {calls} calls per kind by an untraced process;"
      " median calls/s")
print("| call | alone | another process traced, same library file | added per call |"
      " another process traced, other copy of the library | added per call |")
print("|---|---|---|---|---|---|")
for key, label in (("entry_only_ns", "cuLaunchKernel (entry-only probe)"),
                   ("completion_ns", "cuEventQuery (entry + completion probe)"),
                   ("plain_ns", "cuCtxGetDevice (not probed)")):
    a, s, c = rate("alone", key), rate("same", key), rate("copy", key)
    print(f"| {label} | {a / 1e6:.2f} M | {s / 1e6:.2f} M | {1e9 / s - 1e9 / a:+.1f} ns |"
          f" {c / 1e6:.2f} M | {1e9 / c - 1e9 / a:+.1f} ns |")
PY
