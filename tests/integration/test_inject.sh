#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# --gpu -p (docs/gpu-timeline.md, "Into a running process"): the activity agent brought
# into the running simulated server with ptrace. GPU figures from the injection on equal
# the truth, no call is lost; 200 injections in a row into a server making about 100 k
# calls/s; the target exiting mid-injection; specprobe killed mid-injection and after it;
# two tracers at once; a later attach waking the agent already loaded; each refusal one
# line, the trace host-only and the target unharmed.
source "$(dirname "$0")/lib.sh"
CHECK_GPU=$TOP/tests/integration/check_gpu.py

if [ ! -e "$TOP/.output/specsim/libcupti.so" ]; then
	echo "test_inject: specsim has no look-alike libcupti"
	finish
	exit
fi
FAST="--draft-us 1 --verify-us 1 --extend-us 1 --accept-us 1 --host-us 0"
FOREVER="--cycles 100000000"

gpu_lines() { grep -c "GPU agent \(in\|woken\) after a" "$1"; }
alive() { kill -0 "$1" 2>/dev/null; }
maps_has() { grep -q "$2" "/proc/$1/maps" 2>/dev/null; }
stop_server() { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }
ROUNDS=${INJECT_ROUNDS:-200}
# still_calling PID: the process makes CUDA calls (a short trace of it holds some)
still_calling() {
	"$SPECPROBE" record -p "$1" -o "$SCRATCH/still.sprb" -f --duration 300ms 2>/dev/null &&
		[ "$("$SPECPROBE" dump -c "$SCRATCH/still.sprb" 2>&1 |
			sed -n 's/^specprobe: \([0-9]*\) calls.*/\1/p')" -gt 0 ]
}

# wait_line FILE TEXT: up to 60 s for a line in a file being written
wait_line() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# (1) injected while the loop runs: every GPU figure from then on equals the truth, and
# the recording holds every call since the attach
dir=$SCRATCH/exact
start_server "$dir" --cycles 1500 --gpu-truth || fail "exact: no server"
touch "$dir/go"
sleep 0.3
"$SPECPROBE" record --gpu -p "$target" -o "$dir/rec.sprb" --ring-mb 256 2>"$dir/rec.err"
wait "$server_pid"
rc=$?
"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
with=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(sum(1 for c in d["cycles"] if c["gpu"]), len(d["cycles"]))' "$dir/report.json" 2>/dev/null)
set -- $with
if [ $rc -eq 0 ] && [ "$(gpu_lines "$dir/rec.err")" -eq 1 ] && [ "${1:-0}" -gt 0 ] &&
	[ $(( ${1:-0} * 2 )) -ge "${2:-1}" ] &&
	python3 "$CHECK_GPU" --allow-null "$dir"/gt.rank* "$dir/report.json" >"$dir/check.out" 2>&1
then
	pass "exact: $(grep -o 'GPU agent in after a [0-9.]* ms stop' "$dir/rec.err"); ${1} of ${2} cycles with GPU figures, all equal the truth ($(tail -1 "$dir/check.out" | sed 's/^ *//'))"
else
	head -5 "$dir/check.out" 2>/dev/null
	fail "exact: server rc $rc, $(grep -v libbpf "$dir/rec.err" | tail -2 | tr '\n' ' '), cycles $with"
	trap - EXIT
fi
"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
"$SPECPROBE" dump -H "$dir/rec.sprb" 2>/dev/null | grep '^#' >"$dir/header.txt"
if python3 "$TOP/tests/integration/check_truth.py" --calls "$dir/calls.jsonl" \
	--header "$dir/header.txt" --dump-stderr "$dir/dump.err" --returns pinned-quiet \
	"$dir"/gt.rank* >"$dir/truth.out" 2>&1; then
	pass "exact: every call since the attach is in the recording$(sed -n 's/.*mismatches;/;/p' \
		"$dir/truth.out")"
else
	tail -3 "$dir/truth.out"
	fail "exact: the recording differs from the server's calls ($dir)"
