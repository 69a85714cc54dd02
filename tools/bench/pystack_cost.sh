#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# What a Python stack adds to a sync: cuCtxSynchronize from DEPTH frames deep, untraced,
# under a uprobe writing a record without the stack, and with it (pystack_probe); then
# under specprobe record with --stacks none and with stacks (native and Python).
#   [PYSTACK_THREADS=N] tools/bench/pystack_cost.sh [PYTHON] [CALLS] [DEPTH] [ROUNDS]
# (root, after make); PYSTACK_THREADS: idle Python threads beside the calling one.
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
	none | syncs) specprobe_run "$1" "$out" ;;
	esac
	cat "$out"
}

specprobe_run() {	# specprobe_run STACKS OUT: the program traced by specprobe record -p
	local dir=$TMP/sp pid rec
	rm -rf "$dir"
	mkdir -p "$dir"
	"$PY" "$TOP/tools/bench/pystack_calls.py" "$LIB" "$CALLS" "$DEPTH" "$2" "$dir/go" \
		>"$dir/out" &
	pid=$!
	until [ -s "$dir/out" ]; do sleep 0.05; done
	"$TOP/specprobe" record -o "$dir/rec.sprb" -p $pid --stacks "$1" 2>"$dir/rec.err" &
	rec=$!
	until [ -e "$dir/rec.sprb" ]; do
		if ! kill -0 $rec 2>/dev/null; then
			echo "pystack_cost: specprobe record failed: $(head -1 "$dir/rec.err")" >&2
			kill $pid
			exit 1
		fi
		sleep 0.05
	done
	touch "$dir/go"
	wait $pid
	wait $rec
}

for r in $(seq "$ROUNDS"); do
	for mode in untraced record stack none syncs; do
		echo "$mode $(run $mode)" >>"$TMP/rows"
	done
done
python3 - "$TMP/rows" "$TMP/stack.json" "$PY" "$DEPTH" <<'PY'
import json, os, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {m: statistics.median(float(v) for k, v in rows if k == m)
       for m in ("untraced", "record", "stack", "none", "syncs")}
last = json.load(open(sys.argv[2]))
print(f"{sys.argv[3]}, {sys.argv[4]} Python frames deep, {os.environ.get('PYSTACK_THREADS', '0')}"
      " idle Python threads (median of rounds, ns per call):")
print(f"  untraced                     {med['untraced']:8.0f}")
print(f"  uprobe + record, no stack    {med['record']:8.0f}")
print(f"  uprobe + record + Py stack   {med['stack']:8.0f}")
print(f"  the Python stack adds        {med['stack'] - med['record']:8.0f}"
      f"   (in BPF, last run: {last['mean_read_ns']} ns per read)")
print(f"  specprobe record --stacks none {med['none']:8.0f}")
print(f"  specprobe record (stacks)    {med['syncs']:8.0f}")
print(f"  native + Python stacks add   {med['syncs'] - med['none']:8.0f}")
PY
