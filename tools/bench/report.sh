#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Report throughput: record CYCLES short decode cycles of the simulated server, then
# time `report` (text and JSON) on the recording, best of 3.
#   tools/bench/report.sh [CYCLES]      (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
CYCLES=${1:-20000}
TMP=$(mktemp -d /tmp/specprobe-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
"$TOP/specprobe" record -o "$TMP/rec.sprb" --ring-mb 256 -- "$TOP/.output/specsim/specsim-server" \
	-q --cycles "$CYCLES" --draft-us 20 --verify-us 50 --extend-us 20 --accept-us 10 \
	--host-us 5 2>"$TMP/rec.err"
records=$(grep -o '^specprobe: [0-9]* records' "$TMP/rec.err" | grep -o '[0-9]*')
for mode in text json; do
	flag=; [ $mode = json ] && flag=--json
	best=
	for _ in 1 2 3; do
		start=$(date +%s%N)
		"$TOP/specprobe" report $flag "$TMP/rec.sprb" >"$TMP/report.$mode"
		t=$(($(date +%s%N) - start))
		if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
	done
	python3 -c 'import sys; r, ns, m = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
print(f"report {m:4} {r} records in {ns / 1e9:.3f} s (best of 3): {r / ns * 1e3:.2f} M records/s")' \
		"$records" "$best" "$mode"
done
grep -m1 'Phase breakdown' "$TMP/report.text"
