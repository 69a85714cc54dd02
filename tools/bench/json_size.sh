#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Size of `report --json` against calls, cycles and syncs: record eager PyTorch-style loops of
# the simulated server (--eager-loop --torch: every launch and copy on the legacy stream, each
# one a call that could synchronise) of CYCLES, 2x and 4x CYCLES cycles, each with 4, 16 and
# 64 target layers (a layer is two launches and a memset a verify), drafting up to 6 tokens;
# then CYCLES with up to 2 and 12 draft tokens (a sync per token); then the JSON's size from
# each SPECPROBE given on the same recordings (the first: the build here). groups: the
# entries of could_sync[] (calls that could synchronise and did not, grouped).
#   tools/bench/json_size.sh [CYCLES] [SPECPROBE...]      (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
CYCLES=${1:-200}
shift || true
BINS=("$TOP/specprobe" "$@")
TMP=$(mktemp -d /tmp/specprobe-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# field NAME FILE: a top-level count of the JSON report (recording's calls and launches too)
field() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[2]))
k = sys.argv[1]
print(d["recording"][k] if k in ("calls", "launches", "copies") else
      d["summary"]["cycles"] if k == "cycles" else len(d["could_sync"]) if k == "groups" else
      d[k])' "$1" "$2"
}

printf '%-7s %-6s %-3s %8s %8s %6s %6s %6s %8s' cycles layers k calls launches syncs counted \
	groups rec_KB
for i in "${!BINS[@]}"; do printf ' %10s %8s %8s' "json$i""_KB" B/call B/cycle; done
printf '\n'
runs=()
for mult in 1 2 4; do
	for layers in 4 16 64; do
		runs+=("$((CYCLES * mult)) $layers 6")
	done
done
runs+=("$CYCLES 16 2" "$CYCLES 16 12")
for run in "${runs[@]}"; do
	read -r n layers k <<<"$run"
	rec=$TMP/rec.sprb
	rm -f "$rec"
	"${BINS[0]}" record -o "$rec" --ring-mb 256 -- \
		"$TOP/.output/specsim/specsim-server" -q --cycles "$n" --eager-loop --torch \
		--draft-k "$k" --layers "$layers" --host-us 0 --draft-us 0 --verify-us 0 \
		--accept-us 0 --extend-us 0 2>"$TMP/rec.err"
	grep -q ' 0 dropped' "$TMP/rec.err" || echo "note: $(tail -1 "$TMP/rec.err")" >&2
	"${BINS[0]}" report --json "$rec" >"$TMP/r0.json"
	printf '%-7s %-6s %-3s %8s %8s %6s %6s %6s %8.0f' "$n" "$layers" "$k" \
		"$(field calls "$TMP/r0.json")" \
		"$(field launches "$TMP/r0.json")" "$(field sync_calls "$TMP/r0.json")" \
		"$(field cycles "$TMP/r0.json")" "$(field groups "$TMP/r0.json")" \
		"$(($(stat -c %s "$rec") / 1024))"
	calls=$(field calls "$TMP/r0.json") counted=$(field cycles "$TMP/r0.json")
	for i in "${!BINS[@]}"; do
		"${BINS[$i]}" report --json "$rec" >"$TMP/r.json"
		size=$(stat -c %s "$TMP/r.json")
		printf ' %10.0f %8.1f %8.0f' "$((size / 1024))" \
			"$(python3 -c "print($size / $calls)")" \
			"$(python3 -c "print($size / max($counted, 1))")"
	done
	printf '\n'
done
