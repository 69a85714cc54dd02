#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# specprobe top against the simulated server, driven in tmux like a person would: the right
# cycles/s per rank, the planted sync in the sync panel, a rank stuck in a collective in the
# hung panel, keys, q leaving no probe; --batch; --replay against report and against the
# recording's own span (call sites and a call open at the end too); Ctrl-C as q; bad input.
source "$(dirname "$0")/lib.sh"
CHECK=$TOP/tests/integration/check_top.py
SESSION=specprobe-top-$$

if ! command -v tmux >/dev/null; then
	fail "tmux is not installed"
	finish
	exit
fi
# a tmux server of our own: one on the default socket may be another user's, in another pid
# namespace, where the pids traced here do not exist
tmux() { command tmux -L "$SESSION" "$@"; }
# kept up between sessions, so that a new one never meets the last one's server leaving
tmux start-server \; set-option -g exit-empty off
trap 'tmux kill-server 2>/dev/null; rm -rf "$SCRATCH"' EXIT

screen() {
	tmux capture-pane -p -t "$SESSION" >"$1"
}

# wait_screen FILE PATTERN [TENTHS]: capture until PATTERN (grep -E) shows
wait_screen() {
	local i
	for ((i = 0; i < ${3:-150}; i++)); do
		screen "$1"
		grep -qE "$2" "$1" && return 0
		sleep 0.1
	done
	return 1
}

# Two ranks, traced from before cuInit (ranks known); rank 1 stuck 5 s in an all-reduce.
HANG_CYCLE=900
live_tmux() {
	local dir=$SCRATCH/live pids before rc
	before=$(our_programs)
	start_server "$dir" --wait-at init -r 2 -n 2500 --hang 1@$HANG_CYCLE/5000 \
		--plant stream@draft-verify/10 || { fail "live: no server"; return; }
	pids=$(tr '\n' ',' <"$dir/ready" | sed 's/,$//')
	tmux new-session -d -s "$SESSION" -x 150 -y 45 \
		"$SPECPROBE top -i 0.3 -o $dir/rec.sprb -p $pids 2>$dir/top.err; echo \$? >$dir/rc"
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	if wait_screen "$dir/screen1" '^ +1 +[0-9]+ +[0-9]+ +[0-9.]+ +- +[0-9.]+ +[0-9.]+ +[0-9]{3,} '
	then
		pass "live: both ranks' rows with cycles/s"
	else
		fail "live: no rank rows with a rate ($dir/screen1)"
	fi
	if wait_screen "$dir/screen2" '^ +1 +[0-9]+ +[0-9]+ ncclAllReduce +[1-9]' 120; then
		pass "live: the stuck all-reduce of rank 1 is in the hung panel while it is stuck"
	else
		fail "live: no hung ncclAllReduce ($dir/screen2)"
	fi
	if python3 "$CHECK" panels "$dir/screen2" cuStreamSynchronize draft-verify \
		ncclAllReduce 1 >"$dir/panels.out"; then
		pass "live: $(cat "$dir/panels.out")"
	else
		fail "live: $(cat "$dir/panels.out")"
	fi
	tmux send-keys -t "$SESSION" 2
	if wait_screen "$dir/screen3" 'rank 1' 20 && ! grep -qE '^ +0 +[0-9]+ +[0-9]+ ' "$dir/screen3"
	then
		pass "live: key 2 shows rank 1 alone"
	else
		fail "live: key 2 did not focus rank 1 ($dir/screen3)"
	fi
	tmux send-keys -t "$SESSION" 0 p
	if wait_screen "$dir/screen4" 'paused' 20; then
		pass "live: p pauses the display"
	else
		fail "live: p did not pause ($dir/screen4)"
	fi
	tmux send-keys -t "$SESSION" p s
	wait_screen "$dir/screen5" 'sort cycles/s' 20 && pass "live: s sorts by cycles/s" ||
		fail "live: s did not change the sort ($dir/screen5)"
	tmux send-keys -t "$SESSION" q
	wait_file "$dir/rc"
	rc=$(cat "$dir/rc" 2>/dev/null)
	if [ "$rc" = 0 ] && programs_back "$before"; then
		pass "live: q exits 0 and leaves no probe program loaded"
	else
		fail "live: q: exit '$rc', programs $(our_programs) (were $before)"
	fi
	wait $server_pid
	if python3 "$CHECK" rate "$dir/screen1" $HANG_CYCLE "$dir"/gt.rank* >"$dir/rate.out"; then
		pass "live: $(cat "$dir/rate.out")"
	else
		fail "live: $(cat "$dir/rate.out")"
	fi
	replay "live" "$dir"
}

