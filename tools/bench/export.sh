#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Export throughput and memory: record CYCLES and 4 x CYCLES short decode cycles of the
# simulated server, time `export` on each (best of 3) and take its peak RSS: a writer that
# streams adds nothing to what `report` holds (the mapped recording and the model).
#   tools/bench/export.sh [CYCLES]      (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
CYCLES=${1:-20000}
TMP=$(mktemp -d /tmp/specprobe-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
for n in "$CYCLES" $((CYCLES * 4)); do
	"$TOP/specprobe" record -o "$TMP/rec$n.sprb" --ring-mb 256 -- \
		"$TOP/.output/specsim/specsim-server" -q --cycles "$n" --draft-us 20 --verify-us 50 \
		--extend-us 20 --accept-us 10 --host-us 5 2>"$TMP/rec.err"
	records=$(grep -o '^specprobe: [0-9]* records' "$TMP/rec.err" | grep -o '[0-9]*')
	best=
	for _ in 1 2 3; do
		start=$(date +%s%N)
		"$TOP/specprobe" export "$TMP/rec$n.sprb" -o "$TMP/t.pftrace" --force 2>/dev/null
		t=$(($(date +%s%N) - start))
		if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
	done
	rss=$(/usr/bin/time -f %M "$TOP/specprobe" export "$TMP/rec$n.sprb" -o "$TMP/t.pftrace" \
		--force 2>&1 >/dev/null | tail -1)
	base=$(/usr/bin/time -f %M "$TOP/specprobe" report "$TMP/rec$n.sprb" 2>&1 >/dev/null | tail -1)
	python3 -c 'import sys; r, ns, rss, b, t, base = map(int, sys.argv[1:7])
print(f"export {r} records ({b >> 20} MB) in {ns / 1e9:.3f} s (best of 3): "
      f"{r / ns * 1e3:.2f} M records/s, trace {t >> 20} MB, peak RSS {rss / 1024:.1f} MB "
      f"(report: {base / 1024:.1f} MB)")' \
		"$records" "$best" "$rss" "$(stat -c %s "$TMP/rec$n.sprb")" \
		"$(stat -c %s "$TMP/t.pftrace")" "$base"
done
