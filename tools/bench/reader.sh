#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Reader throughput: record the look-alike caller, then time dump (text and JSON).
#   tools/bench/reader.sh [ITERATIONS] [THREADS]      (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
ITER=${1:-20000}
THREADS=${2:-3}
TMP=$(mktemp -d /tmp/specprobe-reader.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
"$TOP/.output/lookalike/caller" "$ITER" "$THREADS" "$TMP/go" "$TMP/truth.jsonl" >"$TMP/out" &
pid=$!
sleep 0.2
"$TOP/specprobe" record -o "$TMP/rec.sprb" -p "$pid" --ring-mb 256 2>"$TMP/rec.err" &
rec=$!
for _ in $(seq 300); do [ -e "$TMP/rec.sprb" ] && break; sleep 0.1; done
touch "$TMP/go"
wait "$pid"
wait "$rec"
records=$(grep -o '^specprobe: [0-9]* records' "$TMP/rec.err" | grep -o '[0-9]*')
bytes=$(stat -c %s "$TMP/rec.sprb")
for mode in counts text json; do
	flag=--$mode; [ $mode = text ] && flag=
	best=
	for _ in 1 2 3; do
		start=$(date +%s.%N)
		"$TOP/specprobe" dump $flag "$TMP/rec.sprb" >/dev/null 2>"$TMP/dump.err"
		t=$(echo "$(date +%s.%N) - $start" | bc)
		if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
	done
	printf 'dump %-4s %d records (%d bytes) in %.3f s (best of 3): %.2f M records/s\n' \
		$mode "$records" "$bytes" "$best" "$(echo "$records / $best / 1000000" | bc -l)"
done
grep calls "$TMP/dump.err"
