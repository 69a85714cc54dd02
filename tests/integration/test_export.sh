#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# specprobe export: Perfetto traces of the simulated server (planted syncs, PyTorch's loop,
# two ranks) decode with the schema and hold every call once, the report's cycles and its
# flagged syncs; cut or corrupt recordings and existing outputs are refused.
source "$(dirname "$0")/lib.sh"
CHECK=$TOP/tests/integration/check_perfetto.py
PROTO_DIR=$TOP/tests/perfetto

check() {
	local name=$1 dir=$2
	if ! "$SPECPROBE" export "$dir/rec.sprb" -o "$dir/t.pftrace" 2>"$dir/export.err"; then
		fail "$name: export failed: $(head -1 "$dir/export.err")"
		return
	fi
	if command -v protoc >/dev/null; then
		if protoc --decode=perfetto.protos.Trace -I "$PROTO_DIR" \
			"$PROTO_DIR/perfetto_trace.proto" <"$dir/t.pftrace" >"$dir/t.txt" 2>&1 &&
			! grep -qE '^ *[0-9]+: ' "$dir/t.txt"; then
			pass "$name: protoc decodes it with no unknown fields"
		else
			fail "$name: protoc does not decode it cleanly: $(head -1 "$dir/t.txt")"
		fi
	else
		echo "  skip  $name: no protoc (apt-get install protobuf-compiler)"
	fi
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/dump.jsonl" 2>/dev/null
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
	if python3 "$CHECK" "$dir/t.pftrace" --dump "$dir/dump.jsonl" \
		--report "$dir/report.json" >"$dir/check.out"; then
		pass "$name: $(tail -1 "$dir/check.out")"
	else
		cat "$dir/check.out"
		fail "$name: the trace does not match the recording ($dir)"
		trap - EXIT
	fi
}

traced() {
	local name=$1 dir="$SCRATCH/$1"
	shift
	start_server "$dir" "$@" || { fail "$name: no server"; return; }
	record_whole_run "$dir"
	check "$name" "$dir"
}

bad_input() {
	local dir="$SCRATCH/planted" out="$SCRATCH/bad.pftrace" size
	size=$(stat -c %s "$dir/rec.sprb")
	head -c $((size * 2 / 3)) "$dir/rec.sprb" >"$SCRATCH/cut.sprb"
	if ! "$SPECPROBE" export "$SCRATCH/cut.sprb" -o "$out" 2>"$SCRATCH/cut.err" &&
		[ "$(wc -l <"$SCRATCH/cut.err")" = 1 ] && [ ! -e "$out" ]; then
		pass "cut recording refused in one line, no trace left: $(cat "$SCRATCH/cut.err")"
	else
		fail "cut recording: $(cat "$SCRATCH/cut.err")"
	fi
	head -c 200 /dev/urandom >"$SCRATCH/junk.sprb"
	if ! "$SPECPROBE" export "$SCRATCH/junk.sprb" -o "$out" 2>"$SCRATCH/junk.err" &&
		[ "$(wc -l <"$SCRATCH/junk.err")" = 1 ]; then
		pass "corrupt recording refused in one line"
	else
		fail "corrupt recording: $(cat "$SCRATCH/junk.err")"
	fi
	if ! "$SPECPROBE" export "$dir/rec.sprb" -o "$dir/t.pftrace" 2>"$SCRATCH/exists.err" &&
		grep -q -- --force "$SCRATCH/exists.err" &&
		"$SPECPROBE" export "$dir/rec.sprb" -o "$dir/t.pftrace" --force 2>/dev/null; then
		pass "existing trace kept without --force, replaced with it"
	else
		fail "existing output: $(cat "$SCRATCH/exists.err")"
	fi
	ln -s "$dir/t.pftrace" "$SCRATCH/link.pftrace"
	if ! "$SPECPROBE" export "$dir/rec.sprb" -o "$SCRATCH/link.pftrace" --force 2>/dev/null; then
		pass "symlinked output refused with --force"
	else
		fail "export wrote through a symlink"
	fi
	"$SPECPROBE" export "$dir/rec.sprb" 2>/dev/null
	[ $? = 2 ] && pass "no -o: usage error, exit 2" || fail "no -o: not exit 2"
}

if [ "$(id -u)" != 0 ]; then
	echo "test_export: needs root (BPF)"
	finish
	exit
fi
traced planted --cycles 60 --plant ctx@draft-verify/5 --plant pageable-copy@accept \
	--clean-syncs
traced torch --torch -k 5 --cycles 40 --plant side-stream/2 --clean-syncs
traced ranks --ranks 2 --cycles 40 --plant-sync 5
bad_input
finish
