#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Peak memory of diff against recording length: record CYCLES short decode cycles of the
# simulated server twice (A with k = 3, B with k = 5; all delays 0, about 1.2 KB a cycle),
# then the peak RSS (GNU time's maximum resident set size) and wall time of report A and of
# diff A B (most of diff's time, with many cycles, is its bootstrap: 2000 resamples of them all).
#   tools/bench/diff_rss.sh [CYCLES] [SPECPROBE] [DIR]  (root, after make; DIR keeps the two)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
CYCLES=${1:-100000}
SPECPROBE=${2:-$TOP/specprobe}
TMP=$(mktemp -d /tmp/specprobe-bench.XXXXXX)
DIR=${3:-$TMP}
trap 'rm -rf "$TMP"' EXIT

# peak ARGS...: "MB s" of the command's peak RSS and wall time, its output thrown away
peak() {
	/usr/bin/time -f '%M %e' -o "$TMP/time" "$SPECPROBE" "$@" >/dev/null 2>"$TMP/err" ||
		{ echo "failed: $SPECPROBE $* ($(tail -1 "$TMP/err"))" >&2; exit 1; }
	awk '{ printf "%.1f MB %.0f s", $1 / 1024, $2 }' "$TMP/time"
}

# record NAME ARGS...: the server's decode loop under trace into DIR/NAME.sprb (once)
record() {
	local name=$1
	shift
	[ -s "$DIR/$name.sprb" ] && return
	"$TOP/specprobe" record -o "$DIR/$name.sprb" --ring-mb 256 -- \
		"$TOP/.output/specsim/specsim-server" -q --cycles "$CYCLES" --host-us 0 --draft-us 0 \
		--verify-us 0 --accept-us 0 --extend-us 0 "$@" 2>"$TMP/rec.err"
	grep -q ' 0 dropped' "$TMP/rec.err" || echo "note: $(tail -1 "$TMP/rec.err")" >&2
}

mkdir -p "$DIR"
record a -k 3
record b -k 5
echo "A: $(stat -c %s "$DIR/a.sprb" | awk '{ printf "%.0f MB", $1 / 1e6 }'), B: $(stat -c %s \
	"$DIR/b.sprb" | awk '{ printf "%.0f MB", $1 / 1e6 }'), $CYCLES cycles each"
echo "report A:         $(peak report "$DIR/a.sprb")"
echo "diff A B:         $(peak diff "$DIR/a.sprb" "$DIR/b.sprb")"
