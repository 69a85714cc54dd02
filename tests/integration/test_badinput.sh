#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Bad recordings: real ones cut at every 1/16th of their length and with one bit flipped
# there, given to every reader. A cut past the header must read: exit 0 and exactly one warning
# line (cut inside a record, or no end record); a cut inside the header or a flipped bit must
# exit 0, or non-zero with exactly one error line; never a crash, never past the time bound.
source "$(dirname "$0")/lib.sh"
BOUND=${BADINPUT_BOUND_S:-30}

# the inputs: a rank pair of the server, an eager loop with planted syncs, the caller;
# BADINPUT_FROM=DIR adds DIR's recordings (e.g. .output/fuzz/seeds/recording)
dir="$SCRATCH/inputs"
mkdir -p "$dir"
for f in ${BADINPUT_FROM:+"$BADINPUT_FROM"/*.sprb}; do
	cp "$f" "$dir/from-$(basename "$f")"
done
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
	# at most 200 MB of output: a reader that floods is killed (SIGXFSZ), not the disk filled
	(ulimit -f 200000; timeout -s KILL "$BOUND" "$@" >"$SCRATCH/out" 2>"$SCRATCH/err")
	rc=$?
	errs=$(grep -c "^specprobe: error:" "$SCRATCH/err")
	if [ $rc = 137 ]; then
		bad="$bad; $name: still running after ${BOUND}s"
	elif [ $rc -gt 128 ] || grep -q "AddressSanitizer\|runtime error" "$SCRATCH/err"; then
		bad="$bad; $name: crashed (exit $rc) $(tail -1 "$SCRATCH/err")"
	elif [ $rc != 0 ] && [ "$errs" != 1 ]; then
		bad="$bad; $name: exit $rc with $errs error lines: $(head -3 "$SCRATCH/err" | tr '\n' '|')"
	elif [ -n "$reads" ] && ! reads_whole "$rc"; then
		bad="$bad; $name: a cut past the header: exit $rc, $(grep -c "^specprobe: warning:" \
			"$SCRATCH/err") warning lines: $(head -3 "$SCRATCH/err" | tr '\n' '|')"
	fi
	runs=$((runs + 1))
	[ $rc = 0 ] && zero=$((zero + 1))
}

# a cut past the header reads: exit 0 and one warning line saying where it stops (diff: or its
# one error, when the part read holds no whole cycle to compare)
reads_whole() {
	local warns
	warns=$(grep -c "^specprobe: warning:" "$SCRATCH/err")
	if [ "$1" = 1 ] && [ "$errs" = 1 ] && [ "$warns" = 1 ] &&
		grep -q "no cycles found: nothing to compare" "$SCRATCH/err"; then
		return 0
	fi
	[ "$1" = 0 ] && [ "$warns" = 1 ] &&
		grep -qE "inside a record: read up to the last whole|no end record: " "$SCRATCH/err"
}

# header_end FILE: the byte its records start at
header_end() {
	python3 -c "import struct, sys; d = open(sys.argv[1], 'rb').read(16)
print(16 + struct.unpack_from('<I', d, 12)[0] if len(d) == 16 else 0)" "$1"
}

reads=""
# foreign files: each reader refuses them with exactly one error line, at once (a FIFO too)
f="$SCRATCH/foreign"
mkdir -p "$f/dir"
: >"$f/empty"
mkfifo "$f/fifo"
printf 'SPECPRB\n' >"$f/magic"
printf 'SPECPRB\n\002\000\000\000\010\000\000\000' >"$f/version2"
printf 'SPECPRB\n\001\000\000\000\377\377\377\377' >"$f/header-4GiB"
echo "not a recording" >"$f/text"
bad="" runs=0 zero=0
for v in "$f/dir" "$f/empty" "$f/fifo" "$f/magic" "$f/version2" "$f/header-4GiB" "$f/text" \
	/bin/true /dev/zero "$f/missing"; do
	n=$(basename "$v")
	judge "report $n" "$SPECPROBE" report "$v"
	judge "dump $n" "$SPECPROBE" dump "$v"
	judge "diff $n" "$SPECPROBE" diff "$v" "$v"
	judge "export $n" "$SPECPROBE" export "$v" -o "$SCRATCH/x.pftrace" --force
	judge "top $n" "$SPECPROBE" top --replay "$v" --batch
done
if [ -z "$bad" ] && [ $zero = 0 ]; then
	pass "foreign files (folder, empty, FIFO, magic only, version 2, 4 GiB header, text, ELF, /dev/zero, missing): $runs runs, each one error line"
else
	fail "foreign files: $zero of $runs exit 0; ${bad#; }"
fi

# ahead FILE OUT NS: FILE with its middle call record stamped NS later (at most 2^64 - 1)
ahead() {
	PYTHONPATH=$TOP/tests/integration python3 - "$@" <<'EOF'
import struct, sys
from recfile import records
data = bytearray(open(sys.argv[1], "rb").read())
calls = [off for off, kind, _ in records(data) if kind == 1]
at = calls[len(calls) // 2] + 8
ts = struct.unpack_from("<Q", data, at)[0]
struct.pack_into("<Q", data, at, min(ts + int(sys.argv[3]), 2**64 - 1))
open(sys.argv[2], "wb").write(data)
EOF
}

# a stamp far ahead (a broken clock, or a long idle gap): top plays it at its pace, in bounded time
bad="" runs=0 zero=0
for ns in 100000000000 1000000000000000 18446744073709551615; do
	[ -s "$dir/caller.sprb" ] || continue
	ahead "$dir/caller.sprb" "$dir/ahead-$ns" $ns
	judge "top ahead $ns" "$SPECPROBE" top --replay "$dir/ahead-$ns" --batch
	blocks=$(grep -c "^== specprobe top" "$SCRATCH/out")
	[ "$blocks" -gt 200 ] && bad="$bad; top ahead $ns: $blocks blocks"
	judge "report ahead $ns" "$SPECPROBE" report "$dir/ahead-$ns"
	judge "export ahead $ns" "$SPECPROBE" export "$dir/ahead-$ns" -o "$SCRATCH/x.pftrace" --force
done
if [ -z "$bad" ] && [ $runs = 9 ]; then
	pass "a call stamped 100 s, 11 days or 2^64 ns ahead: top --replay --batch at its pace, report, export: $zero of $runs exit 0, the rest one error line, none past ${BOUND}s, at most 200 blocks"
else
	fail "stamp ahead: $runs runs; ${bad#; }"
fi

for f in "$dir"/*.sprb; do
	if [ ! -s "$f" ]; then
		fail "$(basename "$f"): the recording to corrupt was not made"
		continue
	fi
	variants "$f"
	bad="" runs=0 zero=0 body=$(header_end "$f") cuts=0
	for v in "$f".cut* "$f".flip*; do
		n=$(basename "$v")
		reads=""
		if [[ $v == *.cut* ]] && [ "$(stat -c %s "$v")" -ge "$body" ]; then
			reads=1
			cuts=$((cuts + 1))
		fi
		judge "report $n" "$SPECPROBE" report "$v"
		judge "report --json $n" "$SPECPROBE" report --json "$v"
		judge "dump $n" "$SPECPROBE" dump --json "$v"
		judge "diff $n" "$SPECPROBE" diff "$f" "$v"
		judge "export $n" "$SPECPROBE" export "$v" -o "$SCRATCH/x.pftrace" --force
		judge "top $n" "$SPECPROBE" top --replay "$v" --batch --speed 0
	done
	reads=""
	if [ -z "$bad" ]; then
		pass "$(basename "$f"): $runs runs on 30 cut or flipped copies, $zero exit 0; the $cuts cuts past the header read with one warning line, the rest one error line each, no crash, none past ${BOUND}s"
	else
		fail "$(basename "$f"): ${bad#; }"
	fi
done
finish
