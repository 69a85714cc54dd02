#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# report, report --json, export and diff read a recording in passes and keep windows of it:
# their peak memory does not grow with its length (diff keeps 8 bytes a cycle for each copy
# of the cycle times its bootstrap resamples). The same server loop recorded for N and 4N
# cycles; the longer one's peak RSS may exceed the shorter one's by a few MiB, not by the
# ~1 KiB a cycle that a whole recording held in memory takes.
source "$(dirname "$0")/lib.sh"

CYCLES=20000
SLACK_KB=8192
# diff holds two readers: the peaks of one command on one recording were seen 10 MiB apart
# between runs on a loaded machine; a whole recording in memory would add ~120 MiB here
DIFF_SLACK_KB=16384

# peak_kb ARGS...: peak RSS of specprobe ARGS in KiB (its output thrown away), or nothing
peak_kb() {
	python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if r.returncode == 0 else "")' \
		"$SPECPROBE" "$@"
}

record() {
	"$SPECPROBE" record -o "$SCRATCH/$1.sprb" --ring-mb 256 -- "$SERVER" -q --cycles "$2" \
		--host-us 0 --draft-us 0 --verify-us 0 --accept-us 0 --extend-us 0 \
		2>"$SCRATCH/$1.err"
}

if ! record short $CYCLES || ! record long $((4 * CYCLES)); then
	fail "recording the server: $(tail -1 "$SCRATCH/short.err") $(tail -1 "$SCRATCH/long.err")"
	finish
	exit
fi
for what in "report" "report --json" "export"; do
	args=($what)
	out=()
	[ "$what" = export ] && out=(-o "$SCRATCH/out.pftrace" --force)
	short=$(peak_kb "${args[@]}" "${out[@]}" "$SCRATCH/short.sprb")
	long=$(peak_kb "${args[@]}" "${out[@]}" "$SCRATCH/long.sprb")
	if [ -z "$short" ] || [ -z "$long" ]; then
		fail "$what: failed on a recording"
	elif [ "$long" -le $((short + SLACK_KB)) ]; then
		pass "$what: peak RSS $((short / 1024)) MiB for $CYCLES cycles, $((long / 1024)) MiB for 4x"
	else
		fail "$what: peak RSS $((short / 1024)) MiB for $CYCLES cycles, $((long / 1024)) MiB for 4x"
	fi
done
# diff: both recordings read as report reads one; a recording against itself
short=$(peak_kb diff "$SCRATCH/short.sprb" "$SCRATCH/short.sprb")
long=$(peak_kb diff "$SCRATCH/long.sprb" "$SCRATCH/long.sprb")
if [ -z "$short" ] || [ -z "$long" ]; then
	fail "diff: failed on a recording"
elif [ "$long" -le $((short + DIFF_SLACK_KB)) ]; then
	pass "diff A A: peak RSS $((short / 1024)) MiB for $CYCLES cycles, $((long / 1024)) MiB for 4x"
else
	fail "diff A A: peak RSS $((short / 1024)) MiB for $CYCLES cycles, $((long / 1024)) MiB for 4x"
fi
# ... and counts the cycles of each that report counts
cycles_of() {
	"$SPECPROBE" report --json "$1" | python3 -c \
		'import json, sys; print(json.load(sys.stdin)["summary"]["cycles"])'
}
n=$("$SPECPROBE" diff --json "$SCRATCH/short.sprb" "$SCRATCH/long.sprb" | python3 -c \
	'import json, sys; c = json.load(sys.stdin)["cycle_time"]["cycles"]; print(c["a"], c["b"])')
want="$(cycles_of "$SCRATCH/short.sprb") $(cycles_of "$SCRATCH/long.sprb")"
if [ "$n" = "$want" ] && [ "${n#* }" -ge $((4 * CYCLES - 2)) ]; then
	pass "diff of the two counts $n cycles, as report does"
else
	fail "diff of the two counts '$n' cycles, report '$want'"
fi
# the temporary files' folder missing: one line that names it, exit status 1
out=$(TMPDIR=$SCRATCH/none "$SPECPROBE" report "$SCRATCH/short.sprb" 2>"$SCRATCH/tmp.err")
status=$?
if [ "$status" = 1 ] && [ -z "$out" ] && [ "$(wc -l <"$SCRATCH/tmp.err")" = 1 ] &&
	grep -q "temporary files in $SCRATCH/none" "$SCRATCH/tmp.err"; then
	pass "no temporary folder: one line ($(cat "$SCRATCH/tmp.err")), exit status 1"
else
	fail "no temporary folder: status $status, stderr '$(head -c 200 "$SCRATCH/tmp.err")'"
fi
# the longer recording's report counts every cycle the server ran
n=$("$SPECPROBE" report --json "$SCRATCH/long.sprb" | python3 -c \
	'import json, sys; print(json.load(sys.stdin)["summary"]["cycles"])')
if [ "$n" -ge $((4 * CYCLES - 2)) ] && [ "$n" -le $((4 * CYCLES)) ]; then
	pass "the long recording's report counts $n of its $((4 * CYCLES)) cycles"
else
	fail "the long recording's report counts $n cycles, not about $((4 * CYCLES))"
fi
finish
