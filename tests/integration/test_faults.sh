#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Faults: signals to the tracer, the target killed or exec'ing, a rank gone, a full disk,
# a full ring, pid reuse, two tracers; and what a recording may show others.
source "$(dirname "$0")/lib.sh"
CHECK="python3 $TOP/tests/integration/check_faults.py"
TRUTH="python3 $TOP/tests/integration/check_truth.py"

# against_truth DIR: the recording holds exactly the calls the server made
against_truth() {
	"$SPECPROBE" dump --json "$1/rec.sprb" >"$1/calls.jsonl" 2>"$1/dump.err"
	"$SPECPROBE" dump -H "$1/rec.sprb" 2>/dev/null | grep '^#' >"$1/header.txt"
	$TRUTH --calls "$1/calls.jsonl" --header "$1/header.txt" --dump-stderr "$1/dump.err" \
		"$1"/gt* >"$1/truth.out" && ! grep -q "did not end cleanly" "$1/dump.err"
}

# no_gap DIR [ARGS]: the file reads (a cut is fine) and no thread misses a call
no_gap() {
	local dir=$1
	shift
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
	! grep -q "not a specprobe\|corrupt" "$dir/dump.err" &&
		$CHECK --calls "$dir/calls.jsonl" "$@" >"$dir/check.out"
}

# The tracer told to stop by SIGNAL after the server is done: every call is in the file.
signal_stop() {
	local sig=$1 dir="$SCRATCH/sig-$1" rec sleeper
	start_server "$dir" --cycles 30 || { fail "SIG$sig: server"; return; }
	sleep 600 &
	sleeper=$!
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target,$sleeper" 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	wait $server_pid
	local status=$?
	kill "-$sig" $rec
	if wait $rec && [ $status = 0 ] && against_truth "$dir"; then
		pass "SIG$sig ends the recording cleanly, nothing lost: $(tail -1 "$dir/truth.out")"
	else
		fail "SIG$sig: $(tail -1 "$dir/rec.err") $(cat "$dir/truth.out")"
	fi
	kill $sleeper
}
signal_stop INT
signal_stop TERM
signal_stop HUP

