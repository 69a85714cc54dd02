#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# How a recording ends: Ctrl-C, SIGTERM, --duration, the target exiting; a second Ctrl-C.
source "$(dirname "$0")/lib.sh"

# start_target DIR: a look-alike caller waiting for DIR/go (it maps libcuda, calls nothing yet)
start_target() {
	mkdir -p "$1"
	"$LOOKALIKE/caller" 50 1 "$1/go" "$1/truth.jsonl" >"$1/caller.out" &
	TARGET=$!
	wait_ready "$1/caller.out"
}

# ended_cleanly FILE: dump reads it whole and it carries the end record
ended_cleanly() {
	"$SPECPROBE" dump "$1" >/dev/null 2>"$1.err" && ! grep -q "did not end cleanly" "$1.err"
}

stop_with() {	# stop_with SIGNAL NAME
	local dir="$SCRATCH/$2" rec
	start_target "$dir"
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$TARGET" 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb"
	sleep 0.3
	kill "-$1" "$rec"
	if wait "$rec" && ended_cleanly "$dir/rec.sprb" && grep -q " 0 dropped" "$dir/rec.err"; then
		pass "$2 ends the recording cleanly: $(tail -1 "$dir/rec.err")"
	else
		fail "$2: $(tail -2 "$dir/rec.err" | tr '\n' ' ') $(cat "$dir/rec.sprb.err")"
	fi
	kill "$TARGET" 2>/dev/null
	wait "$TARGET" 2>/dev/null
}

stop_with INT "Ctrl-C"
stop_with TERM "SIGTERM"

dir="$SCRATCH/duration"
start_target "$dir"
start=$(date +%s%N)
if "$SPECPROBE" record -o "$dir/rec.sprb" -p "$TARGET" --duration 1 2>"$dir/rec.err" &&
	ended_cleanly "$dir/rec.sprb"; then
	ms=$((($(date +%s%N) - start) / 1000000))
	pass "--duration 1 stops by itself (${ms} ms including attach)"
else
	fail "--duration: $(tail -1 "$dir/rec.err")"
fi
kill "$TARGET" 2>/dev/null
wait "$TARGET" 2>/dev/null

# the target exits mid-trace: the recording ends cleanly with the call that never returned
dir="$SCRATCH/exit"
start_target "$dir"
"$SPECPROBE" record -o "$dir/rec.sprb" -p "$TARGET" 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/rec.sprb"
touch "$dir/go"
if wait "$rec" && ended_cleanly "$dir/rec.sprb" && grep -q "1 unreturned" "$dir/rec.sprb.err"; then
	pass "target exit ends the recording; its hung call is kept, unreturned"
else
	fail "target exit: $(tail -1 "$dir/rec.err") $(cat "$dir/rec.sprb.err")"
fi

# a second Ctrl-C leaves at once; what was written still reads
dir="$SCRATCH/double"
start_target "$dir"
"$SPECPROBE" record -o "$dir/rec.sprb" -p "$TARGET" 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/rec.sprb"
kill -INT "$rec"
# two signals pending at once would merge into one: the second goes once the first is taken
for ((i = 0; i < 1200; i++)); do
	pending=$(awk '/^(SigPnd|ShdPnd):/ { print $2 }' "/proc/$rec/status" 2>/dev/null)
	! echo "$pending" | grep -q '[2367abef]$' && break	# bit 1: SIGINT (2)
	sleep 0.01
done
kill -INT "$rec"
wait "$rec"
status=$?
"$SPECPROBE" dump "$dir/rec.sprb" >/dev/null 2>"$dir/dump.err"
if [ "$status" -ne 0 ] && ! grep -q "not a specprobe\|corrupt" "$dir/dump.err"; then
	pass "a second Ctrl-C exits at once (status $status); the file still reads"
else
	fail "second Ctrl-C: status $status, $(cat "$dir/dump.err")"
fi
kill "$TARGET" 2>/dev/null
wait "$TARGET" 2>/dev/null
# a full disk: one clear line and a non-zero exit, not a silent short file
dir="$SCRATCH/full"
mkdir -p "$dir/fs"
if mount -t tmpfs -o size=256k tmpfs "$dir/fs" 2>/dev/null; then
	"$LOOKALIKE/caller" 2000 2 "$dir/go" "$dir/truth.jsonl" >"$dir/caller.out" &
	TARGET=$!
	wait_ready "$dir/caller.out"
	"$SPECPROBE" record -o "$dir/fs/rec.sprb" -p "$TARGET" 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/fs/rec.sprb"
	touch "$dir/go"
	wait "$TARGET"
	if ! wait "$rec" && grep -q "No space left on device" "$dir/rec.err"; then
		pass "full disk: $(grep 'No space' "$dir/rec.err")"
	else
		fail "full disk: $(tail -1 "$dir/rec.err")"
	fi
	umount "$dir/fs"
else
	echo "  skip  full disk: cannot mount a small tmpfs here"
fi
finish
