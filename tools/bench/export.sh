#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Export throughput and memory: record CYCLES and 4 x CYCLES short decode cycles of the
# simulated server, time `export` (to a new file) and `report` on each, best of 5 rounds
# run one after the other, and take their peak RSS: a writer that streams adds nothing to
# what `report` holds (the mapped recording and the model). With BASELINE set to another
# specprobe binary, its export and report run in the same rounds, interleaved, so the
# ratios hold on a noisy machine.
#   tools/bench/export.sh [CYCLES]                       (root, after make)
#   BASELINE=/tmp/specprobe.old tools/bench/export.sh [CYCLES]
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
CYCLES=${1:-20000}
BINS=("$TOP/specprobe")
[ -n "${BASELINE:-}" ] && BINS+=("$BASELINE")
TMP=$(mktemp -d /tmp/specprobe-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

now() { date +%s%N; }

# time_one BIN MODE REC: nanoseconds of one run
time_one() {
	local start
	rm -f "$TMP/t.pftrace"
	start=$(now)
	if [ "$2" = export ]; then
		"$1" export "$3" -o "$TMP/t.pftrace" 2>/dev/null
	else
		"$1" report "$3" >/dev/null 2>&1
	fi
	echo $(($(now) - start))
}

peak_rss() {
	if [ "$2" = export ]; then
		/usr/bin/time -f %M "$1" export "$3" -o "$TMP/t.pftrace" --force 2>&1 >/dev/null |
			tail -1
	else
		/usr/bin/time -f %M "$1" report "$3" 2>&1 >/dev/null | tail -1
	fi
}

for n in "$CYCLES" $((CYCLES * 4)); do
	rec=$TMP/rec$n.sprb
	"$TOP/specprobe" record -o "$rec" --ring-mb 256 -- \
		"$TOP/.output/specsim/specsim-server" -q --cycles "$n" --draft-us 20 --verify-us 50 \
		--extend-us 20 --accept-us 10 --host-us 5 2>"$TMP/rec.err"
	records=$(grep -o '^specprobe: [0-9]* records' "$TMP/rec.err" | grep -o '[0-9]*')
	declare -A best=()
	for _ in 1 2 3 4 5; do
		for b in "${!BINS[@]}"; do
			for mode in export report; do
				t=$(time_one "${BINS[$b]}" $mode "$rec")
				k=$b.$mode
				if [ -z "${best[$k]:-}" ] || [ "$t" -lt "${best[$k]}" ]; then
					best[$k]=$t
				fi
			done
		done
	done
	for b in "${!BINS[@]}"; do
		"${BINS[$b]}" export "$rec" -o "$TMP/t.pftrace" --force 2>/dev/null
		python3 -c 'import sys
name, r, b, t, e, rep, erss, rrss = sys.argv[1:2] + list(map(int, sys.argv[2:9]))
print(f"{name}: {r} records ({b / 1e6:.1f} MB): export {e / 1e9:.3f} s, "
      f"{r / e * 1e3:.2f} M records/s; report {rep / 1e9:.3f} s, "
      f"{r / rep * 1e3:.2f} M records/s; trace {t / 1e6:.1f} MB; "
      f"peak RSS export {erss / 1024:.1f} MB, report {rrss / 1024:.1f} MB")' \
			"${BINS[$b]}" "$records" "$(stat -c %s "$rec")" \
			"$(stat -c %s "$TMP/t.pftrace")" "${best[$b.export]}" "${best[$b.report]}" \
			"$(peak_rss "${BINS[$b]}" export "$rec")" \
			"$(peak_rss "${BINS[$b]}" report "$rec")"
	done
	unset best
done
