#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Cost on a real server, side by side in one run: one decoder process makes ROUNDS x ARMS
# short rounds; each round runs every arm once, in an order rotated from round to round:
#   untraced   nothing attached
#   record     specprobe record -p (attached before the round starts, detached after)
#   record_sample  record --sample SAMPLE (launch probes in windows, the rest all the time;
#              skipped, with a message, if the binary has no --sample)
#   top        specprobe top --batch -p (skipped, with a message, if the binary has no top)
#   floor      the kernel's trap alone at the same entry points, empty programs
#              (tools/bench/trapfloor.c; skipped when that binary is not there)
# then the paired ratio of tokens/s to the same round's untraced one with a 95 % bootstrap
# interval (tools/gpu/ab_stats.py), the per-hit cost that report gives for each recording,
# and, if the hitcost bench is there, the per-hit breakdown (tools/bench/hitcost.sh).
#   tools/bench/gpu_ab.sh OUTDIR [ROUNDS] [decoder options]    (root)
# Environment: SPECPROBE (default ./specprobe-static, else ./specprobe), HITCOST (default
# .output/bench/hitcost-static, else .output/bench/hitcost; "none" skips it; HITCOST_ROUNDS,
# HITCOST_BASE as hitcost.sh takes them), CYCLES per
# round (100), DURATION (seconds: no round starts that would end past it, so the reports
# made after the rounds still fit in a time limit), GAP (seconds from one round's end to
# the next one's start, 2 by default, whatever the arm: an idle GPU and host are in
# another state after a long pause than after a short one, and a tracer's attach takes
# longer than none),
# DECODER (default: python3 tools/gpu/spec_compile.py; any program of the same
# --dir/--variants/--cycles protocol, e.g. tools/gpu/fake_decoder.py --lib LIBCUDA),
# RECORD_OPTS and TOP_OPTS (more options for those arms, e.g. RECORD_OPTS="--ring-mb 8");
# RECORD_ALT_OPTS adds an arm record_alt: record with those options instead (e.g.
# RECORD_ALT_OPTS="--stacks none"), so two ways of recording are compared in one run;
# RECORD_ALT_SPECPROBE runs that arm with another specprobe binary (an older build: before
# and after a change in the same rounds); any arm record_X named in ARMS takes RECORD_X_OPTS
# and RECORD_X_SPECPROBE the same way. SAMPLE (ON/EVERY, default 250ms/2.5s; "none" leaves
# the record_sample arm out) sets RECORD_SAMPLE_OPTS unless given: its windows open from
# the tracer's start, so rounds (CYCLES) should last several EVERY for its ratio to be that
# of the duty cycle, not of where a short round falls. FLOOR (default .output/bench/trapfloor-static,
# else .output/bench/trapfloor; "none" skips the floor arm). ARMS names the arms to run
# (default: all of the above that can run). ONOFF=MS: in every round of a traced arm,
# tools/bench/onoff flips the target's traced bit every MS ms (ONOFF_BIN, default
# .output/bench/onoff-static, else .output/bench/onoff), so tools/gpu/onoff_stats.py can
# pair its programs' work against the trap within the round (use long rounds: CYCLES of
# several thousand; ONOFF_OPTS="-s" adds the programs' run times); such arms' plain
# ratios are then of half-traced rounds. The floor arm under ONOFF detaches and attaches
# its empty programs every MS ms instead. RECORD_X_ONOFF_OPTS (TOP_ONOFF_OPTS) give one arm
# its own onoff options, e.g. "-v quiet_pinned": that arm flips a switch of specprobe's
# instead of the traced bit. Each recording's calls per entry point are kept.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: gpu_ab.sh OUTDIR [ROUNDS] [decoder options]}
ROUNDS=${2:-20}
shift $(($# > 1 ? 2 : 1))
CYCLES=${CYCLES:-100}
SP=${SPECPROBE:-$TOP/specprobe-static}
[ -x "$SP" ] || SP=$TOP/specprobe
HC=${HITCOST:-}
if [ -z "$HC" ]; then
	for HC in "$TOP/.output/bench/hitcost-static" "$TOP/.output/bench/hitcost" none; do
		[ -x "$HC" ] && break
	done
fi
FLOOR=${FLOOR:-}
if [ -z "$FLOOR" ]; then
	for FLOOR in "$TOP/.output/bench/trapfloor-static" "$TOP/.output/bench/trapfloor" none; do
		[ -x "$FLOOR" ] && break
	done
fi
DECODER=${DECODER:-python3 $TOP/tools/gpu/spec_compile.py}
W=$(mktemp -d /tmp/specprobe-ab.XXXXXX)
mkdir -p "$OUT/ab"
A=$OUT/ab
tracer=
trap '[ -n "$tracer" ] && kill -INT $tracer 2>/dev/null; [ -n "${pid:-}" ] && kill $pid 2>/dev/null; rm -rf "$W"' EXIT

arms=(untraced record top)
[ -n "${RECORD_ALT_OPTS:-}${RECORD_ALT_SPECPROBE:-}" ] && arms=(untraced record record_alt top)
if ! "$SP" top --help >/dev/null 2>&1; then
	echo "specprobe top: not in $SP; the top arm is skipped" | tee "$A/top-skipped.txt"
	arms=(untraced record)
fi
SAMPLE=${SAMPLE:-250ms/2.5s}
if [ "$SAMPLE" != none ]; then
	if "$SP" record --help 2>/dev/null | grep -q -- '--sample'; then
		RECORD_SAMPLE_OPTS=${RECORD_SAMPLE_OPTS:---sample $SAMPLE}
		arms+=(record_sample)
	else
		echo "specprobe record --sample: not in $SP; the record_sample arm is skipped" |
			tee "$A/sample-skipped.txt"
	fi
fi
[ "$FLOOR" != none ] && [ -x "$FLOOR" ] && arms+=(floor)
[ -n "${ARMS:-}" ] && read -r -a arms <<<"$ARMS"
ONOFF=${ONOFF:-}
ONOFF_BIN=${ONOFF_BIN:-$TOP/.output/bench/onoff-static}
[ -x "$ONOFF_BIN" ] || ONOFF_BIN=$TOP/.output/bench/onoff
flipper=
nr_arms=${#arms[@]}
variants=$(yes clean | head -n $((ROUNDS * nr_arms)) | paste -sd,)

if [ "$HC" != none ] && [ -x "$HC" ]; then
	echo "per-hit breakdown: $HC"
	HITCOST=$HC "$TOP/tools/bench/hitcost.sh" "${HITCOST_ROUNDS:-5}" 100000 >"$A/hitcost.txt" 2>&1
	cat "$A/hitcost.txt"
fi

nvidia-smi -L >"$A/gpu.txt" 2>&1
echo "decoder: $DECODER --variants clean x $((ROUNDS * nr_arms)) --cycles $CYCLES $*" | tee "$A/decoder.cmd"
PYTHONUNBUFFERED=1 $DECODER --dir "$W" --variants "$variants" --cycles "$CYCLES" "$@" \
	>"$A/decoder.log" 2>&1 &
pid=$!

wait_file() {	# $1 path, $2 tenths of a second at most; fails when the decoder is gone
	for _ in $(seq "$2"); do
		[ -e "$1" ] && return 0
		kill -0 $pid 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

start_tracer() {	# $1 arm, $2 slot: the tracer attached before the round starts
	local log=$A/$2-$1.err
	case $1 in
	record*)	# record_X: RECORD_X_OPTS and RECORD_X_SPECPROBE (record: RECORD_OPTS)
		local key=RECORD${1#record}
		local opts=${key^^}_OPTS bin=${key^^}_SPECPROBE
		"${!bin:-$SP}" record ${!opts:-} -o "$W/$2-$1.sprb" -p "$pid" 2>"$log" & ;;
	top) "$SP" top --batch ${TOP_OPTS:-} -p "$pid" >"$A/$2-top.txt" 2>"$log" & ;;
	floor)	# with ONOFF, it detaches and attaches again itself, printing the flips
		if [ -n "$ONOFF" ]; then
			"$FLOOR" -p "$pid" -t "$ONOFF" >"$A/$2-$1.flips" 2>"$log" &
		else
			"$FLOOR" -p "$pid" 2>"$log" &
		fi ;;
	*) return 0 ;;
	esac
	tracer=$!
	# record and trapfloor say "tracing" once attached; top's first output comes after its attach
	for _ in $(seq 300); do
		grep -q "tracing" "$log" 2>/dev/null && break
		[ "$1" = top ] && [ -s "$A/$2-top.txt" ] && break
		kill -0 $tracer 2>/dev/null || { echo "$1 exited early:"; cat "$log"; return 1; }
		sleep 0.1
	done
	sleep 0.5
	if [ -n "$ONOFF" ] && [ "$1" != floor ]; then
		local onoff_opts=RECORD${1#record}_ONOFF_OPTS
		[ "$1" = top ] && onoff_opts=TOP_ONOFF_OPTS
		onoff_opts=${onoff_opts^^}
		"$ONOFF_BIN" -p "$pid" -t "$ONOFF" -d 100000 ${!onoff_opts:-${ONOFF_OPTS:-}} \
			>"$A/$2-$1.flips" 2>>"$log" &
		flipper=$!
	fi
}

stop_tracer() {	# $1 arm, $2 slot
	[ -n "$flipper" ] && kill -TERM $flipper && wait $flipper
	flipper=
	[ -n "$tracer" ] || return 0
	kill -INT $tracer 2>/dev/null
	wait $tracer
	echo "exit $?" >>"$A/$2-$1.err"
	tracer=
}

report_slot() {	# $1 arm, $2 slot: after the rounds, so no round waits for a report
	local rec=$W/$2-$1.sprb
	"$SP" report --json "$rec" >"$A/$2-$1.report.json" 2>>"$A/$2-$1.err"
	"$SP" report "$rec" >"$A/$2-$1.report.txt" 2>>"$A/$2-$1.err"
	"$SP" dump --counts "$rec" >"$A/$2-$1.calls.txt" 2>&1
	rm -f "$rec"	# the reports keep what counts
}

: >"$A/rounds.jsonl"
slot=0
started=$SECONDS
round_end=$(date +%s.%N)
for r in $(seq 0 $((ROUNDS - 1))); do
	if [ -n "${DURATION:-}" ] && [ "$r" -gt 0 ] &&
	   [ $((SECONDS - started + (SECONDS - started) / r)) -gt "$DURATION" ]; then
		echo "DURATION $DURATION s: $r of $ROUNDS rounds"
		kill $pid	# it waits for a round that will not come
		break
	fi
	for k in $(seq 0 $((nr_arms - 1))); do
		arm=${arms[(k + r) % nr_arms]}
		wait_file "$W/ready-$slot" 6000 || { echo "decoder exited"; tail "$A/decoder.log"; exit 1; }
		start_tracer "$arm" "$slot" || exit 1
		sleep "$(awk -v gap="${GAP:-2}" -v end="$round_end" -v now="$(date +%s.%N)" \
			'BEGIN { w = gap - (now - end); print (w > 0 ? w : 0) }')"
		touch "$W/go-$slot"
		wait_file "$W/done-$slot" 6000 || { echo "decoder exited"; tail "$A/decoder.log"; exit 1; }
		round_end=$(date +%s.%N)
		stop_tracer "$arm" "$slot"
		cp "$W/truth-$slot.json" "$A/$slot-$arm.truth.json"
		report= flips=
		case $arm in record*) report=$A/$slot-$arm.report.json ;; esac
		[ -e "$A/$slot-$arm.flips" ] && flips=$A/$slot-$arm.flips
		printf '{"round":%d,"slot":%d,"arm":"%s","truth":"%s","report":"%s","flips":"%s"}\n' \
			"$r" "$slot" "$arm" "$A/$slot-$arm.truth.json" "$report" "$flips" \
			>>"$A/rounds.jsonl"
		slot=$((slot + 1))
	done
	echo "round $((r + 1)) of $ROUNDS done at $(date +%T)"
	# the figures so far, in one small file: a run cut short still leaves them
	python3 "$TOP/tools/gpu/ab_stats.py" "$A" >"$A/ab.txt" 2>&1
done
wait $pid
echo "decoder exit $?" >>"$A/decoder.log"
pid=
n=0
for rec in "$W"/*.sprb; do	# eight at a time: the rounds are over, the cores are free
	[ -e "$rec" ] || continue
	slot_arm=$(basename "$rec" .sprb)
	report_slot "${slot_arm#*-}" "${slot_arm%%-*}" &
	n=$((n + 1))
	[ $((n % 8)) -eq 0 ] && wait
done
wait
python3 "$TOP/tools/gpu/ab_stats.py" "$A" | tee "$A/ab.txt"
if [ -n "$ONOFF" ]; then
	python3 "$TOP/tools/gpu/onoff_stats.py" "$A" | tee "$A/onoff.txt"
fi
# what comes back from a GPU machine is a few files: one archive of the text outputs (the
# reports' JSON, too large, stays out)
tar -C "$OUT" -cJf "$OUT/ab-text.tar.xz" --exclude='*.report.json' ab
