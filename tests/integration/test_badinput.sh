#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Bad recordings: real ones cut at every 1/16th of their length and with one bit flipped
# there, given to every reader. Each must exit 0, or non-zero with exactly one error line;
# never a crash, never past the time bound.
source "$(dirname "$0")/lib.sh"
BOUND=${BADINPUT_BOUND_S:-30}

# make_inputs: a rank pair of the server, a rank killed part way, the multi-threaded caller
dir="$SCRATCH/inputs"
mkdir -p "$dir"
"$SPECPROBE" record -o "$dir/ranks.sprb" -- "$SERVER" -q --cycles 4 --ranks 2 \
	--accept-mode deferred --plant pageable-copy@accept >/dev/null 2>&1
"$SPECPROBE" record -o "$dir/eager.sprb" -- "$SERVER" -q --cycles 3 --draft-mode eager \
	--verify-pieces 2 --plant-sync 2 >/dev/null 2>&1
touch "$dir/go"
"$SPECPROBE" record -o "$dir/caller.sprb" -- "$LOOKALIKE/caller" 3 2 "$dir/go" "$dir/truth" 1 \
	>/dev/null 2>&1

# variants FILE: FILE cut at k/16 of its length and with bit k%8 of byte k/16 flipped, k 1..15
variants() {
	local f=$1 size at k
	size=$(stat -c %s "$f")
	for ((k = 1; k < 16; k++)); do
		at=$((size * k / 16))
		head -c "$at" "$f" >"$f.cut$k"
		cp "$f" "$f.flip$k"
		python3 -c "import sys; f = open(sys.argv[1], 'r+b'); f.seek($at); b = f.read(1)
f.seek($at); f.write(bytes([b[0] ^ (1 << ($k % 8))]))" "$f.flip$k"
	done
}

# judge NAME CMD...: the command's exit and its error lines; sets $bad on failure
judge() {
	local name=$1 rc errs
	shift
	timeout -s KILL "$BOUND" "$@" >"$SCRATCH/out" 2>"$SCRATCH/err"
	rc=$?
	errs=$(grep -c "^specprobe: error:" "$SCRATCH/err")
	if [ $rc = 137 ]; then
		bad="$bad; $name: still running after ${BOUND}s"
	elif [ $rc -gt 128 ] || grep -q "AddressSanitizer\|runtime error" "$SCRATCH/err"; then
		bad="$bad; $name: crashed (exit $rc) $(tail -1 "$SCRATCH/err")"
	elif [ $rc != 0 ] && [ "$errs" != 1 ]; then
		bad="$bad; $name: exit $rc with $errs error lines: $(head -3 "$SCRATCH/err" | tr '\n' '|')"
	fi
	runs=$((runs + 1))
	[ $rc = 0 ] && zero=$((zero + 1))
}

for f in "$dir"/*.sprb; do
	if [ ! -s "$f" ]; then
		fail "$(basename "$f"): the recording to corrupt was not made"
		continue
	fi
	variants "$f"
	bad="" runs=0 zero=0
	for v in "$f".cut* "$f".flip*; do
		n=$(basename "$v")
		judge "report $n" "$SPECPROBE" report "$v"
		judge "report --json $n" "$SPECPROBE" report --json "$v"
		judge "dump $n" "$SPECPROBE" dump --json "$v"
		judge "diff $n" "$SPECPROBE" diff "$f" "$v"
		judge "export $n" "$SPECPROBE" export "$v" -o "$SCRATCH/x.pftrace" --force
		judge "top $n" "$SPECPROBE" top --replay "$v" --batch --speed 0
	done
	if [ -z "$bad" ]; then
		pass "$(basename "$f"): $runs runs on 30 cut or flipped copies, $zero exit 0, the rest one error line each, no crash, none past ${BOUND}s"
	else
		fail "$(basename "$f"): ${bad#; }"
	fi
done
finish
