#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# What a Python stack adds to a sync: cuCtxSynchronize from DEPTH frames deep, untraced,
# under a uprobe writing a record without the stack, and with it (pystack_probe).
#   tools/bench/pystack_cost.sh [PYTHON] [CALLS] [DEPTH] [ROUNDS]     (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
PY=${1:-/root/.pyenv/versions/3.12.1/bin/python3.12}
CALLS=${2:-20000}
DEPTH=${3:-20}
ROUNDS=${4:-3}
LIB=$TOP/.output/specsim/libcuda.so.1
PROBE=$TOP/.output/pystacks/pystack_probe
TMP=$(mktemp -d /tmp/specprobe-pystack-cost.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

run() {	# run MODE: ns per call
	local out=$TMP/ns
	case $1 in
	untraced) { echo go; sleep 0.2; } | "$PY" "$TOP/tools/bench/pystack_calls.py" "$LIB" \
		"$CALLS" "$DEPTH" "$out" >/dev/null ;;
	record) PYSTACK_PROBE_QUIET=1 PYSTACK_PROBE_NO_PY=1 "$PROBE" "$LIB" "$PY" \
		"$TOP/tools/bench/pystack_calls.py" "$LIB" "$CALLS" "$DEPTH" "$out" >/dev/null \
		2>&1 ;;
	stack) PYSTACK_PROBE_QUIET=1 "$PROBE" "$LIB" "$PY" "$TOP/tools/bench/pystack_calls.py" \
		"$LIB" "$CALLS" "$DEPTH" "$out" >"$TMP/stack.json" 2>/dev/null ;;
	esac
	cat "$out"
}

for r in $(seq "$ROUNDS"); do
	for mode in untraced record stack; do
		echo "$mode $(run $mode)" >>"$TMP/rows"
	done
done
python3 - "$TMP/rows" "$TMP/stack.json" "$PY" "$DEPTH" <<'PY'
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {m: statistics.median(float(v) for k, v in rows if k == m)
       for m in ("untraced", "record", "stack")}
last = json.load(open(sys.argv[2]))
print(f"{sys.argv[3]}, {sys.argv[4]} Python frames deep (median of rounds, ns per call):")
print(f"  untraced                     {med['untraced']:8.0f}")
print(f"  uprobe + record, no stack    {med['record']:8.0f}")
print(f"  uprobe + record + Py stack   {med['stack']:8.0f}")
print(f"  the Python stack adds        {med['stack'] - med['record']:8.0f}"
      f"   (in BPF, last run: {last['mean_read_ns']} ns per read)")
PY