# SIGKILL to the tracer: the server runs on unharmed, the kernel holds none of its BPF objects
dir="$SCRATCH/tracer-kill"
start_server "$dir" --cycles 1500
"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/rec.sprb"
touch "$dir/go"
sleep 1
ids=$(cat /proc/$rec/fdinfo/* 2>/dev/null | awk '/^(prog|link)_id:/ { print $1 $2 }' | sort -u)
kill -KILL $rec
wait $rec 2>/dev/null
wait $server_pid
status=$?
left=""
for id in $ids; do
	kind=${id%%_id:*}
	for ((i = 0; i < 100; i++)); do	# the kernel frees them after the last fd closes
		bpftool "$kind" show id "${id#*:}" >/dev/null 2>&1 || break
		sleep 0.1
	done
	bpftool "$kind" show id "${id#*:}" >/dev/null 2>&1 && left="$left $id"
done
cycles=$(grep -c '"name":"cuGraphLaunch".*"phase":"verify"' "$dir"/gt* 2>/dev/null)
if [ $status = 0 ] && [ "$cycles" = 1500 ] && [ -n "$ids" ] && [ -z "$left" ] &&
	no_gap "$dir"; then
	pass "SIGKILL to the tracer: server exit 0 with 1500 cycles, $(echo $ids | wc -w) BPF objects all gone, the file reads: $(tail -1 "$dir/check.out")"
else
	fail "SIGKILL to the tracer: status $status, $cycles cycles, ids '$ids' left '$left', $(cat "$dir/dump.err" "$dir/check.out" 2>/dev/null | tail -2)"
fi

# the target SIGKILLed mid-trace: the recording ends by itself, cleanly, with no gap
dir="$SCRATCH/target-kill"
start_server "$dir" --cycles 5000
"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/rec.sprb"
touch "$dir/go"
sleep 1
kill -KILL $server_pid
if wait $rec && no_gap "$dir" --min-calls 100 && ! grep -q "did not end" "$dir/dump.err"; then
	pass "target SIGKILLed: the recording ends cleanly: $(tail -1 "$dir/check.out")"
else
	fail "target SIGKILLed: $(tail -1 "$dir/rec.err") $(cat "$dir/dump.err" "$dir/check.out")"
fi

# one traced process exits while another runs on: both are recorded whole
dir="$SCRATCH/one-exits"
start_server "$dir/short" --cycles 20 && short=$target && short_pid=$server_pid
start_server "$dir/long" --cycles 400 && long=$target && long_pid=$server_pid
"$SPECPROBE" record -o "$dir/rec.sprb" -p "$short,$long" 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/rec.sprb"
touch "$dir/short/go" "$dir/long/go"
wait $short_pid
s1=$?
wait $long_pid
s2=$?
cat "$dir/short/gt"* "$dir/long/gt"* >"$dir/gt.all"
if wait $rec && [ $s1 = 0 ] && [ $s2 = 0 ] && against_truth "$dir"; then
	pass "one process exits, the other runs on: $(tail -1 "$dir/truth.out")"
else
	fail "one process exits: $(tail -1 "$dir/rec.err") $(cat "$dir/truth.out")"
fi

# the ring overflows while the tracer is stopped: every call is kept or counted dropped
dir="$SCRATCH/ring-full"
start_server "$dir" --cycles 3000
"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --ring-mb 1 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/rec.sprb"
kill -STOP $rec
touch "$dir/go"
wait $server_pid
kill -CONT $rec
if wait $rec && grep -q "ring buffer full" "$dir/rec.err" &&
	"$SPECPROBE" dump -H "$dir/rec.sprb" 2>/dev/null | grep '^#' >"$dir/header.txt" &&
	no_gap "$dir" --drops-from "$dir/dump.err" --header "$dir/header.txt" "$dir"/gt*; then
	pass "ring full: $(grep -o '[0-9]* dropped.*' "$dir/rec.err"); $(head -1 "$dir/check.out")"
else
	fail "ring full: $(tail -1 "$dir/rec.err") $(cat "$dir/check.out")"
fi

# a full disk: one line says what is kept and what is lost; the kept part reads, no gap
dir="$SCRATCH/disk-full"
mkdir -p "$dir/fs"
if mount -t tmpfs -o size=2m tmpfs "$dir/fs" 2>/dev/null; then
	start_server "$dir" --cycles 3000
	"$SPECPROBE" record -o "$dir/fs/rec.sprb" -p "$target" 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/fs/rec.sprb"
	touch "$dir/go"
	wait $server_pid
	wait $rec
	status=$?
	cp "$dir/fs/rec.sprb" "$dir/rec.sprb"
	umount "$dir/fs"
	kept=$(sed -n 's/.*: \([0-9]*\) records kept, [0-9]* lost.*/\1/p' "$dir/rec.err")
	"$SPECPROBE" dump "$dir/rec.sprb" 2>&1 >/dev/null | grep -c . >/dev/null
	if [ $status = 1 ] && [ "$(grep -c 'error:' "$dir/rec.err")" = 1 ] && [ -n "$kept" ] &&
		grep -q "No space left on device" "$dir/rec.err" && no_gap "$dir" --min-calls 100; then
		pass "full disk: '$(grep -o 'No space.*' "$dir/rec.err")'; $(tail -1 "$dir/check.out")"
	else
		fail "full disk: status $status, $(cat "$dir/rec.err" | tail -2) $(cat "$dir/check.out")"
	fi
else
	echo "  skip  full disk: cannot mount a small tmpfs here"
fi
# --- what a recording may show others ---
dir="$SCRATCH/mode"
mkdir -p "$dir" && chmod 0755 "$dir"
touch "$dir/go"
run_caller() {	# run_caller OUT [RECORD ARGS]: record the look-alike caller started under trace
	local out=$1
	shift
	(umask 022; "$SPECPROBE" record -o "$out" "$@" -- "$LOOKALIKE/caller" 2 1 "$dir/go" \
		"$dir/truth" >/dev/null 2>>"$dir/rec.err")
}
run_caller "$dir/default.sprb"
run_caller "$dir/shared.sprb" --mode 0644
(umask 077; "$SPECPROBE" record -o "$dir/x.sprb" --mode 9 -- true 2>"$dir/bad-mode.err")
if [ "$(stat -c %a "$dir/default.sprb")" = 600 ] && [ "$(stat -c %a "$dir/shared.sprb")" = 644 ] &&
	grep -q "octal" "$dir/bad-mode.err"; then
	pass "recordings are 0600 under umask 022; --mode 0644 gives 0644; --mode 9 refused"
else
	fail "modes: $(stat -c '%n %a' "$dir"/*.sprb | tr '\n' ' ') $(cat "$dir/bad-mode.err")"
fi

# in a folder anyone can write, --force replaces a planted hard link, never writes into it
mkdir -p "$dir/tmp" && chmod 1777 "$dir/tmp"
echo "precious" >"$dir/precious"
ln "$dir/precious" "$dir/tmp/planted.sprb"
run_caller "$dir/tmp/planted.sprb" --force
if [ "$(cat "$dir/precious")" = precious ] && "$SPECPROBE" dump "$dir/tmp/planted.sprb" \
	>/dev/null 2>&1; then
	pass "shared folder: --force over a hard link leaves its other name untouched"
else
	fail "shared folder: precious is now '$(head -c 20 "$dir/precious")'"
fi

# -u: the command keeps no uid, gid, group, capability or descriptor of the tracer
probe="grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapAmb):' /proc/self/status >$dir/status;
	ls -l /proc/self/fd/ >$dir/fds; exec $LOOKALIKE/caller 2 1 $dir/go $dir/truth"
chmod 0755 "$SCRATCH" && chmod 0777 "$dir"	# nobody writes its findings here
setpriv --groups 4,27 "$SPECPROBE" record -o "$dir/user.sprb" -u nobody -- sh -c "$probe" \
	>/dev/null 2>"$dir/user.err"
nobody_gid=$(id -g nobody)
want="Uid:	65534	65534	65534	65534
Gid:	$nobody_gid	$nobody_gid	$nobody_gid	$nobody_gid
Groups:	$(id -G nobody)
CapInh:	0000000000000000
CapPrm:	0000000000000000
CapEff:	0000000000000000
CapAmb:	0000000000000000"
if [ "$(sed 's/ *$//' "$dir/status")" = "$want" ] &&
	! grep -q "bpf\|perf_event\|\.sprb" "$dir/fds"; then
	pass "-u nobody: all uids and gids nobody's, its groups only (not root's 4,27), no capability, no BPF or recording descriptor"
else
	fail "-u: $(cat "$dir/status" "$dir/fds" "$dir/user.err" | tr '\n' ' ')"
fi

# a pid the tracer cannot see (outside its pid namespace): one line, non-zero exit
sleep 60 &
hidden=$!
if unshare -p -f --mount-proc "$SPECPROBE" record -o "$dir/hidden.sprb" -p $hidden \
	>/dev/null 2>"$dir/hidden.err"; then
	fail "invisible pid: exited 0"
elif [ "$(wc -l <"$dir/hidden.err")" = 1 ] && grep -q "no process with pid $hidden" "$dir/hidden.err"; then
	pass "invisible pid: $(cat "$dir/hidden.err")"
else
	fail "invisible pid: $(cat "$dir/hidden.err")"
fi
kill $hidden
finish
