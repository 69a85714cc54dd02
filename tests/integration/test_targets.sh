#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# What the traced processes may do under the tracer: exec a program with no CUDA, exit
# and have their pid taken by another, be traced by several tracers at once, die as one
# rank of several. Each time nothing recorded is lost and the tracer ends cleanly.
source "$(dirname "$0")/lib.sh"
CHECK="python3 $TOP/tests/integration/check_faults.py"
TRUTH="python3 $TOP/tests/integration/check_truth.py"

# against_truth DIR: DIR/rec.sprb holds exactly the calls of the truth files DIR/gt*
against_truth() {
	"$SPECPROBE" dump --json "$1/rec.sprb" >"$1/calls.jsonl" 2>"$1/dump.err"
	"$SPECPROBE" dump -H "$1/rec.sprb" 2>/dev/null | grep '^#' >"$1/header.txt"
	$TRUTH --calls "$1/calls.jsonl" --header "$1/header.txt" --dump-stderr "$1/dump.err" \
		"$1"/gt* >"$1/truth.out" && ! grep -q "did not end cleanly" "$1/dump.err"
}

# bpf_ids PID: the BPF programs and links process PID holds, as prog_id:N and link_id:N
bpf_ids() {
	cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '/^(prog|link)_id:/ { print $1 $2 }' | sort -u
}

# bpf_left IDS: those of IDS the kernel still lists after up to 10 s (freed after the last fd)
bpf_left() {
	local id kind i left=""
	for id in $1; do
		kind=${id%%_id:*}
		for ((i = 0; i < 100; i++)); do
			bpftool "$kind" show id "${id#*:}" >/dev/null 2>&1 || break
			sleep 0.1
		done
		bpftool "$kind" show id "${id#*:}" >/dev/null 2>&1 && left="$left $id"
	done
	echo "$left"
}

# wait_gone PID SECONDS: true once PID has exited, false if it still runs after SECONDS
wait_gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# --- the target execs a program with no CUDA in it ---
dir="$SCRATCH/exec"
mkdir -p "$dir"
CALLER_EXEC="exec /bin/sleep 1" "$LOOKALIKE/caller" 20 2 "$dir/go" "$dir/truth" \
	>"$dir/caller.out" &
caller=$!
wait_ready "$dir/caller.out"
"$SPECPROBE" record -o "$dir/rec.sprb" -p $caller 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/rec.sprb"
ids=$(bpf_ids $rec)
touch "$dir/go"
wait $caller
status=$?
wait_gone $rec 30 && wait $rec
rstatus=$?
"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
left=$(bpf_left "$ids")
if [ $status = 0 ] && [ $rstatus = 0 ] && grep -q "pid $caller ran execve" "$dir/rec.err" &&
	grep -q "execve by traced processes" "$dir/dump.err" && [ -n "$ids" ] && [ -z "$left" ] &&
	python3 "$TOP/tests/integration/check_capture.py" --truth "$dir/truth" \
		--calls "$dir/calls.jsonl" --dump-stderr "$dir/dump.err" --threads 2 \
		--iterations 20 >"$dir/check.out"; then
	pass "exec into sleep: every call before it kept exactly, record and dump say so, the tracer ends when sleep does, its $(echo $ids | wc -w) BPF objects gone"
else
	fail "exec: status $status/$rstatus, left '$left', $(cat "$dir/rec.err" "$dir/dump.err" "$dir/check.out" | tail -4)"
fi

# --- the target exits and a new, untraced process gets its pid ---
dir="$SCRATCH/pid-reuse"
start_server "$dir/a" --cycles 20 && old=$target && old_server=$server_pid
sleep 600 &
keeper=$!	# keeps the recording going after the first target is gone
"$SPECPROBE" record -o "$dir/rec.sprb" -p "$old,$keeper" 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/rec.sprb"
touch "$dir/a/go"
wait $old_server
mkdir -p "$dir/b"
new=0
for ((try = 0; try < 50 && new != old; try++)); do	# other forks on the machine may come first
	[ "$new" != 0 ] && kill $new && wait $new 2>/dev/null
	echo $((old - 1)) 2>/dev/null >/proc/sys/kernel/ns_last_pid || break
	"$SERVER" -q --ground-truth "$dir/b/gt" --ready-file "$dir/b/ready" --go-file "$dir/b/go" \
		--cycles 3000 >"$dir/b/server.out" 2>&1 &
	new=$!
done
[ "$new" != 0 ] && wait_file "$dir/b/ready"
touch "$dir/b/go"
sleep 1
kill $keeper	# the last target is gone: the recording ends, though pid $old runs on
wait_gone $rec 30 && wait $rec
rstatus=$?
new_running=$([ "$new" != 0 ] && kill -0 $new 2>/dev/null && echo yes)
[ "$new" != 0 ] && wait $new
new_status=$?
cp "$dir/a/gt"* "$dir/"
new_calls=$(grep -c '"before"' "$dir/b/gt"* 2>/dev/null)
if [ "$new" != "$old" ]; then
	echo "  skip  pid reuse: pid $old was not given again (50 tries, or ns_last_pid not writable)"
elif [ $new_status = 0 ] && [ $rstatus = 0 ] && [ "$new_running" = yes ] &&
	[ "$new_calls" -gt 0 ] && against_truth "$dir"; then
	pass "pid reuse: pid $old's second process not recorded (its $new_calls calls, the first second of them while the tracer ran), the recording ends while it runs, the first one's exact: $(tail -1 "$dir/truth.out")"