# The screen at 80x24, 100x30 and 160x40, and --batch in an 80-column pane and at --width
# 160: no line wraps or is cut into another, columns drop by need; the cycles/s, TOK/S, the
# flagged sync and its call site (specsim's planting function) stay, in its row and in the
# header's answer.
COST="probes cost [0-9.]* % of the traced processes' CPU time"
sizes() {
	local dir=$SCRATCH/sizes pids size w h n
	start_server "$dir" -r 2 -n 40000 --plant stream@draft-verify/10 ||
		{ fail "sizes: no server"; return; }
	pids=$(tr '\n' ',' <"$dir/ready" | sed 's/,$//')
	for size in 80x24 100x30 160x40; do
		w=${size%x*} h=${size#*x}
		tmux kill-session -t "$SESSION" 2>/dev/null
		tmux new-session -d -s "$SESSION" -x "$w" -y "$h" \
			"$SPECPROBE top -i 0.3 -p $pids 2>$dir/top-$size.err; sleep 30"
		# the loop starts once the probes are in
		[ -e "$dir/go" ] || { wait_screen "$dir/screen-$size" '^ specprobe top' && touch "$dir/go"; }
		# a rate for each rank, and the flagged sync's row: the screen then holds its panels
		for ((n = 0; n < 300; n++)); do
			tmux capture-pane -p -J -t "$SESSION" >"$dir/screen-$size"
			python3 "$CHECK" fit screen "$dir/screen-$size" "$w" "$h" \
				cuStreamSynchronize draft-verify plant >"$dir/fit-$size.out" &&
				grep -q "$COST" "$dir/screen-$size" && break
			sleep 0.1
		done
		if [ "$n" -lt 300 ]; then
			pass "screen at $size: $(cat "$dir/fit-$size.out"), $(grep -o "$COST" \
				"$dir/screen-$size")"
		else
			fail "screen at $size: $(head -3 "$dir/fit-$size.out" | tr '\n' '|') ($dir)"
		fi
		tmux send-keys -t "$SESSION" q
	done
	tmux kill-session -t "$SESSION" 2>/dev/null
	tmux new-session -d -s "$SESSION" -x 80 -y 24 \
		"$SPECPROBE top --batch -n 8 -i 0.5 -p $pids 2>$dir/batch.err; echo \$? >$dir/batch.rc; sleep 30"
	wait_file "$dir/batch.rc" 600
	tmux capture-pane -p -J -S - -t "$SESSION" >"$dir/batch-80"
	if python3 "$CHECK" fit batch "$dir/batch-80" 80 0 cuStreamSynchronize draft-verify plant \
		>"$dir/fit-batch.out" && grep -q "^$COST" "$dir/batch-80"; then
		pass "--batch on an 80-column terminal: $(cat "$dir/fit-batch.out"), $(grep -o \
			"^$COST" "$dir/batch-80" | tail -1)"
	else
		fail "--batch at 80 columns: $(head -3 "$dir/fit-batch.out" | tr '\n' '|') ($dir)"
	fi
	"$SPECPROBE" top --batch -n 6 -i 0.5 --width 160 -p "$pids" >"$dir/batch-160" \
		2>"$dir/batch-160.err"
	if python3 "$CHECK" fit batch "$dir/batch-160" 160 0 cuStreamSynchronize draft-verify \
		plant >"$dir/fit-batch-160.out"; then
		pass "--batch --width 160: $(cat "$dir/fit-batch-160.out")"
	else
		fail "--batch at 160 columns: $(head -3 "$dir/fit-batch-160.out" | tr '\n' '|') ($dir)"
	fi
	tmux kill-session -t "$SESSION" 2>/dev/null
	kill $server_pid 2>/dev/null
	wait $server_pid 2>/dev/null
}

# --sample 40ms/150ms recorded on specsim and replayed: the header says the duty cycle, the
# share of the time launches were seen and the whole cycles, as the recording and its report
# have them; the loop figures and the launch rate carry "~"; on an 80x24 screen and in
# --batch at 80 columns the panels still fit
sampled() {
	local dir=$SCRATCH/sampled mode n
	start_server "$dir" --cycles 3000 --plant stream@draft-verify/10 ||
		{ fail "sampled: no server"; return; }
	record_sampled "$dir" 40ms/150ms
	if ! "$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"
	then
		fail "sampled: report: $(head -1 "$dir/report.err")"
		return
	fi
	"$SPECPROBE" top --replay "$dir/rec.sprb" --speed 0 --batch --width 80 >"$dir/batch" \
		2>"$dir/batch.err"
	tmux kill-session -t "$SESSION" 2>/dev/null
	tmux new-session -d -s "$SESSION" -x 80 -y 24 \
		"$SPECPROBE top --replay $dir/rec.sprb --speed 0 2>$dir/top.err; sleep 30"
	for ((n = 0; n < 150; n++)); do
		tmux capture-pane -p -J -t "$SESSION" >"$dir/screen"
		grep -q '^ specprobe top  end' "$dir/screen" && grep -q '^ sampled ' "$dir/screen" &&
			break
		sleep 0.1
	done
	tmux send-keys -t "$SESSION" q
	for mode in batch screen; do
		if python3 "$CHECK" sampled "$mode" "$dir/$mode" "$dir/rec.sprb" "$dir/report.json" \
			>"$dir/sampled-$mode.out" &&
			python3 "$CHECK" fit "$mode" "$dir/$mode" 80 24 cuStreamSynchronize \
				draft-verify plant >"$dir/fit-$mode.out"; then
			pass "sampled $mode at 80 columns: $(cat "$dir/sampled-$mode.out")"
		else
			fail "sampled $mode: $(cat "$dir/sampled-$mode.out" "$dir/fit-$mode.out" |
				head -3 | tr '\n' '|') ($dir)"
		fi
	done
	tmux kill-session -t "$SESSION" 2>/dev/null
}

