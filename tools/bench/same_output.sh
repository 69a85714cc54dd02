#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Two specprobe binaries give the same outputs: record the simulated server in the loop
# shapes the tests use (once, into DIR), then compare report, report --json and export of
# each recording, and diff and diff --json of the first against each (and one with
# --also-a and --also-b), byte for byte.
#   tools/bench/same_output.sh OLD_SPECPROBE NEW_SPECPROBE [DIR]      (root, after make)
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OLD=$1 NEW=$2
DIR=${3:-$(mktemp -d /tmp/specprobe-same.XXXXXX)}
SERVER=$TOP/.output/specsim/specsim-server
PLANTS="--plant ctx@draft-verify/5 --plant stream@accept/3 --plant event@after-verify/2
	--plant free@extend/3 --plant poll@draft-verify/4 --plant legacy@extend/2
	--plant alloc@accept/3 --plant sync-copy@after-verify/3 --plant pageable-copy@draft-verify/2
	--plant unknown-host@accept/2 --plant ctx@outside --clean-syncs"
CASES=(
	"demo|--cycles 200"
	"torch|--cycles 200 --torch --draft-k 5 --accept-us 800 --plant side-stream/2 --plant pageable-copy/3"
	"ranks2-deferred|--cycles 150 --ranks 2 --accept-mode deferred"
	"ranks4-event|--cycles 100 --ranks 4 --accept-mode event"
	"planted|--cycles 300 $PLANTS"
	"deferred-pageable|--cycles 100 --plant-sync 3 --pageable-copies --free-in-loop --accept-mode deferred --draft-mode one-graph"
	"eager-pieces|--cycles 100 --draft-mode eager --verify-pieces 2 --batch-schedule 1,4,4"
	"extra-draft|--cycles 100 --extra-draft-every 3 --batch-schedule 1,2 --accept-mode deferred"
)
# attached later: at the start gate (after capture), or while the loop runs
ATTACHED=(
	"gate|--cycles 300 --draft-mode one-graph --accept-mode event"
	"mid-run|--cycles 3000 --ranks 2 --accept-mode deferred"
)

wait_file() { for _ in $(seq 300); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }

# record_attached NAME ARGS...: the server waits at its gate; traced there, or 0.5 s after it
record_attached() {
	local name=$1 d=$DIR/$1.run rec server
	shift
	mkdir -p "$d"
	"$SERVER" -q --ground-truth "$d/gt" --ready-file "$d/ready" --go-file "$d/go" "$@" \
		>"$d/server.out" 2>&1 &
	server=$!
	wait_file "$d/ready"
	sleep 0.1
	[ "$name" = mid-run ] && touch "$d/go" && sleep 0.5
	"$NEW" record -o "$DIR/$name.sprb" -p "$(head -1 "$d/ready")" --ring-mb 256 \
		2>"$DIR/$name.rec.err" &
	rec=$!
	wait_file "$DIR/$name.sprb"
	touch "$d/go"
	wait $server
	wait $rec
}

mkdir -p "$DIR"
for c in "${ATTACHED[@]}"; do
	# shellcheck disable=SC2086
	[ -s "$DIR/${c%%|*}.sprb" ] || record_attached "${c%%|*}" ${c#*|}
	CASES+=("$c")
done
same=0 differ=0
# compare NAME EXT...: DIR/NAME.old.EXT against DIR/NAME.new.EXT, counted
compare() {
	local name=$1 ext
	shift
	for ext in "$@"; do
		if cmp -s "$DIR/$name.old.$ext" "$DIR/$name.new.$ext"; then
			same=$((same + 1))
		else
			echo "$name: $ext differs ($DIR/$name.old.$ext $DIR/$name.new.$ext)"
			differ=$((differ + 1))
		fi
	done
}
for c in "${CASES[@]}"; do
	name=${c%%|*} rec=$DIR/${c%%|*}.sprb
	# shellcheck disable=SC2086
	[ -s "$rec" ] || "$NEW" record -o "$rec" --ring-mb 256 -- "$SERVER" -q ${c#*|} \
		2>"$DIR/$name.rec.err" || { echo "$name: recording failed"; differ=$((differ + 1)); continue; }
	for bin in old new; do
		b=$OLD; [ $bin = new ] && b=$NEW
		"$b" report "$rec" >"$DIR/$name.$bin.txt" 2>&1
		"$b" report --json "$rec" >"$DIR/$name.$bin.json" 2>&1
		"$b" export --force -o "$DIR/$name.$bin.pftrace" "$rec" >/dev/null 2>&1
	done
	compare "$name" txt json pftrace
done
# same_diff NAME ARGS...: diff ARGS, text and JSON, of both binaries byte for byte
same_diff() {
	local name=$1 bin b
	shift
	for bin in old new; do
		b=$OLD; [ $bin = new ] && b=$NEW
		"$b" diff "$@" >"$DIR/$name.$bin.diff" 2>&1
		"$b" diff --json "$@" >"$DIR/$name.$bin.diff.json" 2>&1
	done
	compare "$name" diff diff.json
}
first=$DIR/${CASES[0]%%|*}.sprb
for c in "${CASES[@]}"; do
	same_diff "diff-${c%%|*}" "$first" "$DIR/${c%%|*}.sprb"
done
same_diff diff-also "$first" "$DIR/planted.sprb" --also-a "$DIR/torch.sprb" \
	--also-b "$DIR/mid-run.sprb"
echo "same_output: $same identical, $differ differ (recordings in $DIR)"
[ "$differ" -eq 0 ]