fi

# (2) 200 injections in a row into a server making about 100 k calls/s: each one in and
# out, nothing dropped, the server unharmed
# (no ground truth: at this call rate it would fill the memory of a long run)
dir=$SCRATCH/many
mkdir -p "$dir"
"$SERVER" -q --ready-file "$dir/ready" --go-file "$dir/go" $FOREVER $FAST >"$dir/server.out" 2>&1 &
server_pid=$!
wait_file "$dir/ready" && sleep 0.1
target=$(head -1 "$dir/ready")
touch "$dir/go"
# a 50 ms trace may end before a busy machine lets the agent in: such a trace is
# counted apart, and tracing goes on until ROUNDS injections or twice as many traces
ok=0 drops=0 missed=0 failed=0
for i in $(seq 1 $((2 * ROUNDS))); do
	[ $ok -lt "$ROUNDS" ] || break
	"$SPECPROBE" record --gpu -p "$target" -o "$dir/r.sprb" -f --duration 50ms \
		2>"$dir/rec.err" || { failed=$((failed + 1)); break; }
	alive "$target" || break
	grep -q ' 0 dropped' "$dir/rec.err" || drops=$((drops + 1))
	if [ "$(gpu_lines "$dir/rec.err")" -eq 1 ]; then
		ok=$((ok + 1))
	else
		missed=$((missed + 1))
	fi
done
calls=$("$SPECPROBE" dump -c "$dir/r.sprb" 2>&1 | sed -n 's/^specprobe: \([0-9]*\) calls.*/\1/p')
if [ $ok -eq "$ROUNDS" ] && [ $drops -eq 0 ] && [ $failed -eq 0 ] && alive "$target"; then
	pass "many: $ROUNDS injections in a row ($missed traces ended before the agent was in), none dropped a record, the server runs on ($calls calls in the last 50 ms)"
else
	fail "many: $ok of $ROUNDS went well, $missed missed, $failed failed, $drops dropped, $(grep -v libbpf "$dir/rec.err" | tail -1)"
fi
stop_server

# (3) specprobe killed while the thread is stopped mid-injection: the thread returns
# through its frame, the server runs on; the agent stays loaded, attached to nothing
dir=$SCRATCH/killed-mid
start_server "$dir" $FOREVER || fail "killed-mid: no server"
touch "$dir/go"
SPECPROBE_TEST_INJECT_PAUSE_MS=3000 "$SPECPROBE" record --gpu -p "$target" \
	-o "$dir/rec.sprb" 2>"$dir/rec.err" &
rec=$!
if wait_line "$dir/rec.err" "injection paused"; then
	kill -KILL $rec
	wait $rec 2>/dev/null
	sleep 1
	if alive "$target" && still_calling "$target" &&
		maps_has "$target" "memfd:specprobe-gpu-agent" &&
		! maps_has "$target" "memfd:specprobe-gpu-ring"; then
		pass "killed mid-injection: the server runs on, the agent loaded and idle"
	else
		fail "killed mid-injection: server alive $(alive "$target" && echo yes || echo no)"
	fi
else
	kill $rec 2>/dev/null
	fail "killed mid-injection: never paused: $(grep -v libbpf "$dir/rec.err" | tail -1)"
fi

# (4) a later attach wakes the agent already there; killed after it, the agent goes
# quiet within its heartbeat bound (2 s)
"$SPECPROBE" record --gpu -p "$target" -o "$dir/rec2.sprb" 2>"$dir/rec2.err" &
rec=$!
if wait_line "$dir/rec2.err" "GPU agent woken after a" && sleep 0.5 &&
	maps_has "$target" "memfd:specprobe-gpu-ring"; then
	kill -KILL $rec
	wait $rec 2>/dev/null
	quiet=
	for i in $(seq 1 50); do
		maps_has "$target" "memfd:specprobe-gpu-ring" || { quiet=$i; break; }
		sleep 0.1
	done
	if [ -n "$quiet" ] && [ "$quiet" -le 40 ] && alive "$target"; then
		pass "woken by a later attach; killed after it: the agent let its ring go $((quiet * 100)) ms later, the server runs on"
	else
		fail "killed after injection: ring still mapped after 5 s or server gone"
	fi