# frames NAME DIR INTERVAL: a batch replay makes a block per INTERVAL of the recording's span
frames() {
	local name=$1 dir=$2 interval=$3
	"$SPECPROBE" top --batch --replay "$dir/rec.sprb" --speed 0 -i "$interval" \
		>"$dir/frames.txt" 2>"$dir/frames.err"
	if python3 "$CHECK" frames "$dir/frames.txt" "$dir/rec.sprb" "$interval" \
		>"$dir/frames.out"; then
		pass "$name: --replay by the records' times: $(cat "$dir/frames.out")"
	else
		fail "$name: --replay frames: $(cat "$dir/frames.out") ($dir)"
	fi
}

# replay NAME DIR: --replay's last block holds the report's cycles and flagged syncs
replay() {
	local name=$1 dir=$2
	frames "$name" "$dir" 1
	if ! "$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"
	then
		fail "$name: the kept recording does not report: $(head -1 "$dir/report.err")"
		return
	fi
	"$SPECPROBE" top --batch --replay "$dir/rec.sprb" --speed 0 >"$dir/replay.txt" \
		2>"$dir/replay.err"
	if python3 "$CHECK" replay "$dir/replay.txt" "$dir/report.json" >"$dir/replay.out"; then
		pass "$name: --replay of the recording: $(cat "$dir/replay.out")"
	else
		fail "$name: --replay differs from report: $(cat "$dir/replay.out")"
	fi
}

