#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# No traced process is left stopped: a process that execs is stopped until the tracer hooks
# it; a tracer killed or stopped then must not hold it. And no -- CMD is left running
# untraced when the recording cannot start.
source "$(dirname "$0")/lib.sh"
# the watchdog's bound (WATCHDOG_BOUND_MS) plus its 50 ms tick, in tenths of a second
BOUND_DS=6
# waits of several bounds: only the bound may decide, never the machine's speed
PATIENCE_DS=$((BOUND_DS * 20))

# exec_loop COUNT STOP: runs /bin/true until STOP exists (or its folder is gone), the runs so
# far in COUNT
exec_loop() {
	local n=0
	while [ ! -e "$2" ] && [ -d "${2%/*}" ]; do
		/bin/true
		n=$((n + 1))
		echo $n >"$1.tmp" && mv "$1.tmp" "$1"
	done
}

runs() { cat "$1" 2>/dev/null || echo 0; }

# grown FILE FROM BY: true once FILE's count is at least FROM + BY, within PATIENCE_DS
grown() {
	local i
	for ((i = 0; i < PATIENCE_DS; i++)); do
		[ "$(runs "$1")" -ge $(($2 + $3)) ] && return 0
		sleep 0.1
	done
	return 1
}

# stopped_under PID: the processes in state T among PID and its children
stopped_under() {
	local p
	for p in $1 $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		[ "$(awk '{ print $3 }' /proc/"$p"/stat 2>/dev/null)" = T ] && echo "$p"
	done
}

# none_stopped PID: no process under PID stays in state T longer than a bound, sampled over
# three bounds (a dying tracer's last links may still stop one for a moment)
none_stopped() {
	local i p
	local -A since=()
	for ((i = 0; i < BOUND_DS * 3; i++)); do
		local now=" $(stopped_under "$1" | tr '\n' ' ')"
		for p in "${!since[@]}"; do
			[[ $now == *" $p "* ]] || unset "since[$p]"
		done
		for p in $now; do
			[ -n "${since[$p]}" ] || since[$p]=$i
			[ $((i - since[$p])) -gt $BOUND_DS ] && { echo "$p"; return 1; }
		done
		sleep 0.1
	done
	return 0
}

# --- the tracer SIGKILLed at random moments while the target execs ---
dir="$SCRATCH/kill"
mkdir -p "$dir"
exec_loop "$dir/count" "$dir/stop" &
loop=$!
bad=""
hooked=0
for ((k = 1; k <= 15; k++)); do
	rm -f "$dir/rec.sprb"
	"$SPECPROBE" record -o "$dir/rec.sprb" -p $loop 2>"$dir/rec.err.$k" &
	rec=$!
	wait_file "$dir/rec.sprb"
	# once it has hooked an exec, the kill lands anywhere in its work
	for ((i = 0; i < PATIENCE_DS; i++)); do
		grep -q "ran execve" "$dir/rec.err.$k" && break
		sleep 0.1
	done
	grep -q "ran execve" "$dir/rec.err.$k" && hooked=$((hooked + 1))
	sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
	kill -KILL $rec
	wait $rec 2>/dev/null
	from=$(runs "$dir/count")
	if ! grown "$dir/count" "$from" 3; then
		bad="$bad kill $k: stuck at $from runs, stopped: $(stopped_under $loop);"
		kill -CONT $(stopped_under $loop) 2>/dev/null
	elif ! left=$(none_stopped $loop); then
		bad="$bad kill $k: left stopped: $left;"
		kill -CONT $left 2>/dev/null
	fi
done
touch "$dir/stop"
for ((i = 0; i < PATIENCE_DS; i++)); do
	kill -0 $loop 2>/dev/null || break
	sleep 0.1
done
kill -0 $loop 2>/dev/null && bad="$bad the loop never finished;"
wait $loop
status=$?
if [ -z "$bad" ] && [ $status = 0 ] && [ $hooked = 15 ]; then
	pass "tracer SIGKILLed 15 times while its target execs: never left stopped, the target runs on ($(runs "$dir/count") execs) and finishes"
