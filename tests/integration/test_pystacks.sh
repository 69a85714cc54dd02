#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Python call sites of syncs, per CPython present (pyenv's 3.10-3.13): the offsets table
# equals what each version's headers give; the line table decoder agrees with co_lines()
# on the standard library's code; a ctypes program's syncs carry the file, function and
# line of every frame it marks, read by the BPF stack reader on its own (pystack_probe),
# and in `specprobe record` (-p PID, and a launched command for the newest version) as
# `dump --json` shows them; a python with the interpreter linked in (as
# python-build-standalone may ship it) is found as well as a libpython.
source "$(dirname "$0")/lib.sh"
PYTHONS=${PYTHONS:-/root/.pyenv/versions}
PROBE=$TOP/.output/pystacks/pystack_probe
PYLINES=$TOP/.output/pystacks/pylines
SITES=$TOP/tests/pystacks/sync_sites.py
LIBCUDA=$TOP/.output/specsim/libcuda.so.1
COUNT=3

out=$(PYTHONS=$PYTHONS "$TOP/tools/pyoffsets/gen.sh" --check 2>&1)
case $? in
0) pass "offsets table: $(echo "$out" | tail -1 | sed 's/^gen.sh: //')" ;;
2) echo "test_pystacks: $(echo "$out" | tail -1 | sed 's/^gen.sh: //'): table not checked" ;;
*) echo "$out" | head -20
   fail "offsets table differs from the headers (tools/pyoffsets/gen.sh)" ;;
esac

# The interpreter of each minor version present, newest patch release.
pythons() {
	local minor inc
	for minor in 10 11 12 13; do
		inc=$(ls -d "$PYTHONS"/3."$minor".*/bin/python3."$minor" 2>/dev/null | sort -V |
			tail -1)
		[ -n "$inc" ] && echo "$inc"
	done
}

sites() {
	local py=$1 minor=$2 dir=$SCRATCH/py$2
	mkdir -p "$dir"
	if ! "$PROBE" "$LIBCUDA" "$py" "$SITES" "$LIBCUDA" "$COUNT" >"$dir/stacks.jsonl" \
		2>"$dir/probe.err"; then
		fail "3.$minor: pystack_probe failed: $(grep -v '^pystack_probe: CPython\|^libbpf' \
			"$dir/probe.err" | head -1)"
		return
	fi
	if python3 "$TOP/tests/pystacks/check_sites.py" "$dir/stacks.jsonl" "$SITES" "$minor" \
		"$COUNT" >"$dir/check.out"; then
		pass "3.$minor: $(tail -1 "$dir/check.out")"
	else
		head -20 "$dir/check.out"
		fail "3.$minor: recorded Python stacks differ from the marked lines"
	fi
	if [ "$minor" -ge 13 ]; then
		if grep -q "_Py_DebugOffsets equal the headers' table" "$dir/probe.err"; then
			pass "3.$minor: offsets read from _Py_DebugOffsets equal the headers'"
		else
			fail "3.$minor: _Py_DebugOffsets unused or unequal ($dir/probe.err)"
		fi
	fi
}

# check_dump NAME MINOR DIR: the recording's Python stacks against the marked lines
check_dump() {
	local name=$1 minor=$2 dir=$3
	if ! "$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"; then
		fail "$name: dump failed: $(head -1 "$dir/dump.err")"
	elif python3 "$TOP/tests/pystacks/check_sites.py" "$dir/calls.jsonl" "$SITES" "$minor" \
		"$COUNT" >"$dir/check.out"; then
		pass "$name: $(tail -1 "$dir/check.out")"
	else
		head -20 "$dir/check.out"
		fail "$name: Python stacks in the recording differ from the marked lines ($dir)"
		trap - EXIT
	fi
}

# record_pid PYTHON MINOR: specprobe record -p on the running program
record_pid() {
	local py=$1 minor=$2 dir=$SCRATCH/rec$2 pid rec
	mkdir -p "$dir"
	"$py" "$SITES" "$LIBCUDA" "$COUNT" "$dir/go" >"$dir/sites.out" 2>&1 &
	pid=$!
	wait_ready "$dir/sites.out"
	"$SPECPROBE" record -o "$dir/rec.sprb" -p $pid 2>"$dir/record.err" &
	rec=$!
	wait_file "$dir/rec.sprb" 600
	touch "$dir/go"
	wait $pid
	wait $rec
	check_dump "3.$minor: record -p" "$minor" "$dir"
}

# record_launch PYTHON MINOR: specprobe record -- PYTHON ...: found after exec
record_launch() {
	local py=$1 minor=$2 dir=$SCRATCH/launch$2
	mkdir -p "$dir"
	touch "$dir/go"
	"$SPECPROBE" record -o "$dir/rec.sprb" -- "$py" "$SITES" "$LIBCUDA" "$COUNT" "$dir/go" \
		>"$dir/sites.out" 2>"$dir/record.err"
	check_dump "3.$minor: record -- python" "$minor" "$dir"
}

# static_python PYTHON MINOR: libpython3.X.a linked into a python of our own, traced
static_python() {
	local py=$1 minor=$2 dir=$SCRATCH/static$2 home lib pid rec
	home=$(cd "$(dirname "$py")/.." && pwd)
	lib=$(ls "$home"/lib/python3."$minor"/config-3."$minor"*/libpython3."$minor".a 2>/dev/null |
		head -1)
	if [ -z "$lib" ]; then
		echo "test_pystacks: no libpython3.$minor.a: the linked-in interpreter is not tried"
		return
	fi
	mkdir -p "$dir"
	if ! cc -O2 -I"$home/include/python3.$minor" "$TOP/tests/pystacks/static_python.c" "$lib" \
		-lm -ldl -lpthread -Wl,--export-dynamic -o "$dir/python3.$minor" \
		2>"$dir/cc.err"; then
		fail "3.$minor: building a python with libpython3.$minor.a linked in failed"
		return
	fi
	if ldd "$dir/python3.$minor" | grep -q libpython; then
		fail "3.$minor: the linked-in python still loads a libpython"
		return
	fi
	PYTHONHOME=$home "$dir/python3.$minor" "$SITES" "$LIBCUDA" "$COUNT" "$dir/go" \
		>"$dir/sites.out" 2>&1 &
	pid=$!
	wait_ready "$dir/sites.out"
	"$SPECPROBE" record -o "$dir/rec.sprb" -p $pid 2>"$dir/record.err" &
	rec=$!
	wait_file "$dir/rec.sprb" 600
	touch "$dir/go"
	wait $pid
	wait $rec
	check_dump "3.$minor: interpreter linked into python, record -p" "$minor" "$dir"
}

found=0
last=
for py in $(pythons); do
	found=1
	minor=${py##*python3.}
	if out=$("$py" "$TOP/tests/pystacks/check_lines.py" "$PYLINES" 2>&1); then
		pass "line tables: $(echo "$out" | tail -1)"
	else
		echo "$out" | head -10
		fail "3.$minor: decoded line tables differ from co_lines()"
	fi
	sites "$py" "$minor"
	record_pid "$py" "$minor"
	static_python "$py" "$minor"
	last=$py
done
if [ -n "$last" ]; then
	record_launch "$last" "${last##*python3.}"
fi
[ "$found" = 1 ] || echo "test_pystacks: no CPython 3.10-3.13 under $PYTHONS: nothing traced"
finish
