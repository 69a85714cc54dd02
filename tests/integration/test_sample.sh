#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# record --sample on the simulated server: launch probes in windows, the rest all the time.
# The windows alternate open and close with rising stamps, every recorded launch lies in one
# and every launch made wholly inside one is recorded, and every other probed call (syncs,
# copies, graph launches, events) is recorded as often as specsim made it; no stack record
# is left without its call (--stacks all). specsim's GPU time is slept, so a run lasts at
# least its simulated time and spans several windows however fast the machine. Bad --sample
# forms and kernels without uprobe_multi: one line.
source "$(dirname "$0")/lib.sh"
CHECK="python3 $TOP/tests/integration/check_sample_capture.py"
ON_MS=100 EVERY_MS=400
SAMPLE=${ON_MS}ms/${EVERY_MS}ms

# check NAME DIR RECS...: the recording's windows and calls against the truth
check() {
	local name=$1 dir=$2 recs
	recs=$(echo "${@:3}" | tr ' ' ',')
	if ! "$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"; then
		fail "$name: dump failed: $(head -1 "$dir/dump.err")"
		return
	fi
	if grep -q 'missing\|numbered' "$dir/dump.err"; then
		fail "$name: the reader finds calls missing: $(grep -m1 'missing\|numbered' "$dir/dump.err")"
	fi
	if $CHECK "$recs" "$dir/calls.jsonl" $ON_MS $EVERY_MS "$dir"/gt.rank* >"$dir/check.out" 2>&1
	then
		pass "$name: $(tail -1 "$dir/check.out")"
	else
		fail "$name: $(tail -1 "$dir/check.out") ($dir)"
		trap - EXIT
	fi
}

# from_exec NAME [RECORD_OPTS...]: -- CMD, traced from its exec; libnccl comes later,
# loaded while the windows run
from_exec() {
	local name=$1 dir="$SCRATCH/$1"
	shift
	mkdir -p "$dir"
	if ! "$SPECPROBE" record --sample $SAMPLE "$@" -o "$dir/rec.sprb" -- "$SERVER" -q \
		--cycles 800 --draft-mode eager --ground-truth "$dir/gt" 2>"$dir/rec.err"; then
		fail "$name: record failed: $(tail -1 "$dir/rec.err")"
		return
	fi
	check "$name" "$dir" "$dir/rec.sprb"
}

# -p, from before cuInit: an eager loop (a copy to the host and a sync per draft token)
from_pid() {
	local dir="$SCRATCH/pid" rec
	start_server "$dir" --wait-at init --eager-loop --cycles 600 || { fail "pid: no server"; return; }
	"$SPECPROBE" record --sample $SAMPLE -o "$dir/rec.sprb" -p "$target" 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	wait $server_pid
	wait $rec || fail "pid: record failed: $(tail -1 "$dir/rec.err")"
	check pid "$dir" "$dir/rec.sprb"
}

# the flight recorder: a ring of segments, read in turn
flight() {
	local dir="$SCRATCH/flight"
	mkdir -p "$dir"
	if ! "$SPECPROBE" record --sample $SAMPLE --max-size 1M -o "$dir/rec.sprb" -- "$SERVER" \
		-q --cycles 800 --draft-mode eager --ground-truth "$dir/gt" 2>"$dir/rec.err"; then
		fail "flight: record failed: $(tail -1 "$dir/rec.err")"
		return
	fi
	# nothing rotated out: the segments hold the whole run, as the truth does
	if [ -e "$dir/rec.sprb.0" ] && grep -q ' 0 segment(s) with 0 calls' "$dir/rec.err"; then
		check flight "$dir" $(ls "$dir"/rec.sprb.[0-9]* | sort -t. -k3 -n)
	else
		fail "flight: segments rotated out, or none written: $(tail -2 "$dir/rec.err")"
	fi
}

# bad_form ARG: usage error, one line, status 2
bad_form() {
	local err="$SCRATCH/bad.err" status
	"$SPECPROBE" record --sample "$1" -o "$SCRATCH/bad.sprb" -- true 2>"$err"
	status=$?
	if [ $status = 2 ] && grep -q -- '--sample' "$err" && [ ! -e "$SCRATCH/bad.sprb" ]; then
		pass "--sample '$1': $(head -1 "$err")"
	else
		fail "--sample '$1': status $status: $(cat "$err")"
	fi
}

from_exec exec
# a launch's stack record comes only with a launch kept: none is left without its call
from_exec exec-stacks --stacks all
from_pid
flight
for form in 250ms 0/1s 1s/1s 2s/1s 1s/ /1s x/1s 250ms/y 0.5ms/1s 1s/2d; do
	bad_form "$form"
done

# one by one, the links would take too long to go in and out: refused, nothing run
SPECPROBE_SINGLE_PROBES=1 "$SPECPROBE" record --sample $SAMPLE -o "$SCRATCH/single.sprb" -- \
	touch "$SCRATCH/ran" 2>"$SCRATCH/single.err"
status=$?
if [ $status = 1 ] && [ "$(wc -l <"$SCRATCH/single.err")" = 1 ] &&
	grep -q 'uprobe_multi' "$SCRATCH/single.err" && [ ! -e "$SCRATCH/ran" ]; then
	pass "no uprobe_multi: refused in one line, the command not run"
else
	fail "no uprobe_multi: status $status: $(cat "$SCRATCH/single.err")"
fi
if "$SPECPROBE" top --replay /dev/null --sample $SAMPLE 2>"$SCRATCH/replay.err"; then
	fail "top --replay --sample accepted"
else
	pass "top --replay: $(head -1 "$SCRATCH/replay.err")"
fi
finish
