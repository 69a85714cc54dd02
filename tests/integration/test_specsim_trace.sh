#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Trace the running simulated server by -p; the recording must hold exactly its calls.
# Async copies into or out of pinned memory made before the attach are recorded at entry
# only, where the return probes are uprobe sessions, and so are those into memory pinned
# since, until the process frees host memory; every other copy with its return.
source "$(dirname "$0")/lib.sh"
SERVER=$TOP/.output/specsim/specsim-server

# trace_server NAME SERVER_ARGS...; RETURNS=all with SPECPROBE_NO_SESSIONS=1; RUNNING=1
# attaches to the server mid-loop
trace_server() {
	local name=$1 dir="$SCRATCH/$1" server pid rec
	shift
	mkdir -p "$dir"
	"$SERVER" -q --ground-truth "$dir/gt" --ready-file "$dir/ready" --go-file "$dir/go" "$@" \
		>"$dir/server.out" 2>&1 &
	server=$!
	if ! wait_file "$dir/ready"; then
		fail "$name: server never became ready: $(tail -1 "$dir/server.out")"
		return
	fi
	sleep 0.1
	pid=$(head -1 "$dir/ready")
	if [ -n "$RUNNING" ]; then
		touch "$dir/go"
		sleep 0.3
	fi
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$pid" --ring-mb 256 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	wait $server
	wait $rec
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
	"$SPECPROBE" dump -H "$dir/rec.sprb" 2>/dev/null | grep '^#' >"$dir/header.txt"
	if python3 "$TOP/tests/integration/check_truth.py" --calls "$dir/calls.jsonl" \
		--header "$dir/header.txt" --dump-stderr "$dir/dump.err" \
		--returns "${RETURNS:-pinned-quiet}" "$dir"/gt.rank* >"$dir/check.out"; then
		pass "$name: every call since attach, per thread, arguments and brackets equal$(
			sed -n 's/.*mismatches;/;/p' "$dir/check.out")"
	else
		cat "$dir/check.out"
		fail "$name: recording differs from the server's ground truth ($dir)"
		trap - EXIT
	fi
}

trace_server one-rank --cycles 200
trace_server four-ranks --cycles 100 --ranks 4
trace_server planted-syncs --cycles 100 --plant-sync 3 --pageable-copies --free-in-loop \
	--accept-mode deferred --draft-mode one-graph
# PyTorch's loop: .item() into pinned buffers, the scalar's H2D from malloc'd memory; a
# pinned buffer freed in cycle 60: every copy after it returns
trace_server torch --cycles 100 --torch --draft-k 5 --plant unknown-host@accept/2 \
	--plant pageable-copy@draft-verify/3 --plant free-host@accept/60
# attached before cuInit: the pinned buffers are seen made
trace_server torch-from-init --wait-at init --cycles 100 --torch --draft-k 5 \
	--plant pageable-copy@draft-verify/3 --plant free-host@accept/60
SPECPROBE_NO_SESSIONS=1 RETURNS=all trace_server torch-no-sessions --cycles 100 --torch \
	--draft-k 5 --plant unknown-host@accept/2 --plant pageable-copy@draft-verify/3
# attached mid-loop: from the mark on every copy of the pinned buffers is entry only
RUNNING=1 trace_server torch-running --cycles 12000 --torch --draft-k 5 --draft-us 1 \
	--verify-us 1 --extend-us 1 --accept-us 1 --host-us 0
# a million calls in one burst: the ring holds them all, the reader drains as they come
trace_server million --cycles 1 --rate-test 1000000 --rate-truth
finish
