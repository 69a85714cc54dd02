#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Bounded recordings (--max-size), dumps around a hung call (--dump-on hung=S) and merges,
# against the simulated server's ground truth; a recorder killed mid-rotation; bad input.
source "$(dirname "$0")/lib.sh"
CHECK="python3 $TOP/tests/integration/check_flight.py"
PROTO_DIR=$TOP/tests/perfetto

# ring: rotated many times, from before cuInit (the tables come as late records)
ring() {
	local dir="$SCRATCH/ring" rec n
	start_server "$dir" --wait-at init -r 2 -n 2000 || { fail "ring: no server"; return; }
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --max-size 256K 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb.0"
	touch "$dir/go"
	wait $server_pid
	wait $rec || fail "ring: record failed: $(tail -1 "$dir/rec.err")"
	n=$(ls "$dir" | grep -c '^rec\.sprb\.[0-9]*$')
	total=$(du -cb "$dir"/rec.sprb.[0-9]* | tail -1 | cut -f1)
	if [ "$n" -le 4 ] && [ "$total" -le $((256 * 1024)) ] && [ ! -e "$dir/rec.sprb.0" ]; then
		pass "ring: $n segments kept, $total bytes within --max-size 256K, the oldest removed"
	else
		fail "ring: $n segments, $total bytes ($(ls "$dir" | tr '\n' ' '))"
	fi
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
	"$SPECPROBE" dump -H "$dir/rec.sprb" 2>/dev/null | grep '^#' >"$dir/header.txt"
	if $CHECK ring --calls "$dir/calls.jsonl" --header "$dir/header.txt" \
		--dump-stderr "$dir/dump.err" "$dir"/gt.rank* >"$dir/check.out"; then
		pass "ring: $(tail -1 "$dir/check.out" | sed 's/^ *//')"
	else
		cat "$dir/check.out"
		fail "ring: the kept calls are not the newest, or the loss is misstated ($dir)"
		trap - EXIT
	fi
	"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>&1
	if head -15 "$dir/report.txt" | grep -q 'note: bounded recording (--max-size 262144): [0-9]* calls'; then
		pass "ring: report's first lines state what was rotated out"
	else
		fail "ring: report does not state the loss: $(head -15 "$dir/report.txt")"
	fi
	# each kept segment reads alone: its calls add up to the set's, all named
	local sum=0 unnamed=0 seg
	for seg in "$dir"/rec.sprb.[0-9]*; do
		"$SPECPROBE" dump --json "$seg" >"$dir/seg.jsonl" 2>/dev/null
		sum=$((sum + $(wc -l <"$dir/seg.jsonl")))
		unnamed=$((unnamed + $(grep -c '"name":"?"' "$dir/seg.jsonl")))
	done
	if [ "$sum" -eq "$(wc -l <"$dir/calls.jsonl")" ] && [ "$unnamed" -eq 0 ]; then
		pass "ring: each segment reads alone, every call named ($sum calls together)"
	else
		fail "ring: segments alone give $sum calls ($unnamed unnamed), the set $(wc -l <"$dir/calls.jsonl")"
	fi
}

