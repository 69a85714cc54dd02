#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# One command-line convention: -h is help on every command, a short option means one thing
# in all of them, the man page and docs/reference.md hold what --help does, no doc calls
# refused what the command line takes, durations take ms, s and m, and a pid given where a
# command is expected is refused with a hint to use -p.
source "$(dirname "$0")/lib.sh"
CHECK="$(dirname "$0")/check_cli.py"
# every command specprobe --help lists
COMMANDS=$("$SPECPROBE" --help | awk '/^  [a-z]+  / { print $1 }')

# -h, --help and argp's -? print the same help on stdout and exit 0, on every command
help_everywhere() {
	local cmd bad="" h rc
	[ "$(echo $COMMANDS | wc -w)" -ge 9 ] || bad="; specprobe --help lists: $COMMANDS"
	for cmd in "" $COMMANDS; do
		h=$("$SPECPROBE" $cmd -h 2>&1)
		rc=$?
		if [ $rc -ne 0 ]; then
			bad="$bad; ${cmd:-specprobe} -h: exit $rc"
			continue
		fi
		[ "$h" = "$("$SPECPROBE" $cmd --help 2>&1)" ] ||
			bad="$bad; ${cmd:-specprobe}: -h != --help"
		[ -z "$cmd" ] && continue
		echo "$h" | head -1 | grep -q "^Usage: specprobe $cmd " ||
			bad="$bad; $cmd -h: $(echo "$h" | head -1)"
		echo "$h" | grep -qE '^  -h, --help ' || bad="$bad; $cmd --help lists no -h"
		[ "$h" = "$("$SPECPROBE" $cmd '-?' 2>&1)" ] || bad="$bad; $cmd: -? != --help"
	done
	[ -z "$bad" ] &&
		pass "-h, --help and -? are the help of specprobe and its $(echo $COMMANDS | wc -w) commands" ||
		fail "help:$bad"
}

# check_cli NAME WHAT ARGS...: one of check_cli.py's checks
check_cli() {
	local name=$1 out
	shift
	if out=$(python3 "$CHECK" "$@" 2>&1); then
		pass "$name: $out"
	else
		fail "$name: $out"
	fi
}

# usage_error NAME WANT CMD...: exit 2 and WANT (a fixed string) in the one error line
usage_error() {
	local name=$1 want=$2 out rc
	shift 2
	out=$("$@" 2>&1 </dev/null)
	rc=$?
	if [ $rc -eq 2 ] && echo "$out" | head -1 | grep -qF -- "$want"; then
		pass "$name"
	else
		fail "$name: exit $rc: $(echo "$out" | head -1)"
	fi
}

# a duration is taken in every form by every option that takes one: what is left to refuse
# is the missing target, checked after the options
durations() {
	local form opt
	for form in 2 2s 1.5 1.5s 500ms 2m .5m; do
		usage_error "record -d $form taken" "-p PID or -- CMD is required" \
			"$SPECPROBE" record -o "$SCRATCH/x.sprb" -d "$form"
		usage_error "--dump-on hung=$form taken" "-p PID or -- CMD is required" \
			"$SPECPROBE" record -o "$SCRATCH/x.sprb" --dump-on "hung=$form"
		usage_error "--metrics-linger $form taken" "--metrics-linger applies to --metrics" \
			"$SPECPROBE" record -o "$SCRATCH/x.sprb" --metrics-linger "$form"
		usage_error "report --duration $form taken" "which recording?" \
			"$SPECPROBE" report --duration "$form"
		for opt in -i --window --hung-ms; do
			# --window is 1s to 1m
			case "$opt $form" in "--window 500ms" | "--window 2m") continue ;; esac
			usage_error "top $opt $form taken" "what to watch?" \
				"$SPECPROBE" top "$opt" "$form"
		done
	done
	for form in 0 1x 1h -1s s 5sec 1S; do
		usage_error "record -d $form refused" "--duration: '$form' is not a duration" \
			"$SPECPROBE" record -o "$SCRATCH/x.sprb" -d "$form" -p 1
	done
	usage_error "top --window 500ms refused (at least 1s)" \
		"--window: '500ms' is not a duration" \
		"$SPECPROBE" top --window 500ms -p 1
	usage_error "--dump-on hung=1x refused" "--dump-on takes hung=DURATION" \
		"$SPECPROBE" record -o "$SCRATCH/x.sprb" --dump-on hung=1x -p 1
}

