#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Peak memory against recording length: record CYCLES, 2x and 4x CYCLES short decode cycles
# of the simulated server, then the peak RSS of report, report --json, export and dump on
# each (GNU time's maximum resident set size).
#   tools/bench/report_rss.sh [CYCLES] [SPECPROBE]      (root, after make; ~120 bytes a record)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
CYCLES=${1:-25000}
SPECPROBE=${2:-$TOP/specprobe}
TMP=$(mktemp -d /tmp/specprobe-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# peak_kb ARGS...: the command's peak RSS in KiB, its output thrown away
peak_kb() {
	/usr/bin/time -f '%M' -o "$TMP/time" "$SPECPROBE" "$@" >/dev/null 2>"$TMP/err" ||
		{ echo "failed: $SPECPROBE $* ($(tail -1 "$TMP/err"))" >&2; exit 1; }
	cat "$TMP/time"
}

printf '%-9s %9s %9s %12s %13s %11s %9s\n' cycles records MB report_MB report_json_MB \
	export_MB dump_MB
for mult in 1 2 4; do
	n=$((CYCLES * mult)) rec=$TMP/rec.sprb
	rm -f "$rec" "$TMP/out.pftrace"
	"$TOP/specprobe" record -o "$rec" --ring-mb 256 -- "$TOP/.output/specsim/specsim-server" \
		-q --cycles "$n" --host-us 0 --draft-us 0 --verify-us 0 --accept-us 0 \
		--extend-us 0 2>"$TMP/rec.err"
	records=$(grep -o '[0-9]* records' "$TMP/rec.err" | grep -o '[0-9]*')
	grep -q ' 0 dropped' "$TMP/rec.err" || echo "note: $(tail -1 "$TMP/rec.err")" >&2
	text=$(peak_kb report "$rec")
	json=$(peak_kb report --json "$rec")
	export=$(peak_kb export -o "$TMP/out.pftrace" "$rec")
	dump=$(peak_kb dump "$rec")
	python3 -c 'import sys
n, r, size, *kb = (int(a) for a in sys.argv[1:])
print(f"{n:<9} {r:9} {size / 1e6:9.1f} " + " ".join(f"{k / 1024:{w}.1f}" for k, w in
      zip(kb, (12, 13, 11, 9))))' "$n" "$records" "$(stat -c %s "$rec")" "$text" "$json" \
		"$export" "$dump"
done