# killed: SIGKILL while rotating fast; then a rotation cut after its file was created
killed() {
	local dir="$SCRATCH/killed" rec last kept
	start_server "$dir" -r 2 -n 4000 || { fail "killed: no server"; return; }
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --max-size 256K 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb.0"
	touch "$dir/go"
	sleep 1.5
	kill -KILL $rec
	wait $rec 2>/dev/null
	wait $server_pid
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
	kept=$(wc -l <"$dir/calls.jsonl")
	if [ "$kept" -gt 0 ] && ! grep -qE 'corrupt|does not continue' "$dir/dump.err" &&
		grep -q 'rotated out before segment' "$dir/dump.err"; then
		pass "killed: the set reads after SIGKILL: $kept calls, the loss stated"
	else
		fail "killed: $kept calls: $(cat "$dir/dump.err")"
	fi
	last=$(ls "$dir" | sed -n 's/^rec\.sprb\.\([0-9]*\)$/\1/p' | sort -n | tail -1)
	: >"$dir/rec.sprb.$((last + 1))"
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls2.jsonl" 2>"$dir/dump2.err"
	if [ "$(wc -l <"$dir/calls2.jsonl")" -eq "$kept" ] &&
		grep -q "rec.sprb.$((last + 1)): header cut short" "$dir/dump2.err"; then
		pass "killed: a segment created but not written: one line, the rest reads"
	else
		fail "killed: empty newest segment: $(head -2 "$dir/dump2.err")"
	fi
	head -c 100 "$dir/rec.sprb.$last" >"$dir/rec.sprb.$((last + 1))"
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls3.jsonl" 2>"$dir/dump3.err"
	if grep -q 'header cut short' "$dir/dump3.err" &&
		[ "$(wc -l <"$dir/calls3.jsonl")" -eq "$kept" ]; then
		pass "killed: a half-written header in the newest segment: reported, the rest reads"
	else
		fail "killed: half header: $(head -2 "$dir/dump3.err")"
	fi
}

# hung: rank 1 blocks 3 s in an all-reduce; a dump 1.5 s into it holds it and what came before
hung() {
	local dir="$SCRATCH/hung" rec
	start_server "$dir" -r 2 -n 400 --hang 1@200/3000 || { fail "hung: no server"; return; }
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --max-size 1M --dump-on hung=1.5 \
		2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb.0"
	touch "$dir/go"
	wait $server_pid
	wait $rec || fail "hung: record failed: $(tail -1 "$dir/rec.err")"
	if ! ls "$dir" | grep -q '^rec\.sprb\.hung-1\.[0-9]*$' ||
		ls "$dir" | grep -q '^rec\.sprb\.hung-2\.'; then
		fail "hung: no single dump: $(ls "$dir" | tr '\n' ' ')"
		return
	fi
	"$SPECPROBE" dump --json "$dir/rec.sprb.hung-1" >"$dir/h.jsonl" 2>"$dir/h.err"
	if $CHECK hung --calls "$dir/h.jsonl" --dump-stderr "$dir/h.err" --hang-ms 3000 \
		>"$dir/check.out"; then
		pass "hung: dump 1 holds the hung call and the window: $(tail -1 "$dir/check.out" | sed 's/^ *//')"
	else
		cat "$dir/check.out"
		fail "hung: the dump misses the hung call or its window ($dir)"
	fi
	"$SPECPROBE" report "$dir/rec.sprb.hung-1" >"$dir/report.txt" 2>&1
	if head -15 "$dir/report.txt" | grep -q 'note: dump 1: pid [0-9]* tid [0-9]* call [0-9]* unreturned 1.5 s'; then
		pass "hung: report's first lines state the window"
	else
		fail "hung: report does not state the window: $(head -15 "$dir/report.txt")"
	fi
	if "$SPECPROBE" dump "$dir/rec.sprb" >/dev/null 2>"$dir/ring.err" &&
		grep -q '^specprobe: dump 1: ' "$dir/ring.err"; then
		pass "hung: the ring goes on after the dump and says where it was made"
	else
		fail "hung: the ring after the dump: $(cat "$dir/ring.err")"
	fi
}