# --batch -- CMD: the server started under trace, a block per interval, the end block's
# flagged total equal to the planted syncs; the server's exit ends top with status 0.
batch_cmd() {
	local dir=$SCRATCH/batch planted rc
	mkdir -p "$dir"
	"$SPECPROBE" top --batch -i 0.2 -o "$dir/rec.sprb" -- "$SERVER" -q -n 400 \
		--plant stream@draft-verify/8 --ground-truth "$dir/gt" >"$dir/top.txt" \
		2>"$dir/top.err"
	rc=$?
	planted=$(grep -c '"tag":"planted' "$dir"/gt* | awk -F: '{ s += $NF } END { print s }')
	total=$(sed -n '/^== specprobe top end/,$p' "$dir/top.txt" |
		awk '$1 ~ /^(-|[0-9]+)$/ && $3 == "cuStreamSynchronize" && $4 == "draft-verify" {
			print $8 }')
	if [ "$rc" = 0 ] && [ "$(grep -c '^== specprobe top live' "$dir/top.txt")" -ge 2 ] &&
		[ -n "$total" ] && [ "$total" = "$planted" ]; then
		pass "batch: blocks per interval; end block flags the $planted planted syncs"
	else
		fail "batch: exit $rc, end block total '$total', planted $planted ($dir)"
	fi
	replay "batch" "$dir"
}

# --batch -p on a running server: its first block, an interval after the attach, holds the
# server's loop; on a process with no CUDA no empty block is printed, the wait is said once
# and the end is one error line
batch_attach() {
	local dir=$SCRATCH/attach first sl rc out
	start_server "$dir" --forever || { fail "batch -p: no server"; return; }
	touch "$dir/go"
	"$SPECPROBE" top --batch -n 2 --width 0 -p "$target" >"$dir/top.txt" 2>"$dir/top.err"
	rc=$?
	kill "$server_pid"
	wait "$server_pid"
	first=$(awk '/^== specprobe top/ { n++ } n == 1 && /^LOOPS/ { getline; getline; print; exit }' \
		"$dir/top.txt")
	if [ $rc = 0 ] && [ "$(echo "$first" | awk '{ print $2 }')" = "$target" ] &&
		[ "$(echo "$first" | awk '{ print ($4 > 0) }')" = 1 ]; then
		pass "batch -p: the first block shows the server's loop: $(echo "$first" | xargs)"
	else
		fail "batch -p: exit $rc, first block's loop row: '$first'"
	fi
	sleep 600 &
	sl=$!
	"$SPECPROBE" top --batch -i 0.2 -p $sl -d 2s >"$dir/none.txt" 2>"$dir/none.err"
	rc=$?
	kill $sl
	wait $sl 2>/dev/null
	out=$(tail -1 "$dir/none.err")
	if [ $rc = 1 ] && [ ! -s "$dir/none.txt" ] &&
		[ "$(grep -c 'waiting for one to be loaded' "$dir/none.err")" = 1 ] &&
		[[ "$out" == *"are they CUDA programs?"* ]]; then
		pass "batch -p of no CUDA process: no block, the wait said once, exit 1: $out"
	else
		fail "batch -p of no CUDA process: exit $rc, $(grep -c '^==' "$dir/none.txt") blocks: $out"
	fi
}

# SIGTERM while tracing: top stops, the probes go, the kept recording reads whole.
sigterm() {
	local dir=$SCRATCH/term top before back=yes report=0 end why
	before=$(our_programs)
	start_server "$dir" -n 3000 || { fail "sigterm: no server"; return; }
	"$SPECPROBE" top --batch -i 0.2 -o "$dir/rec.sprb" -p "$target" >"$dir/top.txt" \
		2>"$dir/top.err" &
	top=$!
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	sleep 1
	kill -TERM $top
	wait $top
	rc=$?
	kill $server_pid 2>/dev/null
	wait $server_pid 2>/dev/null
	programs_back "$before" || back=no
	"$SPECPROBE" report "$dir/rec.sprb" >/dev/null 2>"$dir/report.err" || report=$?
	end=$(grep -c '^== specprobe top end' "$dir/top.txt")
	if [ "$rc" = 0 ] && [ "$back" = yes ] && [ "$report" = 0 ] && [ "$end" = 1 ]; then
		pass "sigterm: exit 0, no probe left, the recording reads, an end block printed"
	else
		why="report exit $report ($(head -1 "$dir/report.err")), $end end blocks"
		fail "sigterm: exit $rc, programs $(our_programs) after 10 s (were $before), $why ($dir)"
	fi
}