else
	fail "pid reuse: status $new_status/$rstatus, still running '$new_running', $(tail -1 "$dir/rec.err") $(tail -3 "$dir/truth.out")"
fi

# --- tracers on one process: each exact, one of them leaving early disturbs nothing ---
dir="$SCRATCH/tracers"
start_server "$dir" --cycles 1500
for t in early whole again; do	# "early" is stopped mid-run, the other two see it all
	mkdir -p "$dir/$t"
	"$SPECPROBE" record -o "$dir/$t/rec.sprb" -p "$target" 2>"$dir/$t/rec.err" &
	eval "$t=$!"
	wait_file "$dir/$t/rec.sprb"
done
early_ids=$(bpf_ids $early)
touch "$dir/go"
sleep 1
kill -INT $early
wait_gone $early 30 && wait $early
early_status=$?
early_left=$(bpf_left "$early_ids")
others_on=$(kill -0 $whole 2>/dev/null && kill -0 $again 2>/dev/null && echo yes)
wait $server_pid
status=$?
wait_gone $whole 30 && wait $whole && wait_gone $again 30 && wait $again
others_status=$?
cp "$dir"/gt* "$dir/whole/" && cp "$dir"/gt* "$dir/again/"
"$SPECPROBE" dump --json "$dir/early/rec.sprb" >"$dir/early/calls.jsonl" 2>"$dir/early/dump.err"
if [ $status = 0 ] && [ $early_status = 0 ] && [ $others_status = 0 ] &&
	[ "$others_on" = yes ] && [ -n "$early_ids" ] && [ -z "$early_left" ] &&
	against_truth "$dir/whole" && against_truth "$dir/again" &&
	! grep -q "another specprobe" "$dir/early/rec.err" &&
	grep -q "pid $target is traced by another specprobe as well" "$dir/whole/rec.err" &&
	grep -q "pid $target is traced by another specprobe as well" "$dir/again/rec.err" &&
	[ ! -e /run/specprobe/pid.$target ] &&
	! grep -q "did not end\|corrupt" "$dir/early/dump.err" &&
	$CHECK --calls "$dir/early/calls.jsonl" --min-calls 100 >"$dir/early/check.out"; then
	pass "three tracers on one pid: the later two say they share it; the one stopped mid-run ends cleanly ($(tail -1 "$dir/early/check.out" | sed 's/^ *//')), its BPF objects gone; the other two go on, both exact: $(tail -1 "$dir/whole/truth.out"); $(tail -1 "$dir/again/truth.out")"
else
	fail "tracers on one pid: status $status/$early_status/$others_status, others on '$others_on', left '$early_left', $(cat "$dir"/*/rec.err "$dir"/*/truth.out "$dir/early/check.out" 2>/dev/null | tail -5)"
fi

# --- one rank of three SIGKILLed: the others are traced on, the dead one's calls are kept ---
dir="$SCRATCH/rank-kill"
SPECSIM_NCCL_TIMEOUT_MS=300 start_server "$dir" --wait-at init --ranks 3 --cycles 100000
"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/rec.sprb"
touch "$dir/go"
sleep 2
victim=$(sed -n 3p "$dir/ready")
kill -KILL "$victim"
sleep 2	# the others wait out the dead rank in each collective, or stay stuck in one
on=$(kill -0 $rec 2>/dev/null && echo yes)
kill -INT $rec
wait_gone $rec 30 && wait $rec
rstatus=$?
{ kill -KILL $(sed -n '2,$p' "$dir/ready") $server_pid; wait $server_pid; } 2>/dev/null
"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"
"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
verdict=$(python3 - "$dir/report.json" "$dir/calls.jsonl" "$victim" <<'EOF'
import json, sys
rep = json.load(open(sys.argv[1]))
victim = int(sys.argv[3])
procs = {p["pid"]: p for p in rep["processes"] if p["calls"]}
dead = procs.get(victim)
others = [p for pid, p in procs.items() if pid != victim]
if not dead or dead["exit_ns"] is None or len(others) != 2:
    print(f"FAIL: the killed rank {victim} not shown as exited: {procs}")
    sys.exit(1)
calls = [json.loads(line) for line in open(sys.argv[2])]
# after the kill each other rank makes calls, or is seen stuck in one (entered, not returned)
late = {p["pid"]: sum(1 for c in calls if c["pid"] == p["pid"] and
                      (c["ts_entry"] > dead["exit_ns"] or c["unreturned"])) for p in others}
if any(p["exit_ns"] is not None for p in others) or min(late.values()) == 0:
    print(f"FAIL: the other ranks not traced after the kill: {late}")
    sys.exit(1)
print(f"rank {dead['rank']} exited after {dead['calls']} calls, its last "
      f"{(dead['exit_ns'] - dead['last_ns']) / 1e6:.1f} ms before its exit; the others, "
      f"still running, traced after it ({min(late.values())}+ calls made or stuck in)")
EOF
)
if [ $rstatus = 0 ] && [ "$on" = yes ] && [ -n "$victim" ] &&
	! grep -q "did not end" "$dir/dump.err" &&
	$CHECK --calls "$dir/calls.jsonl" --pids 3 >"$dir/check.out" &&
	[[ "$verdict" != FAIL* ]] && [ -n "$verdict" ]; then
	pass "a rank SIGKILLed: $verdict; no gap: $(tail -1 "$dir/check.out" | sed 's/^ *//')"
else
	fail "a rank SIGKILLed: record $rstatus, running '$on', $verdict $(cat "$dir/check.out" "$dir/report.err" | tail -3)"
fi
finish
