#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# What record --sample's windows cost: for 1, 8 and 32 processes mapping the look-alike
# libcuda (one launches in a tight loop, timing each call; the others only map it), all
# traced by one record --sample, the wall time the tracer takes to put the launch probes in
# (open) and take them out (close) per window, read from the recording's SP_REC_SAMPLE
# records; and the looping thread's calls, timed one by one and kept per millisecond
# (calls, longest): their mean time inside windows and out of them, and the longest call
# in a millisecond where links go in or out against the longest in any other. Then the simulated server's eager
# loop (--eager-loop, short GPU times: launch-bound) run untraced, under full record and
# under record --sample, side by side in each round: its CPU time (user + system, from
# /proc) per cycle.
#   tools/bench/window_cost.sh [SECONDS] [ON/EVERY] [ROUNDS]      (root, after make tools)
# SECONDS per process count (default 10), ON/EVERY (default 250ms/2.5s), eager ROUNDS (3).
# Environment: PROCS (default "1 8 32"), CYCLES of the eager loop (default 20000).
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SECONDS_RUN=${1:-10}
SAMPLE=${2:-250ms/2.5s}
ROUNDS=${3:-3}
PROCS=${PROCS:-1 8 32}
CYCLES=${CYCLES:-20000}
LAT=$TOP/.output/bench/launchlat
SERVER=$TOP/.output/specsim/specsim-server
SP=$TOP/specprobe
TMP=$(mktemp -d /tmp/specprobe-window.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT

wait_file() { for _ in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }

# windows N: N processes, one looping; the recording and the loop's output under $TMP/N.*
windows() {
	local n=$1 pids="" idle="" loop rec
	rm -f "$TMP/go"
	"$LAT" "$SECONDS_RUN" "$TMP/$n.slices" "$TMP/go" >"$TMP/$n.loop" &
	loop=$!
	pids=$loop
	for _ in $(seq 2 "$n"); do
		"$LAT" 0 - "$TMP/go" >/dev/null &
		idle="$idle $!"
		pids="$pids,$!"
	done
	wait_file "$TMP/$n.loop"
	"$SP" record --sample "$SAMPLE" -o "$TMP/$n.sprb" -p "$pids" 2>"$TMP/$n.err" &
	rec=$!
	wait_file "$TMP/$n.sprb"
	touch "$TMP/go"
	wait "$loop"
	# shellcheck disable=SC2086
	kill $idle 2>/dev/null || true
	wait "$rec" || true
}

# eager ARM: CPU time of one eager-loop run (untraced, full record or record --sample)
eager() {
	local arm=$1 run rec="" opts=()
	rm -f "$TMP/ready" "$TMP/go" "$TMP/e.sprb"
	# the shell's children's times: the server's user and system time, once it has exited
	( "$SERVER" -q --eager-loop --cycles "$CYCLES" --draft-us 5 --verify-us 10 \
		--accept-us 5 --extend-us 5 --ready-file "$TMP/ready" --go-file "$TMP/go" \
		>"$TMP/e.out" 2>&1; times >"$TMP/e.times" ) &
	run=$!
	wait_file "$TMP/ready"
	[ "$arm" = sampled ] && opts=(--sample "$SAMPLE")
	if [ "$arm" != untraced ]; then
		"$SP" record "${opts[@]}" -o "$TMP/e.sprb" -p "$(head -1 "$TMP/ready")" \
			2>"$TMP/e.err" &
		rec=$!
		wait_file "$TMP/e.sprb"
	fi
	touch "$TMP/go"
	wait "$run"
	[ -n "$rec" ] && wait "$rec"
	echo "$arm $(tail -1 "$TMP/e.times")" >>"$TMP/eager.rows"
}

for n in $PROCS; do
	windows "$n"
done
for r in $(seq "$ROUNDS"); do
	# rotated order: no arm always first
	case $((r % 3)) in
	0) order="untraced record sampled" ;;
	1) order="record sampled untraced" ;;
	*) order="sampled untraced record" ;;
	esac
	for arm in $order; do
		eager "$arm"
	done
done

python3 - "$TMP" "$SAMPLE" "$SECONDS_RUN" "$CYCLES" "$PROCS" <<'PY'
import json, re, statistics, struct, sys
tmp, sample, secs, cycles, procs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5].split()
AHEAD_NS, MARGIN_NS = 20000, 1000000   # the tracer's edge lead; a call this near counts


def samples(path):
    data = open(path, "rb").read()
    off = 16 + struct.unpack_from("<I", data, 12)[0]
    while off + 4 <= len(data):
        kind, size = struct.unpack_from("<HH", data, off)
        if size < 4:
            break
        if kind == 72:
            yield struct.unpack_from("<HHIQQIIII", data, off)[2:5]
        off += size


def ms(ns):
    return f"{ns / 1e6:.2f}"


print(f"record --sample {sample}: {secs} s per row, one process launching in a tight loop")
print("| processes | windows | open (attach) median / max ms | close (detach) median / max ms "
      "| call in / out of windows µs | longest call at an edge µs | longest elsewhere µs |")
print("|---|---|---|---|---|---|---|")
for n in procs:
    opens, closes, busy, wins, opened = [], [], [], [], None
    for flags, ts, cost in samples(f"{tmp}/{n}.sprb"):
        if flags == 1:
            opens.append(cost)
            opened = ts
            busy.append((ts - AHEAD_NS - cost, ts))
        else:
            closes.append(cost)
            wins.append((opened, ts))
            busy.append((ts, ts + cost))
    inside, outside, at_edge, elsewhere = [], [], 0, 0
    for line in open(f"{tmp}/{n}.slices"):
        start, calls, longest = map(int, line.split())
        end = start + 1000000
        if any(start < b + MARGIN_NS and end > a - MARGIN_NS for a, b in busy):
            at_edge = max(at_edge, longest)
            continue
        elsewhere = max(elsewhere, longest)
        if calls:
            within = any(a <= start and end <= b for a, b in wins)
            (inside if within else outside).append(1e6 / calls)
    print(f"| {n} | {len(opens)} | {ms(statistics.median(opens))} / {ms(max(opens))} | "
          f"{ms(statistics.median(closes))} / {ms(max(closes))} | "
          f"{statistics.median(inside) / 1e3:.3f} / {statistics.median(outside) / 1e3:.3f} | "
          f"{at_edge / 1e3:.0f} | {elsewhere / 1e3:.0f} |")

rows = [l.split() for l in open(f"{tmp}/eager.rows")]
print()
print(f"specsim --eager-loop, {cycles} cycles, {len(rows) // 3} rounds side by side: "
      "CPU µs per cycle (user + system), median of rounds")
print("| untraced | record | record --sample " + sample + " |")
print("|---|---|---|")


def seconds(field):  # bash's times: 0m1.234s
    m, s = re.fullmatch(r"(\d+)m([\d.]+)s", field).groups()
    return int(m) * 60 + float(s)


per = {arm: statistics.median((seconds(r[1]) + seconds(r[2])) / cycles * 1e6
                              for r in rows if r[0] == arm)
       for arm in ("untraced", "record", "sampled")}
print(f"| {per['untraced']:.1f} | {per['record']:.1f} ({per['record'] / per['untraced']:.3f}x) | "
      f"{per['sampled']:.1f} ({per['sampled'] / per['untraced']:.3f}x) |")
PY
