#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# merge keeps every cycle of every input, whatever their times and processes: two processes
# recorded apart, two attached 250 ms apart while running, one process in two windows, a
# merge merged again. Per process, the merge's cycles and flagged syncs (and those counted
# in a cycle) equal the sum of each input's own report, and specsim's truth for whole runs.
# Overlapping windows of one process are said; --gpu runs merge whole; outputs a ring set would
# read are refused.
source "$(dirname "$0")/lib.sh"
CHECK="python3 $TOP/tests/integration/check_merge.py"

# merged NAME DIR [CHECK_ARGS...] -- INPUTS...: merge INPUTS into DIR/m.sprb, check it
merged() {
	local name=$1 dir=$2 args=() inputs=() json=()
	shift 2
	while [ "$1" != "--" ]; do args+=("$1"); shift; done
	shift
	inputs=("$@")
	if ! "$SPECPROBE" merge "${inputs[@]}" -o "$dir/m.sprb" 2>"$dir/merge.err"; then
		fail "$name: merge: $(tail -1 "$dir/merge.err")"
		return 1
	fi
	"$SPECPROBE" report --json "$dir/m.sprb" >"$dir/m.sprb.json" 2>/dev/null
	for x in "${inputs[@]}"; do
		"$SPECPROBE" report --json "$x" >"$x.json" 2>/dev/null
		json+=(--input "$x.json")
	done
	if $CHECK --merged "$dir/m.sprb.json" "${json[@]}" "${args[@]}" >"$dir/check.out"; then
		pass "$name: $(tail -1 "$dir/check.out")"
	else
		fail "$name: $(head -3 "$dir/check.out" | tr '\n' ' ')($dir)"
	fi
}

# running DIR: a server deciding from now on until killed; sets $target and $server_pid
running() {
	start_server "$1" --cycles 1000000 --plant-sync 5 || return 1
	touch "$1/go"
}

# two processes, each recorded whole, one after the other: the first's cycles were all
# before the second's attach mark
apart() {
	local dir="$SCRATCH/apart"
	start_server "$dir/a" --cycles 120 --plant-sync 5 || { fail "apart: no server"; return; }
	record_whole_run "$dir/a"
	sleep 3
	start_server "$dir/b" --cycles 150 --plant-sync 5 || { fail "apart: no server"; return; }
	record_whole_run "$dir/b"
	merged "apart: two processes recorded 3 s apart" "$dir" "$dir"/a/gt.rank* \
		"$dir"/b/gt.rank* -- "$dir/a/rec.sprb" "$dir/b/rec.sprb"
}

# two processes deciding, attached to 250 ms apart
together() {
	local dir="$SCRATCH/together" a b ra rb
	running "$dir/a" || { fail "together: no server"; return; }
	a=$server_pid
	local ta=$target
	running "$dir/b" || { fail "together: no server"; kill $a; return; }
	b=$server_pid
	sleep 0.5
	"$SPECPROBE" record -o "$dir/a.sprb" -p "$ta" -d 2s 2>"$dir/a.err" &
	ra=$!
	sleep 0.25
	"$SPECPROBE" record -o "$dir/b.sprb" -p "$target" -d 2s 2>"$dir/b.err" &
	rb=$!
	wait $ra $rb
	kill $a $b
	wait $a $b 2>/dev/null
	merged "together: two processes attached 250 ms apart" "$dir" -- "$dir/a.sprb" \
		"$dir/b.sprb"
}