# merge: each rank recorded alone, merged, against one recording of both and the truth
merge() {
	local dir="$SCRATCH/merge" w a b bound
	start_server "$dir" --wait-at init -r 2 -n 300 || { fail "merge: no server"; return; }
	local pids=($(cat "$dir/ready"))
	"$SPECPROBE" record -o "$dir/whole.sprb" -p "${pids[0]}" 2>"$dir/w.err" &
	w=$!
	"$SPECPROBE" record -o "$dir/a.sprb" -p "${pids[1]}" 2>"$dir/a.err" &
	a=$!
	"$SPECPROBE" record -o "$dir/b.sprb" -p "${pids[2]}" 2>"$dir/b.err" &
	b=$!
	wait_file "$dir/whole.sprb" && wait_file "$dir/a.sprb" && wait_file "$dir/b.sprb"
	sleep 0.5
	touch "$dir/go"
	wait $server_pid
	wait $w $a $b
	if ! "$SPECPROBE" merge "$dir/a.sprb" "$dir/b.sprb" -o "$dir/m.sprb" 2>"$dir/merge.err"; then
		fail "merge: $(tail -1 "$dir/merge.err")"
		return
	fi
	"$SPECPROBE" report --json "$dir/whole.sprb" >"$dir/w.json" 2>/dev/null
	"$SPECPROBE" report --json "$dir/m.sprb" >"$dir/m.json" 2>/dev/null
	if python3 - "$dir/w.json" "$dir/m.json" <<'EOF'
import json, sys
w, m = (json.load(open(p)) for p in sys.argv[1:3])
procs = lambda d: sorted((p["pid"], p["rank"], p["calls"]) for p in d["processes"] if p["calls"])
loops = lambda d: sorted((l["pid"], l["rank"], l["cycles"]) for l in d["loops"])
ranks = {p[1] for p in procs(m)}
sys.exit(0 if procs(w) == procs(m) and loops(w) == loops(m) and ranks == {0, 1} else 1)
EOF
	then
		pass "merge: report of the merge equals the union: calls and cycles per rank"
	else
		fail "merge: report of the merge differs from one recording of both ($dir)"
	fi
	for x in a b m; do "$SPECPROBE" dump --json "$dir/$x.sprb" >"$dir/$x.jsonl" 2>/dev/null; done
	"$SPECPROBE" dump -H "$dir/m.sprb" 2>/dev/null | grep '^#' >"$dir/mh.txt"
	bound=$(sed -n 's/.*aligned within \([0-9]*\) ns as measured.*/\1/p' "$dir/merge.err")
	if [ -n "$bound" ] && $CHECK merge --merged "$dir/m.jsonl" --part "$dir/a.jsonl" \
		--part "$dir/b.jsonl" --merge-stderr "$dir/merge.err" --header "$dir/mh.txt" \
		--bound-ns "$bound" "$dir"/gt.rank* >"$dir/check.out"; then
		pass "merge: every call once, moved by its stated shift, within $bound ns of the truth"
	else
		cat "$dir/check.out"
		fail "merge: merged calls or times wrong ($dir)"
	fi
	if head -15 <("$SPECPROBE" report "$dir/m.sprb" 2>&1) | grep -q 'note: merged from 2 recordings'; then
		pass "merge: report's first lines state the merge and what is not known"
	else
		fail "merge: no merge note in the report"
	fi
	"$SPECPROBE" merge "$dir/whole.sprb" -o "$dir/one.sprb" 2>/dev/null
	"$SPECPROBE" report "$dir/whole.sprb" >"$dir/w.txt" 2>&1
	"$SPECPROBE" report "$dir/one.sprb" >"$dir/one.txt" 2>&1
	"$SPECPROBE" report --json "$dir/one.sprb" >"$dir/one.json" 2>/dev/null
	if cmp -s "$dir/w.txt" "$dir/one.txt" && cmp -s "$dir/w.json" "$dir/one.json"; then
		pass "merge: one recording merged alone gives the same report, text and JSON"
	else
		fail "merge: a merge of one recording reports differently ($dir)"
	fi
	if "$SPECPROBE" export "$dir/m.sprb" -o "$dir/m.pftrace" 2>"$dir/export.err" &&
		python3 "$TOP/tests/integration/check_perfetto.py" "$dir/m.pftrace" \
			--dump "$dir/m.jsonl" --report "$dir/m.json" >"$dir/pf.out"; then
		pass "merge: export of the merge decodes and holds every call: $(tail -1 "$dir/pf.out")"
	else
		fail "merge: export of the merge: $(tail -1 "$dir/export.err" "$dir/pf.out")"
	fi
	if command -v protoc >/dev/null && ! protoc --decode=perfetto.protos.Trace -I "$PROTO_DIR" \
		"$PROTO_DIR/perfetto_trace.proto" <"$dir/m.pftrace" >/dev/null 2>&1; then
		fail "merge: protoc does not decode the merge's trace"
	fi
	merge_bad "$dir"
}

