#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# What the launch stacks the default --stacks takes (a graph's once a second, one in eight
# first kernels of a burst) cost the traced program, against --stacks none and untraced:
# specsim's eager loop (a burst per draft token, a sync after each) and its graph loop,
# each arm's server CPU time (user + system) per cycle, in interleaved rounds.
#   tools/bench/launch_stack_cost.sh [ROUNDS]      (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-5}
SERVER=$TOP/.output/specsim/specsim-server
TMP=$(mktemp -d /tmp/specprobe-stackcost.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# ARM LOOP CYCLES ARGS... -> "LOOP ARM cpu_us_per_cycle"
run() {
	local arm=$1 loop=$2 cycles=$3 t
	shift 3
	case $arm in
	untraced) /usr/bin/time -f "%U %S" -o "$TMP/t" "$SERVER" -q --cycles "$cycles" "$@" \
			>/dev/null 2>&1 ;;
	none|syncs) "$TOP/specprobe" record -f --stacks "$arm" -o "$TMP/r.sprb" -- \
			/usr/bin/time -f "%U %S" -o "$TMP/t" "$SERVER" -q --cycles "$cycles" "$@" \
			>/dev/null 2>&1 ;;
	esac
	t=$(awk '{ print ($1 + $2) * 1e6 }' "$TMP/t")
	echo "$loop $arm $(awk -v t="$t" -v n="$cycles" 'BEGIN { print t / n }')"
}

for _ in $(seq "$ROUNDS"); do
	for arm in untraced none syncs; do
		run $arm eager 2000 --eager-loop >>"$TMP/rows"
		run $arm graphs 3000 >>"$TMP/rows"
	done
done

python3 - "$TMP/rows" "$ROUNDS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"{sys.argv[2]} interleaved rounds; server CPU µs per cycle, median")
print("| loop | untraced | record --stacks none | record (default stacks) | default / none |")
print("|---|---|---|---|---|")
for loop in ("eager", "graphs"):
    m = {arm: statistics.median(float(r[2]) for r in rows if r[0] == loop and r[1] == arm)
         for arm in ("untraced", "none", "syncs")}
    print(f"| {loop} | {m['untraced']:.1f} | {m['none']:.1f} | {m['syncs']:.1f} | "
          f"{m['syncs'] / m['none']:.3f} |")
PY
