#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Trace the look-alike caller by -p and compare the recording with its ground truth.
source "$(dirname "$0")/lib.sh"

ITERATIONS=${ITERATIONS:-500}
THREADS=${THREADS:-3}

# Every exported entry point of the look-alikes starts with push %rbp; mov %rsp,%rbp.
check_prologues() {
	local lib bad=0 name b1 b2 b3 b4
	for lib in "$LOOKALIKE/libcuda.so.1" "$LOOKALIKE/libnccl.so.2"; do
		while read -r name b1 b2 b3 b4; do
			nm -D --defined-only "$lib" | grep -q " T ${name}\$" || continue
			if [ "$b1 $b2 $b3 $b4" != "55 48 89 e5" ]; then
				echo "    $name starts with $b1 $b2 $b3 $b4"
				bad=1
			fi
		done < <(objdump -d "$lib" | awk '
			/^[0-9a-f]+ <.*>:$/ { name = substr($2, 2, length($2) - 3); need = 1; bytes = ""; next }
			need && /^ *[0-9a-f]+:\t/ { split($0, a, "\t"); bytes = bytes " " a[2]
				if (split(bytes, b, " ") >= 4) { print name, b[1], b[2], b[3], b[4]; need = 0 } }')
	done
	return $bad
}

# run_traced NAME [PREFIX [FORKS]]: one traced run of the caller, checked against truth.
# PREFIX runs before specprobe in its shell; FORKS child processes are forked after attach.
run_traced() {
	local name=$1 dir="$SCRATCH/$1" prefix=${2:-} forks=${3:-0} caller_pid rec_pid
	mkdir -p "$dir"
	"$LOOKALIKE/caller" "$ITERATIONS" "$THREADS" "$dir/go" "$dir/truth" "$forks" >"$dir/caller.out" &
	caller_pid=$!
	wait_ready "$dir/caller.out"
	bash -c "$prefix \"$SPECPROBE\" record -o \"$dir/rec.sprb\" -p $caller_pid" 2>"$dir/record.err" &
	rec_pid=$!
	if ! wait_file "$dir/rec.sprb" 600; then
		fail "$name: recording never started: $(tail -1 "$dir/record.err")"
		kill $caller_pid $rec_pid 2>/dev/null
		return
	fi
	touch "$dir/go"
	wait $caller_pid
	if ! wait $rec_pid; then
		fail "$name: record failed: $(tail -1 "$dir/record.err")"
		return
	fi
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
	cat "$dir"/truth* >"$dir/truth.jsonl"
	if python3 "$TOP/tests/integration/check_capture.py" --truth "$dir/truth.jsonl" \
		--calls "$dir/calls.jsonl" --dump-stderr "$dir/dump.err" \
		--threads $((THREADS + forks)) --iterations "$ITERATIONS"; then
		pass "$name: exact counts, arguments, nesting, unreturned call, failed read, zero drops"
	else
		fail "$name: recording differs from ground truth ($dir)"
		trap - EXIT
	fi
}

if check_prologues; then pass "look-alike entry points start with 55 48 89 e5"; else fail "prologues"; fi
run_traced attach-by-pid
run_traced ulimit-1024 "ulimit -n 1024; SPECPROBE_SINGLE_PROBES=1"
run_traced multi-ulimit-1024 "ulimit -n 1024;"
run_traced forked-children "" 2

# a recording cut short reads up to its last whole record and says where it was cut
rec="$SCRATCH/attach-by-pid/rec.sprb"
if [ -f "$rec" ]; then
	size=$(stat -c %s "$rec")
	head -c $((size - 37)) "$rec" >"$SCRATCH/cut.sprb"
	if ! "$SPECPROBE" dump --json "$SCRATCH/cut.sprb" >"$SCRATCH/cut.jsonl" 2>"$SCRATCH/cut.err"
	then
		fail "truncated recording: dump exited non-zero: $(head -1 "$SCRATCH/cut.err")"
	elif grep -q "warning: .*truncated at byte" "$SCRATCH/cut.err" && [ -s "$SCRATCH/cut.jsonl" ]
	then
		pass "truncated recording: calls before the cut, '$(grep -o 'truncated at byte [0-9]*' "$SCRATCH/cut.err")'"
	else
		fail "truncated recording: $(head -1 "$SCRATCH/cut.err")"
	fi
fi

# bad input: one clear line, non-zero exit
expect_error() {
	local what=$1 pattern=$2
	shift 2
	if "$@" >/dev/null 2>"$SCRATCH/err.txt"; then
		fail "$what: exited 0"
	elif [ "$(wc -l <"$SCRATCH/err.txt")" -eq 1 ] && grep -q "$pattern" "$SCRATCH/err.txt"; then
		pass "$what: $(cat "$SCRATCH/err.txt")"
	else
		fail "$what: $(cat "$SCRATCH/err.txt")"
	fi
}
expect_error "pid that does not exist" "no process with pid" \
	"$SPECPROBE" record -o "$SCRATCH/x.sprb" -p 999999999
# a process mapping no CUDA library may be a launcher: it is waited for, then refused
sleep 60 &
if "$SPECPROBE" record -o "$SCRATCH/y.sprb" -p $! --duration 1 >/dev/null 2>"$SCRATCH/err.txt"; then
	fail "process without CUDA: exited 0"
elif grep -q "waiting for one to be loaded" "$SCRATCH/err.txt" &&
	[ "$(grep -c 'error:' "$SCRATCH/err.txt")" = 1 ] &&
	grep -q "error: no libcuda.so or libnccl.so was loaded" "$SCRATCH/err.txt"; then
	pass "process without CUDA: $(grep 'error:' "$SCRATCH/err.txt")"
else
	fail "process without CUDA: $(cat "$SCRATCH/err.txt" | tr '\n' ' ')"
fi
kill $! 2>/dev/null
expect_error "foreign file" "not a specprobe recording" "$SPECPROBE" dump /bin/sh
: >"$SCRATCH/empty.sprb"
expect_error "empty file" "is empty" "$SPECPROBE" dump "$SCRATCH/empty.sprb"
expect_error "existing output" "use --force" "$SPECPROBE" record -o "$rec" -p $$
ln -s "$SCRATCH/elsewhere" "$SCRATCH/link.sprb"
expect_error "symlink output" "symbolic link" "$SPECPROBE" record -o "$SCRATCH/link.sprb" --force -p $$
finish