else
	kill $rec 2>/dev/null
	fail "a later attach did not wake the agent: $(grep -v libbpf "$dir/rec2.err" | tail -1)"
fi

# (5) two tracers at once: one gets the agent, the other one line and a host-only trace
"$SPECPROBE" record --gpu -p "$target" -o "$dir/a.sprb" --duration 3 2>"$dir/a.err" &
rec=$!
wait_line "$dir/a.err" "GPU agent"
"$SPECPROBE" record --gpu -p "$target" -o "$dir/b.sprb" --duration 1 2>"$dir/b.err"
rc_b=$?
wait $rec
rc_a=$?
if [ $rc_a -eq 0 ] && [ $rc_b -eq 0 ] && [ "$(gpu_lines "$dir/a.err")" -eq 1 ] &&
	[ "$(grep -c 'serves another specprobe' "$dir/b.err")" -eq 1 ] && alive "$target"; then
	pass "two tracers at once: the first has the agent, the second one line and host-only"
else
	fail "two tracers: rc $rc_a/$rc_b, $(grep -v libbpf "$dir/b.err" | tail -1)"
fi
stop_server

# (6) the target exits while its thread is stopped mid-injection: one line, no crash
dir=$SCRATCH/exits-mid
start_server "$dir" $FOREVER || fail "exits-mid: no server"
touch "$dir/go"
SPECPROBE_TEST_INJECT_PAUSE_MS=2000 "$SPECPROBE" record --gpu -p "$target" \
	-o "$dir/rec.sprb" 2>"$dir/rec.err" &
rec=$!
wait_line "$dir/rec.err" "injection paused"
{ kill -KILL "$target"; wait $rec; rc=$?; wait "$server_pid"; } 2>/dev/null
if [ $rc -lt 128 ] && "$SPECPROBE" report "$dir/rec.sprb" >/dev/null 2>&1 &&
	! alive "$target"; then
	pass "target exits mid-injection: specprobe ends (exit $rc), its recording reads"
else
	fail "target exits mid-injection: exit $rc"
fi

# refusal NAME TEXT ENV [RECORD OPTIONS]: one line, host-only cycles, the server unharmed
refusal() {
	local name=$1 text=$2 envs=$3 dir=$SCRATCH/$1
	shift 3
	mkdir -p "$dir"
	env $envs "$SERVER" -q --ground-truth "$dir/gt" --ready-file "$dir/ready" \
		--go-file "$dir/go" --cycles 400 >"$dir/server.out" 2>&1 &
	server_pid=$!
	wait_file "$dir/ready"
	target=$(head -1 "$dir/ready")
	[ -n "${HOLDER:-}" ] && { $HOLDER "$target" & holder=$!; sleep 0.5; }
	"$SPECPROBE" record --gpu -p "$target" -o "$dir/rec.sprb" "$@" 2>"$dir/rec.err" &
	local rec=$!
	wait_file "$dir/rec.sprb"
	sleep 0.5
	touch "$dir/go"
	wait "$server_pid"
	local src=$?
	wait $rec
	local rc=$?
	[ -n "${HOLDER:-}" ] && kill $holder 2>/dev/null
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
	local cycles=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(len(d["cycles"]) if all(c["gpu"] is None for c in d["cycles"]) else -1)' \
		"$dir/report.json" 2>/dev/null)
	if [ $rc -eq 0 ] && [ $src -eq 0 ] && [ "$(grep -c "$text" "$dir/rec.err")" -eq 1 ] &&
		[ "${cycles:-0}" -gt 0 ]; then
		pass "$name: one line ($(grep "$text" "$dir/rec.err" | cut -c1-90)...), $cycles host-only cycles, the server ran to its end"
	else
		fail "$name: record $rc, server $src, cycles ${cycles:-none}: $(grep -v libbpf \
			"$dir/rec.err" | tail -1)"
		trap - EXIT
	fi
}
# another tracer holds the process (as strace or gdb would)
hold() {
	exec python3 -c '
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(0x4206, int(sys.argv[1]), 0, 0):    # PTRACE_SEIZE
    sys.exit("seize failed")
time.sleep(60)' "$1"
}
HOLDER=hold refusal another-tracer "another tracer (pid [0-9]*) is attached" ""
refusal cupti-in-use "another CUPTI client" SPECSIM_CUPTI=busy
refusal not-cupti "no cuptiGetVersion" "" --cupti /usr/lib/x86_64-linux-gnu/libz.so.1