# one process recorded in two windows, 1 s apart: each window a loop of its own
windows() {
	local dir="$SCRATCH/windows" s
	running "$dir/s" || { fail "windows: no server"; return; }
	s=$server_pid
	sleep 0.5
	"$SPECPROBE" record -o "$dir/a.sprb" -p "$target" -d 1500ms 2>"$dir/a.err"
	sleep 1
	"$SPECPROBE" record -o "$dir/b.sprb" -p "$target" -d 1500ms 2>"$dir/b.err"
	kill $s
	wait $s 2>/dev/null
	merged "windows: one process in two windows" "$dir" --windows "$target:2" -- \
		"$dir/a.sprb" "$dir/b.sprb" || return
	if grep -q "holds pid $target again" "$dir/merge.err"; then
		pass "windows: the merge says the later window is kept apart"
	else
		fail "windows: no line on the second window: $(cat "$dir/merge.err")"
	fi
	# the same recording twice: one process's windows overlap, which is said in one line
	"$SPECPROBE" merge "$dir/a.sprb" "$dir/a.sprb" -o "$dir/twice.sprb" 2>"$dir/twice.err"
	if [ "$(grep -c 'overlapping windows of one process' "$dir/twice.err")" = 1 ]; then
		pass "windows: overlapping windows of one process said in one line"
	else
		fail "windows: overlap not said: $(cat "$dir/twice.err")"
	fi
	# a merge merged again, with another input: its processes keep their own marks
	mkdir -p "$dir/again"
	merged "windows: a merge merged again with the apart runs" "$dir/again" -- \
		"$dir/m.sprb" "$SCRATCH/apart/a/rec.sprb" "$SCRATCH/apart/b/rec.sprb"
}

# two --gpu whole runs (specsim's look-alike libcupti): every execution kept and matched
gpu() {
	local dir="$SCRATCH/gpu" x
	if [ ! -e "$TOP/.output/specsim/libcupti.so" ]; then
		echo "  gpu: skipped, specsim has no look-alike libcupti"
		return
	fi
	mkdir -p "$dir"
	for x in a b; do
		"$SPECPROBE" record --gpu -o "$dir/$x.sprb" -- "$SERVER" -q --cycles 60 \
			--plant-sync 5 --ground-truth "$dir/gt-$x" 2>"$dir/$x.err"
	done
	merged "gpu: two --gpu runs" "$dir" "$dir"/gt-a.rank* "$dir"/gt-b.rank* -- \
		"$dir/a.sprb" "$dir/b.sprb" || return
	if python3 - "$dir"/a.sprb.json "$dir"/b.sprb.json "$dir"/m.sprb.json <<'EOF2'
import json, sys
a, b, m = (json.load(open(p))["gpu"] for p in sys.argv[1:4])
ok = m["records"] == a["records"] + b["records"] > 0 and m["matched"] == m["records"]
sys.exit(0 if ok and len(m["agents"]) == 2 else 1)
EOF2
	then
		pass "gpu: every GPU execution of both runs merged and matched to its launch"
	else
		fail "gpu: GPU executions lost or unmatched in the merge ($dir)"
	fi
}

# ring.sprb.N and the set's own name are refused as outputs, whether there or not
ring_names() {
	local dir="$SCRATCH/ringnames" before
	mkdir -p "$dir"
	cp "$SCRATCH/apart/a/rec.sprb" "$dir/ring.sprb.0"
	before=$("$SPECPROBE" report --json "$dir/ring.sprb" 2>/dev/null | sha256sum)
	for out in ring.sprb.1 ring.sprb.7 ./ring.sprb "$dir/../ringnames/ring.sprb.2"; do
		if (cd "$dir" && "$SPECPROBE" merge ring.sprb -o "$out" 2>err) ||
			[ "$(wc -l <"$dir/err")" != 1 ] || ! grep -q 'takes for it or a segment' "$dir/err"; then
			fail "ring names: -o $out: $(cat "$dir/err")"
			return
		fi
	done
	if [ "$(ls "$dir")" = "$(printf 'err\nring.sprb.0')" ] &&
		[ "$("$SPECPROBE" report --json "$dir/ring.sprb" 2>/dev/null | sha256sum)" = "$before" ]; then
		pass "ring names: outputs a reader of the set would take refused, the set as it was"
	else
		fail "ring names: the set changed: $(ls "$dir")"
	fi
}

apart
together
windows
gpu
ring_names
finish