else
	fail "tracer SIGKILL:$bad status $status, $hooked of 15 hooked an exec"
fi

# --- the tracer SIGSTOPped while its target execs: the target goes on, the recording ends ---
dir="$SCRATCH/tstp"
mkdir -p "$dir"
CALLER_EXEC="$(declare -f exec_loop); exec_loop '$dir/count' '$dir/stop'" \
	"$LOOKALIKE/caller" 20 2 "$dir/go" "$dir/truth" >"$dir/caller.out" &
caller=$!
wait_ready "$dir/caller.out"
"$SPECPROBE" record -o "$dir/rec.sprb" -p $caller 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/rec.sprb"
touch "$dir/go"
grown "$dir/count" 0 3
kill -STOP $rec
from=$(runs "$dir/count")
# a stop lasts a bound: three of them pass within several bounds
grown "$dir/count" "$from" 3
during=$(( $(runs "$dir/count") - from ))
kill -CONT $rec
grown "$dir/count" "$((from + during))" 3
touch "$dir/stop"
wait $caller
status=$?
wait $rec
rstatus=$?
"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
continued=$(sed -n 's/.*: \([0-9]*\) stop(s) of traced processes continued by the watchdog.*/\1/p' \
	"$dir/dump.err")
if [ $status = 0 ] && [ $rstatus = 0 ] && [ "$during" -ge 3 ] && [ "${continued:-0}" -ge 3 ] &&
	grep -q "continued by the watchdog after" "$dir/rec.err" &&
	grep -q "its calls until its probes are attached may be missing" "$dir/rec.err" &&
	python3 "$TOP/tests/integration/check_capture.py" --truth "$dir/truth" \
		--calls "$dir/calls.jsonl" --dump-stderr "$dir/dump.err" --threads 2 \
		--iterations 20 >"$dir/check.out"; then
	pass "tracer SIGSTOPped: its target went on ($during execs during the stop, $continued stops continued by the watchdog, said by record and dump); after SIGCONT the recording ends cleanly, the caller's calls exact"
else
	fail "tracer SIGSTOP: status $status/$rstatus, $during execs during the stop, '$continued' continued, $(cat "$dir/rec.err" "$dir/dump.err" "$dir/check.out" 2>/dev/null | grep -v "ran execve" | tail -4)"
fi

# --- an output that cannot be written: the command never runs ---
# refused NAME ARGS...: one error line, exit non-zero, the command's marker never made
refused() {
	local name=$1 tag="specprobe-stops-$$-$RANDOM" rc
	shift
	# a shell that stays, its name in its command line
	"$SPECPROBE" "$@" -- sh -c 'touch "$0"; while :; do sleep 1; done' "$SCRATCH/$tag" \
		>"$SCRATCH/out" 2>"$SCRATCH/err"
	rc=$?
	sleep 0.5
	if [ $rc != 0 ] && [ "$(wc -l <"$SCRATCH/err")" = 1 ] && [ ! -e "$SCRATCH/$tag" ] &&
		! pgrep -f "$tag" >/dev/null; then
		pass "$name: exit $rc, one line ($(cat "$SCRATCH/err")), the command never ran"
	else
		fail "$name: exit $rc, $(wc -l <"$SCRATCH/err") lines: $(cat "$SCRATCH/err"); marker $(ls "$SCRATCH/$tag" 2>&1); running: $(pgrep -f "$tag")"
		kill $(pgrep -f "$tag") 2>/dev/null
	fi
}
refused "record -o in a missing folder" record -o "$SCRATCH/nonexistent/dir/x.sprb"
refused "report -o in a missing folder" report -o "$SCRATCH/nonexistent/dir/x.sprb"
refused "top --batch -o in a missing folder" top --batch -o "$SCRATCH/nonexistent/dir/x.sprb"
refused "record --max-size -o in a missing folder" record --max-size 1M \
	-o "$SCRATCH/nonexistent/dir/x.sprb"
touch "$SCRATCH/exists.sprb"
refused "record -o an existing file, no --force" record -o "$SCRATCH/exists.sprb"

finish
