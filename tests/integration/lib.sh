# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Shared by the integration tests: paths, a scratch folder, pass/fail counting.
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SPECPROBE=$TOP/specprobe
LOOKALIKE=$TOP/.output/lookalike
SCRATCH=$(mktemp -d /tmp/specprobe-test.XXXXXX)
PASSED=0
FAILED=0
trap 'rm -rf "$SCRATCH"' EXIT

# the words of a line given in parts are joined, as echo joins them
pass() { PASSED=$((PASSED + 1)); echo "  ok    $*"; }
fail() { FAILED=$((FAILED + 1)); echo "  FAIL  $*"; }

# The specprobe probe programs loaded now, whoever loaded them.
our_programs() {
	bpftool prog show 2>/dev/null | grep -cE 'name on_(entry|return)'
}

# programs_back COUNT: true once our_programs is COUNT again, within 60 s (the kernel frees
# a program after its last reference goes, not always by the time its holder has exited,
# and later still on a loaded machine)
programs_back() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ "$(our_programs)" = "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# Wait until a file exists (up to $2 tenths of a second, 2 minutes unless given: a bound
# waited out only when something is wrong, so generous for a loaded machine).
wait_file() {
	local i
	for ((i = 0; i < ${2:-1200}; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# Wait until a program has written its "ready" line to $1.
wait_ready() {
	local i
	for ((i = 0; i < 1200; i++)); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# The simulated server, started waiting for DIR/go with its truth in DIR/gt.
SERVER=${SPECSIM_SERVER:-$TOP/.output/specsim/specsim-server}

# start_server DIR SERVER_ARGS...: sets $server_pid (our child) and $target (pid to trace)
start_server() {
	local dir=$1
	shift
	mkdir -p "$dir"
	"$SERVER" -q --ground-truth "$dir/gt" --ready-file "$dir/ready" --go-file "$dir/go" "$@" \
		>"$dir/server.out" 2>&1 &
	server_pid=$!
	if ! wait_file "$dir/ready"; then
		echo "server never became ready: $(tail -1 "$dir/server.out")"
		return 1
	fi
	sleep 0.1
	target=$(head -1 "$dir/ready")
}

# record_whole_run DIR [OPTIONS...]: trace $target into DIR/rec.sprb (record's OPTIONS
# added), open the gate, wait for both
record_whole_run() {
	local rec dir=$1
	shift
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --ring-mb 256 "$@" 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	wait $server_pid
	wait $rec
}

# record_sampled DIR SAMPLE [RECORD_ARGS...]: record_whole_run with --sample SAMPLE
record_sampled() {
	local dir=$1 sample=$2 rec
	shift 2
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --ring-mb 256 --sample "$sample" "$@" \
		2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	wait $server_pid
	wait $rec
}

finish() {
	echo "$(basename "$0" .sh): $PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
}