# a bare number where a command (or report's recording) is expected: the -p hint
pid_hint() {
	local want="10085 is not a command: to trace pid 10085 give -p 10085"
	usage_error "record -o F 10085: the -p hint" "$want" \
		"$SPECPROBE" record -o "$SCRATCH/x.sprb" 10085
	usage_error "record -o F -- 10085: the -p hint" "$want" \
		"$SPECPROBE" record -o "$SCRATCH/x.sprb" -- 10085
	usage_error "top 10085: the -p hint" "$want" "$SPECPROBE" top 10085
	usage_error "list 10085: the -p hint" "$want" "$SPECPROBE" list 10085
	usage_error "report 10085: the -p hint" \
		"10085 is not a recording: to trace pid 10085 give -p 10085" \
		"$SPECPROBE" report 10085
	[ -e "$SCRATCH/x.sprb" ] && fail "a refused record left $SCRATCH/x.sprb"
}

# -d 1s stops a recording of a server that goes on (specsim --forever): it is still running
# when record is done, and SIGTERM ends it cleanly, its truth whole
record_duration() {
	local dir="$SCRATCH/dur" rc alive calls src stopped
	start_server "$dir" --forever || { fail "record -d 1s: no server"; return; }
	touch "$dir/go"
	timeout 120 "$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" -d 1s 2>"$dir/rec.err"
	rc=$?
	kill -0 "$server_pid" 2>/dev/null && alive=1
	kill "$server_pid" 2>/dev/null
	wait "$server_pid" 2>/dev/null
	src=$?
	stopped=$(grep -o '"cycles_run":[0-9]*\|"stopped":true' "$dir/gt.rank0" | tr -d '"' | xargs)
	if [ $src = 0 ] && [[ "$stopped" =~ ^cycles_run:[1-9][0-9]*\ stopped:true$ ]]; then
		pass "specsim --forever: SIGTERM ends it, exit 0, its truth says $stopped"
	else
		fail "specsim --forever: exit $src after SIGTERM, truth '$stopped'"
	fi
	calls=$("$SPECPROBE" dump -c "$dir/rec.sprb" 2>/dev/null |
		awk '{ n += $1 } END { print n + 0 }')
	if [ $rc -eq 0 ] && [ -n "$alive" ] && [ "$calls" -gt 0 ]; then
		pass "record -d 1s ended by itself, the server still running; $calls calls read"
	else
		fail "record -d 1s: exit $rc, server alive: ${alive:-no}, calls $calls:" \
			"$(tail -1 "$dir/rec.err")"
	fi
	# a recording named by digits, where there is one, is read
	cp "$dir/rec.sprb" "$dir/10085"
	if (cd "$dir" && "$SPECPROBE" report 10085 >/dev/null 2>&1); then
		pass "report 10085 reads the recording 10085 where there is one"
	else
		fail "report 10085: the recording 10085 here is not read"
	fi
	# a replay in batch mode depends only on the recording: -i 500ms is -i 0.5
	replay_same "-i 500ms" "-i 0.5" "$dir"
	replay_same "--window 1m" "--window 60" "$dir"
	replay_same "--hung-ms 1s" "--hung-ms 1000" "$dir"
}

# replay_same "OPTS A" "OPTS B" DIR: top --batch --replay prints the same with either
replay_same() {
	local a b
	# shellcheck disable=SC2086
	a=$("$SPECPROBE" top --batch --replay "$3/rec.sprb" --speed 0 $1 2>&1)
	# shellcheck disable=SC2086
	b=$("$SPECPROBE" top --batch --replay "$3/rec.sprb" --speed 0 $2 2>&1)
	if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$(echo "$a" | wc -l)" -gt 3 ]; then
		pass "top --replay: $1 prints what $2 does ($(echo "$a" | wc -l) lines)"
	else
		fail "top --replay: $1 and $2 differ: $(echo "$a" | head -2 | tr '\n' '|') vs" \
			"$(echo "$b" | head -2 | tr '\n' '|')"
	fi
}

# make deps, with every package in: says so, in one line
deps_said() {
	local out
	out=$(make -s -C "$TOP" deps 2>&1)
	[[ "$out" =~ ^make\ deps:\ all\ [0-9]+\ packages\ installed$ ]] &&
		pass "make deps, nothing to install: '$out'" || fail "make deps said: '$out'"
}