# (7) a server in a mount namespace of its own, its /dev/shm private: the agent comes from
# a memfd and the ring is read through /proc, so nothing depends on shared paths
dir=$SCRATCH/mntns
mkdir -p "$dir"
if unshare -m true 2>/dev/null; then
	unshare -m sh -c 'mount -t tmpfs tmpfs /dev/shm && exec "$0" "$@"' "$SERVER" -q \
		--ground-truth "$dir/gt" --ready-file "$dir/ready" --go-file "$dir/go" \
		--cycles 600 --gpu-truth >"$dir/server.out" 2>&1 &
	server_pid=$!
	wait_file "$dir/ready"
	target=$(head -1 "$dir/ready")
	"$SPECPROBE" record --gpu -p "$target" -o "$dir/rec.sprb" 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb"
	sleep 0.5
	touch "$dir/go"
	wait "$server_pid"
	rc=$?
	wait $rec
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
	if [ $rc -eq 0 ] && [ "$(gpu_lines "$dir/rec.err")" -eq 1 ] &&
		python3 "$CHECK_GPU" --allow-null "$dir"/gt.rank* "$dir/report.json" \
		>"$dir/check.out" 2>&1 && grep -q '"matched":[1-9]' "$dir/report.json"; then
		pass "own mount namespace, private /dev/shm: agent in, GPU figures equal the truth"
	else
		fail "own mount namespace: rc $rc, $(grep -v libbpf "$dir/rec.err" | tail -1)"
		trap - EXIT
	fi
else
	echo "  (no mount namespaces here: the namespace case is skipped)"
fi

# (8) a server with more objects loaded than the loader hook looks at by name (as PyTorch):
# the agent's own dlopen is the first load walked since the attach, and stops nobody but
# the thread the agent goes in by
dir=$SCRATCH/objects
mkdir -p "$dir/libs"
for i in $(seq 80); do
	echo "int filler$i(void) { return $i; }" | cc -shared -fPIC -x c - -o "$dir/libs/libfiller$i.so"
done
LD_PRELOAD=$(ls "$dir"/libs/*.so | paste -sd:) start_server "$dir" $FOREVER ||
	fail "objects: no server"
touch "$dir/go"
objects=$(awk '$6 ~ /\.so/ {print $6}' "/proc/$target/maps" | sort -u | wc -l)
"$SPECPROBE" record -v --gpu -p "$target" -o "$dir/rec.sprb" --duration 1 2>"$dir/rec.err"
rc=$?
stops=$(grep -c 'continued .* after its stop' "$dir/rec.err")
if [ $rc -eq 0 ] && [ "$(gpu_lines "$dir/rec.err")" -eq 1 ] && [ "$stops" -eq 0 ] &&
	alive "$target"; then
	pass "objects: $objects shared objects loaded, the agent's dlopen stopped no process ($(grep -o 'GPU agent in after a [0-9.]* ms stop of thread [0-9]*' "$dir/rec.err"))"
else
	fail "objects: record $rc, $stops process stops, $(grep -v libbpf "$dir/rec.err" | grep -v '^specprobe: debug' | tail -1)"
fi
stop_server
finish