# expect_error NAME PATTERN CMD...: exit 1, one line on stderr matching PATTERN
expect_error() {
	local name=$1 pattern=$2 out
	shift 2
	out=$("$@" 2>&1 >/dev/null)
	if [ $? -eq 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
		printf '%s' "$out" | grep -q "$pattern"; then
		pass "$name: one line: $out"
	else
		fail "$name: '$out'"
	fi
}

merge_bad() {
	local dir=$1 body
	head -c 100 "$dir/b.sprb" >"$dir/hcut.sprb"
	expect_error "merge: header cut" "header is truncated" \
		"$SPECPROBE" merge "$dir/a.sprb" "$dir/hcut.sprb" -o "$dir/x1.sprb"
	cp "$dir/b.sprb" "$dir/v2.sprb"
	printf '\x09' | dd of="$dir/v2.sprb" bs=1 seek=8 conv=notrunc 2>/dev/null
	expect_error "merge: version" "recording version 9" \
		"$SPECPROBE" merge "$dir/a.sprb" "$dir/v2.sprb" -o "$dir/x2.sprb"
	# the first record's type and size made impossible
	body=$(od -An -tu4 -j12 -N4 "$dir/b.sprb" | tr -d ' ')
	cp "$dir/b.sprb" "$dir/bad.sprb"
	printf '\xff\xff\xff\xff' | dd of="$dir/bad.sprb" bs=1 seek=$((16 + body)) \
		conv=notrunc 2>/dev/null
	"$SPECPROBE" merge "$dir/a.sprb" "$dir/bad.sprb" -o "$dir/x3.sprb" 2>"$dir/x3.err"
	if [ $? -eq 1 ] && [ ! -e "$dir/x3.sprb" ] &&
		grep -q "^specprobe: error: .*bad.sprb: corrupt record at byte $((16 + body))" \
			"$dir/x3.err"; then
		pass "merge: corrupt input: exit 1, no output left: $(grep error "$dir/x3.err")"
	else
		fail "merge: corrupt input: $(cat "$dir/x3.err")"
	fi
	# an odd length: records are whole multiples of 8 bytes, so this cuts inside one
	head -c $(($(stat -c %s "$dir/b.sprb") / 2 | 1)) "$dir/b.sprb" >"$dir/cut.sprb"
	if "$SPECPROBE" merge "$dir/a.sprb" "$dir/cut.sprb" -o "$dir/x4.sprb" 2>"$dir/x4.err" &&
		grep -q 'truncated at byte [0-9]*, inside a record: its readable part is merged' \
			"$dir/x4.err" && "$SPECPROBE" report "$dir/x4.sprb" >/dev/null 2>&1; then
		pass "merge: a truncated input's readable part merged, with a warning"
	else
		fail "merge: truncated input: $(cat "$dir/x4.err")"
	fi
	expect_error "merge: not a recording" "not a specprobe recording" \
		"$SPECPROBE" merge "$dir/a.jsonl" -o "$dir/x5.sprb"
	expect_error "merge: output exists" "exists: use --force" \
		"$SPECPROBE" merge "$dir/a.sprb" -o "$dir/m.sprb"
}

bad_options() {
	local out
	out=$("$SPECPROBE" record -o "$SCRATCH/x.sprb" --max-size 10 -- true 2>&1)
	[ $? -eq 2 ] && echo "$out" | grep -q 'at least 256K' &&
		pass "options: --max-size 10 refused" || fail "options: --max-size 10: $out"
	out=$("$SPECPROBE" record -o "$SCRATCH/x.sprb" --dump-on slow=3 -- true 2>&1)
	[ $? -eq 2 ] && echo "$out" | grep -q 'hung=DURATION' &&
		pass "options: --dump-on slow=3 refused" || fail "options: --dump-on slow=3: $out"
}

ring
killed
hung
merge
bad_options
finish
