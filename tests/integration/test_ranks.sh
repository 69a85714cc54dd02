#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Ranks of a server attached to after its NCCL init, from what its processes show: the
# title (SGLang's sglang::scheduler_TPn) or the environment (RANK, WORLD_SIZE). report and
# its --json give each pid the truth's rank and say how it was learned; top's rows differ
# per rank and its key 2 shows rank 1 alone; NCCL init seen still wins.
source "$(dirname "$0")/lib.sh"
CHECK=$TOP/tests/integration/check_ranks.py
SESSION=specprobe-ranks-$$
trap 'tmux kill-session -t $SESSION 2>/dev/null; rm -rf "$SCRATCH"' EXIT

# check NAME DIR FROM: the recording's ranks against the truth, in report and top
check() {
	local name=$1 dir=$2 from=$3
	if ! "$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err" ||
		! "$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>>"$dir/report.err"; then
		fail "$name: report failed: $(head -1 "$dir/report.err")"
		return
	fi
	if python3 "$CHECK" report "$dir/report.json" "$dir/report.txt" "$from" "$dir"/gt.rank* \
		>"$dir/check.out"; then
		pass "$name: $(tail -1 "$dir/check.out")"
	else
		fail "$name: $(head -3 "$dir/check.out" | tr '\n' ' ')($dir)"
	fi
	"$SPECPROBE" top --batch --replay "$dir/rec.sprb" --speed 0 >"$dir/top.txt" 2>"$dir/top.err"
	if python3 "$CHECK" top "$dir/top.txt" "$dir"/gt.rank* >"$dir/top.out"; then
		pass "$name: top: $(tail -1 "$dir/top.out")"
	else
		fail "$name: top: $(head -3 "$dir/top.out" | tr '\n' ' ')($dir)"
	fi
}

# attached NAME FROM SERVER_ARGS...: -p the launcher at the start gate, after NCCL init
attached() {
	local name=$1 from=$2 dir="$SCRATCH/$1"
	shift 2
	start_server "$dir" --cycles 40 --plant-sync 5 "$@" || { fail "$name: no server"; return; }
	record_whole_run "$dir"
	check "$name" "$dir" "$from"
}

attached title-2 title --ranks 2 --rank-hint title
attached title-4 title --ranks 4 --rank-hint title
attached environ-2 environ --ranks 2 --rank-hint environ
attached environ-4 environ --ranks 4 --rank-hint environ
# traced from before cuInit: the ncclCommInitRank calls are seen and win over the title
from_init() {
	local dir="$SCRATCH/init"
	start_server "$dir" --wait-at init --cycles 40 --plant-sync 5 --ranks 2 --rank-hint title ||
		{ fail "init: no server"; return; }
	record_whole_run "$dir"
	check "init" "$dir" nccl-init
}
from_init

# wait_screen FILE PATTERN [TENTHS]: capture until PATTERN (grep -E) shows
wait_screen() {
	local i
	for ((i = 0; i < ${3:-150}; i++)); do
		tmux capture-pane -p -t "$SESSION" >"$1"
		grep -qE "$2" "$1" && return 0
		sleep 0.1
	done
	return 1
}

# live top attached after NCCL init: rows per rank at once, key 2 keeps rank 1's alone
live_key() {
	local dir="$SCRATCH/live" pids
	if ! command -v tmux >/dev/null; then
		fail "live: tmux is not installed"
		return
	fi
	start_server "$dir" --cycles 1000000 --ranks 2 --rank-hint title --plant-sync 5 ||
		{ fail "live: no server"; return; }
	pids=$(tr '\n' ',' <"$dir/ready" | sed 's/,$//')
	tmux new-session -d -s "$SESSION" -x 150 -y 45 \
		"$SPECPROBE top -i 0.3 -o $dir/rec.sprb -p $pids 2>$dir/top.err; echo \$? >$dir/rc"
	wait_file "$dir/rec.sprb" 300
	touch "$dir/go"
	if wait_screen "$dir/screen1" '^ +0 +[0-9]+ +[0-9]+ +[0-9.]+ ' &&
		wait_screen "$dir/screen1" '^ +1 +[0-9]+ +[0-9]+ +[0-9.]+ '; then
		pass "live: rows of rank 0 and rank 1, learned from their titles"
	else
		fail "live: no row per rank ($dir/screen1)"
	fi
	tmux send-keys -t "$SESSION" 2
	if wait_screen "$dir/screen2" 'rank 1' 30 && grep -qE '^ +1 +[0-9]+ +[0-9]+ ' "$dir/screen2" &&
		! grep -qE '^ +0 +[0-9]+ +[0-9]+ ' "$dir/screen2"; then
		pass "live: key 2 shows rank 1 alone"
	else
		fail "live: key 2 did not focus rank 1 ($dir/screen2)"
	fi
	tmux send-keys -t "$SESSION" q
	wait_file "$dir/rc" 100
	kill -TERM $server_pid 2>/dev/null
	wait $server_pid
	[ "$(cat "$dir/rc" 2>/dev/null)" = 0 ] && pass "live: q exits 0" ||
		fail "live: top exited '$(cat "$dir/rc" 2>/dev/null)': $(tail -1 "$dir/top.err")"
}
live_key

finish