# Defaults (call sites, their mappings) and a rank stuck in an all-reduce when Ctrl-C stops
# top --batch: exit 0, an end block, a recording that ends cleanly; its replay plays up to
# the recording's end and shows the stuck call hung, as the live blocks did.
replay_hung() {
	local dir=$SCRATCH/hung pids top rc i end clean
	start_server "$dir" -r 2 -n 1000 --hang 1@999/30000 || { fail "hung: no server"; return; }
	pids=$(tr '\n' ',' <"$dir/ready" | sed 's/,$//')
	"$SPECPROBE" top --batch -i 0.2 -o "$dir/rec.sprb" -p "$pids" >"$dir/top.txt" \
		2>"$dir/top.err" &
	top=$!
	wait_file "$dir/rec.sprb" 300
	touch "$dir/go"
	for ((i = 0; i < 600; i++)); do
		sed -n '/^HUNG/,/^CALLS/p' "$dir/top.txt" | grep -q ' ncclAllReduce ' && break
		sleep 0.1
	done
	kill -INT $top
	wait $top
	rc=$?
	kill $server_pid 2>/dev/null
	wait $server_pid 2>/dev/null
	end=$(grep -c '^== specprobe top end' "$dir/top.txt")
	"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>&1
	clean=$(grep -c 'did not end cleanly' "$dir/report.txt")
	if [ "$rc" = 0 ] && [ "$end" = 1 ] && [ "$clean" = 0 ] && [ "$i" -lt 600 ]; then
		pass "hung: SIGINT to top --batch: exit 0, an end block, the recording ends cleanly"
	else
		fail "hung: exit $rc, $end end blocks, 'did not end cleanly' $clean, waited $i ($dir)"
	fi
	frames "hung" "$dir" 0.2
	# the live end block came after a live block showed it hung: so does the replay's
	for out in top.txt frames.txt; do
		if sed -n '/^== specprobe top end/,$p' "$dir/$out" | sed -n '/^HUNG/,/^CALLS/p' |
			grep -qE ' ncclAllReduce +[1-9]'; then
			pass "hung: the end block of $out shows the all-reduce open to the end as hung"
		else
			fail "hung: no hung ncclAllReduce in the end block of $out ($dir)"
		fi
	done
	replay "hung" "$dir"
}

# ctrl_c MODE: Ctrl-C on the screen (live with -o, or a replay) ends top as q does
ctrl_c() {
	local dir=$SCRATCH/ctrlc-$1 cmd before clean=0 why what=""
	before=$(our_programs)
	if [ "$1" = live ]; then
		start_server "$dir" -n 100000 || { fail "Ctrl-C live: no server"; return; }
		cmd="$SPECPROBE top -i 0.3 -o $dir/rec.sprb -p $target"
	else
		mkdir -p "$dir"
		cmd="$SPECPROBE top --replay $SCRATCH/batch/rec.sprb --speed 0.2"
	fi
	tmux kill-session -t "$SESSION" 2>/dev/null
	tmux new-session -d -s "$SESSION" -x 150 -y 45 "$cmd 2>$dir/top.err; echo \$? >$dir/rc; sleep 30"
	[ "$1" = live ] && wait_file "$dir/rec.sprb" 300 && touch "$dir/go"
	if ! wait_screen "$dir/screen1" '^ +(-|[0-9]+) +[0-9]+ +[0-9]+ +([0-9.]+|idle) '; then
		fail "Ctrl-C $1: no loop row on the screen ($dir/screen1)"
	fi
	tmux send-keys -t "$SESSION" C-c
	wait_file "$dir/rc" 300
	screen "$dir/screen2"
	if [ "$1" = live ]; then
		kill $server_pid 2>/dev/null
		wait $server_pid 2>/dev/null
		"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>&1
		clean=$(grep -c 'did not end cleanly' "$dir/report.txt")
		programs_back "$before" || clean=probes
		what=", the recording ends cleanly, no probe left"
	fi
	why="exit '$(cat "$dir/rc" 2>/dev/null)', 'did not end cleanly'/probes left: $clean"
	if [ "$(cat "$dir/rc" 2>/dev/null)" = 0 ] && [ "$clean" = 0 ] &&
		grep -q '^== specprobe top end' "$dir/screen2" &&
		! grep -q '^ specprobe top ' "$dir/screen2"; then
		pass "Ctrl-C $1: exit 0, the screen restored, the end block printed$what"
	else
		fail "Ctrl-C $1: $why, end block $(grep -c '^== specprobe top end' "$dir/screen2") ($dir)"
	fi
}

