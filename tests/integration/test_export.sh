#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# specprobe export: Perfetto traces of the simulated server (planted syncs, PyTorch's loop,
# two ranks) decode with the schema and hold every call once, the report's cycles and its
# flagged syncs; cut or corrupt recordings and existing outputs are refused, and a file cut
# between two records is written and said to have no end. record --perfetto writes the same
# trace as export of the recording it keeps.
source "$(dirname "$0")/lib.sh"
CHECK=$TOP/tests/integration/check_perfetto.py
PROTO_DIR=$TOP/tests/perfetto

# check NAME DIR [TRACE]: export DIR/rec.sprb (or take DIR/TRACE as it is) and check it
check() {
	local name=$1 dir=$2 trace=$2/${3:-t.pftrace}
	if [ -z "$3" ] &&
		! "$SPECPROBE" export "$dir/rec.sprb" -o "$trace" 2>"$dir/export.err"; then
		fail "$name: export failed: $(head -1 "$dir/export.err")"
		return
	fi
	if command -v protoc >/dev/null; then
		if protoc --decode=perfetto.protos.Trace -I "$PROTO_DIR" \
			"$PROTO_DIR/perfetto_trace.proto" <"$trace" >"$dir/t.txt" 2>&1 &&
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
	if python3 "$CHECK" "$trace" --dump "$dir/dump.jsonl" \
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

# --sample 40ms/150ms recorded on specsim: the trace holds every call as ever, and one slice
# per window of the recording on a track that says so, cycles/s over each window alone
sampled() {
	local dir=$SCRATCH/sampled got
	start_server "$dir" --cycles 3000 --plant stream@draft-verify/10 ||
		{ fail "sampled: no server"; return; }
	record_sampled "$dir" 40ms/150ms
	check sampled "$dir"
	if got=$(python3 "$CHECK" "$dir/t.pftrace" --sample "$dir/rec.sprb"); then
		pass "sampled: $got"
	else
		fail "sampled: $(echo "$got" | head -3 | tr '\n' '|') ($dir)"
		trap - EXIT
	fi
}

# cut_at FILE: offset and size of the record at two thirds of FILE
cut_at() {
	PYTHONPATH=$TOP/tests/integration python3 - "$1" <<'EOF'
import sys
from recfile import records
data = open(sys.argv[1], "rb").read()
print(*next((off, size) for off, _, size in records(data) if off >= len(data) * 2 // 3))
EOF
}

bad_input() {
	local dir="$SCRATCH/planted" out="$SCRATCH/bad.pftrace" off size
	read -r off size < <(cut_at "$dir/rec.sprb")
	# inside a record: the part before it exported, the cut said in one warning line
	head -c $((off + size / 2)) "$dir/rec.sprb" >"$SCRATCH/cut.sprb"
	if "$SPECPROBE" export "$SCRATCH/cut.sprb" -o "$out" 2>"$SCRATCH/cut.err" &&
		[ "$(grep -c "^specprobe: warning:" "$SCRATCH/cut.err")" = 1 ] &&
		grep -q "truncated at byte $off, inside a record" "$SCRATCH/cut.err" && [ -s "$out" ]; then
		pass "cut inside a record: exported up to it, one warning: $(grep warning "$SCRATCH/cut.err")"
	else
		fail "cut inside a record: $(cat "$SCRATCH/cut.err")"
	fi
	rm -f "$out"
	# between two records the file reads as a killed tracer's: written, and said to have no end
	head -c "$off" "$dir/rec.sprb" >"$SCRATCH/between.sprb"
	if "$SPECPROBE" export "$SCRATCH/between.sprb" -o "$out" 2>"$SCRATCH/between.err" &&
		[ "$(grep -c "^specprobe: warning:" "$SCRATCH/between.err")" = 1 ] &&
		grep -q "no end record" "$SCRATCH/between.err" &&
		! grep -q "no end record" "$dir/export.err"; then
		pass "cut between records: exported, said in one warning: $(grep warning "$SCRATCH/between.err")"
	else
		fail "cut between records: $(cat "$SCRATCH/between.err")"
	fi
	rm -f "$out"
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

# record --perfetto: the trace written at the end holds what export makes of the recording
record_perfetto() {
	local dir="$SCRATCH/live" rec modes
	start_server "$dir" --cycles 40 --plant ctx@draft-verify/5 --clean-syncs ||
		{ fail "record --perfetto: no server"; return; }
	"$SPECPROBE" record -o "$dir/rec.sprb" --perfetto "$dir/live.pftrace" -p "$target" \
		--ring-mb 256 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	wait $server_pid
	if ! wait $rec || [ ! -s "$dir/live.pftrace" ]; then
		fail "record --perfetto: no trace: $(tail -1 "$dir/rec.err")"
		return
	fi
	# made as the recording is, whatever the umask: it holds the same calls
	(umask 000 && "$SPECPROBE" export "$dir/rec.sprb" -o "$dir/export.pftrace" 2>/dev/null)
	modes=$(stat -c %a "$dir/rec.sprb" "$dir/live.pftrace" "$dir/export.pftrace" | xargs)
	[ "$modes" = "600 600 600" ] &&
		pass "the recording, record --perfetto's trace and export's (umask 000) are 0600" ||
		fail "modes of the recording, record --perfetto's trace and export's: $modes"
	python3 "$CHECK" "$dir/live.pftrace" --counts >"$dir/live.counts"
	python3 "$CHECK" "$dir/export.pftrace" --counts >"$dir/export.counts"
	if [ -s "$dir/live.counts" ] && cmp -s "$dir/live.counts" "$dir/export.counts" &&
		grep -q ' slice cycle: [1-9]' "$dir/live.counts"; then
		pass "record --perfetto: the slices and instants per name of export's trace"
	else
		fail "record --perfetto: counts differ ($dir/live.counts, $dir/export.counts)"
	fi
	cmp -s "$dir/live.pftrace" "$dir/export.pftrace" &&
		pass "record --perfetto: the same bytes as export" ||
		fail "record --perfetto: not the bytes export writes"
	check "record --perfetto" "$dir" live.pftrace
}

# refused before anything is traced, with export's one-line errors
record_perfetto_refused() {
	local dir="$SCRATCH/refused" name=$1 want=$2
	shift 2
	mkdir -p "$dir"
	rm -f "$dir/rec.sprb"
	if ! "$SPECPROBE" record -o "$dir/rec.sprb" -p $$ "$@" 2>"$dir/err" &&
		[ "$(wc -l <"$dir/err")" = 1 ] && grep -q -- "$want" "$dir/err" &&
		[ ! -e "$dir/rec.sprb" ]; then
		pass "record --perfetto: $name refused in one line: $(cat "$dir/err")"
	else
		fail "record --perfetto: $name: $(cat "$dir/err")"
	fi
}

record_perfetto_options() {
	local dir="$SCRATCH/refused"
	mkdir -p "$dir"
	echo old >"$dir/old.pftrace"
	ln -sf "$dir/old.pftrace" "$dir/link.pftrace"
	record_perfetto_refused "existing trace" "exists: use --force to overwrite" \
		--perfetto "$dir/old.pftrace"
	record_perfetto_refused "symlink" "is a symbolic link: refusing to write through it" \
		--perfetto "$dir/link.pftrace" --force
	if [ "$(cat "$dir/old.pftrace")" = old ]; then
		pass "record --perfetto: refused traces untouched"
	else
		fail "record --perfetto: a refused trace was changed"
	fi
	"$SPECPROBE" record -o "$dir/rec.sprb" --perfetto "$dir/rec.sprb" -p $$ 2>/dev/null
	[ $? = 2 ] && pass "record --perfetto naming the recording: usage error, exit 2" ||
		fail "record --perfetto naming the recording: not exit 2"
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
sampled
bad_input
record_perfetto
record_perfetto_options
finish