# record -p without -o: record-PID.sprb here, said on stderr, holding every call of the
# server's truth from the attach on
record_default_name() {
	local dir="$SCRATCH/named" rec file
	start_server "$dir" --cycles 60 || { fail "record without -o: no server"; return; }
	file="$dir/record-$target.sprb"
	(cd "$dir" && exec "$SPECPROBE" record -p "$target") 2>"$dir/rec.err" &
	rec=$!
	wait_file "$file"
	touch "$dir/go"
	wait "$server_pid"
	wait $rec
	"$SPECPROBE" dump --json "$file" >"$dir/calls.jsonl" 2>"$dir/dump.err"
	"$SPECPROBE" dump -H "$file" 2>/dev/null | grep '^#' >"$dir/header.txt"
	if grep -qxF "specprobe: recording to record-$target.sprb (no -o given)" "$dir/rec.err" &&
		python3 "$TOP/tests/integration/check_truth.py" --calls "$dir/calls.jsonl" \
			--header "$dir/header.txt" --dump-stderr "$dir/dump.err" \
			"$dir"/gt.rank* >"$dir/check.out"; then
		pass "record -p without -o: record-$target.sprb, said; $(tail -1 "$dir/check.out")"
	else
		fail "record -p without -o: $(head -1 "$dir/rec.err"); $(tail -1 "$dir/check.out")"
	fi
	# --gpu on a recording made without it: the same report, and one line saying why no GPU
	"$SPECPROBE" report "$file" >"$dir/plain.txt" 2>/dev/null
	"$SPECPROBE" report --gpu "$file" >"$dir/gpu.txt" 2>"$dir/gpu.err"
	if cmp -s "$dir/plain.txt" "$dir/gpu.txt" && [ -s "$dir/plain.txt" ] &&
		[ "$(grep -c 'no GPU records: it was recorded without --gpu' "$dir/gpu.err")" = 1 ]; then
		pass "report --gpu of a recording without: $(grep -o 'no GPU.*' "$dir/gpu.err")"
	else
		fail "report --gpu of a recording without: $(tail -1 "$dir/gpu.err")"
	fi
}

# report -p of a process with no CUDA: one error, and no recording left of it unless named
report_no_cuda() {
	local dir="$SCRATCH/nocuda" pid out rc
	mkdir -p "$dir"
	sleep 600 &
	pid=$!
	out=$(cd "$dir" && "$SPECPROBE" report -p $pid -d 1s 2>&1 >/dev/null)
	rc=$?
	if [ $rc = 1 ] && [ ! -e "$dir/report-$pid.sprb" ] && echo "$out" | tail -1 |
		grep -qF "are they CUDA programs? (report-$pid.sprb removed)"; then
		pass "report -p of no CUDA process: exit 1, report-$pid.sprb removed and said"
	else
		fail "report -p of no CUDA process: exit $rc, $(ls "$dir"): $(echo "$out" | tail -1)"
	fi
	"$SPECPROBE" report -p $pid -d 1s -o "$dir/kept.sprb" >/dev/null 2>&1
	[ -s "$dir/kept.sprb" ] && pass "report -p -o FILE of no CUDA process: FILE kept" ||
		fail "report -p -o FILE of no CUDA process: FILE removed"
	kill $pid
	wait $pid 2>/dev/null
}

# specsim-server -h is its help, as --help and -? are, and names --forever
specsim_help() {
	local h
	h=$("$SERVER" -h 2>&1) || { fail "specsim-server -h: exit $?"; return; }
	if [ "$h" = "$("$SERVER" --help 2>&1)" ] && [ "$h" = "$("$SERVER" '-?' 2>&1)" ] &&
		echo "$h" | grep -qE '^ +--forever ' && echo "$h" | grep -qE '^ +-h, --help '; then
		pass "specsim-server -h is its --help and -?, listing -h and --forever"
	else
		fail "specsim-server -h: $(echo "$h" | head -1)"
	fi
}

help_everywhere
specsim_help
deps_said
check_cli "short options" shorts "$SPECPROBE"
check_cli "man page" man "$SPECPROBE" "$TOP/docs/specprobe.1"
check_cli "reference" reference "$SPECPROBE" "$TOP/docs/reference.md"
check_cli "help text" wrap "$SPECPROBE"
mkdir -p "$SCRATCH/refusals"
check_cli "no working feature said refused" refusals "$SPECPROBE" "$SCRATCH/refusals" \
	"$TOP/docs/specprobe.1" "$TOP/README.md" "$TOP/tools/specsim/README.md" "$TOP"/docs/*.md
durations
pid_hint
record_duration
record_default_name
report_no_cuda
finish