# NO_COLOR: the same screen without colour escapes (reverse video stays).
no_color() {
	local dir=$SCRATCH/batch with without
	[ -s "$dir/rec.sprb" ] || return
	tmux kill-session -t "$SESSION" 2>/dev/null
	tmux new-session -d -s "$SESSION" -x 150 -y 45 \
		"$SPECPROBE top --replay $dir/rec.sprb --speed 0; sleep 5"
	sleep 1.5
	with=$(tmux capture-pane -e -p -t "$SESSION" | grep -c $'\e\[3[0-7]')
	tmux kill-session -t "$SESSION"
	tmux new-session -d -s "$SESSION" -x 150 -y 45 -e NO_COLOR=1 \
		"$SPECPROBE top --replay $dir/rec.sprb --speed 0; sleep 5"
	sleep 1.5
	without=$(tmux capture-pane -e -p -t "$SESSION" | grep -c $'\e\[3[0-7]')
	tmux send-keys -t "$SESSION" q
	if [ "$with" -gt 0 ] && [ "$without" = 0 ]; then
		pass "NO_COLOR: $with coloured lines without it, none with it"
	else
		fail "NO_COLOR: $with coloured lines without it, $without with it"
	fi
}

# each: a one-line error and a non-zero exit
bad_input() {
	local dir=$SCRATCH/bad err
	mkdir -p "$dir"
	expect_error() {
		local name=$1
		shift
		"$@" >"$dir/out" 2>"$dir/err" </dev/null
		local rc=$?
		err=$(grep -c 'specprobe: error' "$dir/err")
		if [ "$rc" -ne 0 ] && [ "$err" = 1 ]; then
			pass "bad input: $name: $(head -1 "$dir/err" | cut -c1-80)"
		else
			fail "bad input: $name: exit $rc, $err error lines"
		fi
	}
	expect_error "no such recording" "$SPECPROBE" top --batch --replay "$dir/none.sprb"
	# a cut recording is no error: its figures up to the cut, the cut said in one warning line
	at=$(PYTHONPATH=$TOP/tests/integration python3 -c "import sys; from recfile import records
d = open(sys.argv[1], 'rb').read(); r = list(records(d))[len(list(records(d))) // 2]
print(r[0] + r[2] // 2)" "$SCRATCH/batch/rec.sprb")
	head -c "$at" "$SCRATCH/batch/rec.sprb" >"$dir/cut.sprb"
	if "$SPECPROBE" top --batch --replay "$dir/cut.sprb" --speed 0 >"$dir/out" 2>"$dir/err" &&
		[ "$(grep -c '^specprobe: warning:' "$dir/err")" = 1 ] &&
		grep -q "inside a record: read up to" "$dir/err" && grep -q "^== specprobe top" "$dir/out"
	then
		pass "cut recording: replayed up to the cut, one warning: $(grep -o 'truncated at byte [0-9]*' "$dir/err")"
	else
		fail "cut recording: $(head -2 "$dir/err" | tr '\n' '|')"
	fi
	expect_error "no terminal" "$SPECPROBE" top --replay "$SCRATCH/batch/rec.sprb"
	sleep 30 &
	expect_error "a pid that is no CUDA program" "$SPECPROBE" top --batch -p $! --duration 2
	kill $! 2>/dev/null
}

# a recording of a real torch.compile decoder on an H100 (docs/results/gpu-rules-check.txt):
# call sites and code-object records throughout, played by their own times
real_gpu() {
	local dir=$SCRATCH/real-gpu
	mkdir -p "$dir"
	python3 -c "import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" \
		"$TOP/docs/results/h100-spec-replay.sprb.xz" >"$dir/rec.sprb"
	frames "real GPU recording" "$dir" 0.1
	replay "real GPU recording" "$dir"
}

live_tmux
sizes
sampled
batch_cmd
batch_attach
real_gpu
replay_hung
sigterm
ctrl_c live
ctrl_c replay
no_color
bad_input
finish
