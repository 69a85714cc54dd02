#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# --metrics through a real Prometheus: record and top --batch serve /metrics, Prometheus
# (Debian's) scrapes them every second, and its HTTP API must give the simulated server's
# ground truth: calls per entry point and process, flagged syncs, cycles, no drops, up 1.
# Also: loopback unless told, a port in use, bad addresses, idle and malformed clients, 500
# slow clients, and scrapes while the target exits.
source "$(dirname "$0")/lib.sh"
CHECK=$TOP/tests/integration/check_metrics.py
STARTED=()

# Everything this test started goes, on every way out.
cleanup() {
	local p
	for p in "${STARTED[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.3
	for p in "${STARTED[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
	fail "prometheus is not installed (make deps installs it)"
	finish
	exit
fi

read -r PROM_PORT REC_PORT TOP_PORT EXIT_PORT BIND_PORT SLOW_PORT SAMPLE_PORT \
	< <(python3 "$CHECK" ports 7)

# Prometheus on a free port; another one if that port was taken meanwhile.
start_prometheus() {
	local try
	for try in 1 2 3; do
		try_prometheus && return 0
		PROM_PORT=$(python3 "$CHECK" ports 1)
	done
	return 1
}

try_prometheus() {
	PROM=http://127.0.0.1:$PROM_PORT
	rm -rf "$SCRATCH/tsdb"
	cat >"$SCRATCH/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: record
    static_configs: [{ targets: ["127.0.0.1:$REC_PORT"] }]
  - job_name: top
    static_configs: [{ targets: ["127.0.0.1:$TOP_PORT"] }]
EOF
	prometheus --config.file="$SCRATCH/prometheus.yml" --storage.tsdb.path="$SCRATCH/tsdb" \
		--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn \
		>"$SCRATCH/prometheus.log" 2>&1 &
	STARTED+=($!)
	python3 "$CHECK" ready "$PROM" $!
}

planted_in() {
	cat "$@" | grep -c '"tag":"planted:stream"'
}

# scrape_whole_run NAME JOB DIR SPECPROBE_PID: Prometheus saw the end; its values are the truth
scrape_whole_run() {
	local name=$1 job=$2 dir=$3 sp=$4
	if ! python3 "$CHECK" wait-up "$PROM" "$job"; then
		fail "$name: Prometheus never scraped the endpoint ($dir, $SCRATCH/prometheus.log)"
		return 1
	fi
	touch "$dir/go"
	wait $server_pid
	if ! python3 "$CHECK" wait-final "$PROM" "$job"; then
		fail "$name: no scrape after the trace ended ($dir)"
		return 1
	fi
	"$SPECPROBE" dump -H "$dir/rec.sprb" 2>/dev/null | grep '^#' >"$dir/header.txt"
	if python3 "$CHECK" truth "$PROM" "$job" "$(planted_in "$dir"/gt*)" "$dir/header.txt" \
		"$dir"/gt* >"$dir/truth.out"; then
		pass "$name: Prometheus's query API gives the truth: $(cat "$dir/truth.out")"
	else
		fail "$name: $(cat "$dir/truth.out")"
	fi
	kill -TERM "$sp"
	wait "$sp"
}

# record --metrics: two ranks traced from before cuInit, scraped by Prometheus to the end.
record_metrics() {
	local dir=$SCRATCH/record pids rec rc
	start_server "$dir" --wait-at init -r 2 -n 400 --plant stream@draft-verify/10 ||
		{ fail "record: no server"; return; }
	STARTED+=($server_pid)
	pids=$(tr '\n' ',' <"$dir/ready" | sed 's/,$//')
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$pids" --metrics "127.0.0.1:$REC_PORT" \
		--metrics-linger 120 2>"$dir/rec.err" &
	rec=$!
	STARTED+=($rec)
	wait_file "$dir/rec.sprb"
	if python3 "$CHECK" abuse "http://127.0.0.1:$REC_PORT" >"$dir/abuse.out"; then
		pass "record: $(cat "$dir/abuse.out")"
	else
		fail "record: clients: $(cat "$dir/abuse.out")"
	fi
	scrape_whole_run record record "$dir" $rec
	rc=$?
	if [ $rc = 0 ] && "$SPECPROBE" report "$dir/rec.sprb" >/dev/null 2>&1; then
		pass "record: SIGTERM ends the linger with status 0; the recording reads"
	else
		fail "record: exit $rc after the linger ($dir/rec.err)"
	fi
}

# top --batch --metrics PORT: a bare port is 127.0.0.1, and the same truth through Prometheus.
top_metrics() {
	local dir=$SCRATCH/top top rc local_addr
	start_server "$dir" --wait-at init -n 300 --plant stream@draft-verify/6 ||
		{ fail "top: no server"; return; }
	STARTED+=($server_pid)
	"$SPECPROBE" top --batch -i 1 -p "$target" -o "$dir/rec.sprb" --metrics "$TOP_PORT" \
		--metrics-linger 120 \
		>"$dir/top.txt" 2>"$dir/top.err" &
	top=$!
	STARTED+=($top)
	# the recording is made once the probes are attached: only then may the server go
	if ! wait_file "$dir/rec.sprb" 1200; then
		fail "top: never attached ($dir/top.err)"
		return
	fi
	local_addr=$(python3 "$CHECK" listening "$TOP_PORT")
	if [ "$local_addr" = "127.0.0.1:$TOP_PORT" ]; then
		pass "top: --metrics PORT listens on 127.0.0.1 only"
	else
		fail "top: --metrics PORT listens on '$local_addr'"
	fi
	scrape_whole_run top top "$dir" $top
	rc=$?
	if [ $rc = 0 ] && grep -q '^== specprobe top end' "$dir/top.txt"; then
		pass "top: batch blocks and the end block as without --metrics; exit 0"
	else
		fail "top: exit $rc ($dir/top.err)"
	fi
}

# Scrapes back to back while the traced server exits and the tracer stops: each one whole.
exit_scrapes() {
	local dir=$SCRATCH/exit rec
	start_server "$dir" -n 1500 || { fail "exit: no server"; return; }
	STARTED+=($server_pid)
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --metrics "127.0.0.1:$EXIT_PORT" \
		2>"$dir/rec.err" &
	rec=$!
	STARTED+=($rec)
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	if python3 "$CHECK" exit-scrapes "http://127.0.0.1:$EXIT_PORT" $rec "$dir/last.txt" \
		>"$dir/scrapes.out" && promtool check metrics <"$dir/last.txt" >"$dir/lint" 2>&1
	then
		pass "exit: $(cat "$dir/scrapes.out"); promtool finds the last one clean"
	else
		fail "exit: $(cat "$dir/scrapes.out") $(head -3 "$dir/lint")"
	fi
	wait $rec
	wait $server_pid
}

# record --sample 40ms/150ms --metrics on specsim: the last scrape's sampling series are the
# recording's windows and its report's whole cycles and seen share; the families read from
# the windows say so in their HELP, the others do not
sampled() {
	local dir=$SCRATCH/sampled rec
	start_server "$dir" --cycles 3000 || { fail "sampled: no server"; return; }
	STARTED+=($server_pid)
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --ring-mb 256 --sample 40ms/150ms \
		--metrics "127.0.0.1:$SAMPLE_PORT" --metrics-linger 120 2>"$dir/rec.err" &
	rec=$!
	STARTED+=($rec)
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	if ! python3 "$CHECK" final "http://127.0.0.1:$SAMPLE_PORT" "$dir/last.txt" \
		>"$dir/final.out"; then
		fail "sampled: $(cat "$dir/final.out")"
	elif ! "$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"
	then
		fail "sampled: report: $(head -1 "$dir/report.err")"
	elif python3 "$CHECK" sampled "$dir/last.txt" "$dir/rec.sprb" "$dir/report.json" \
		>"$dir/sampled.out" && promtool check metrics <"$dir/last.txt" >"$dir/lint" 2>&1
	then
		pass "sampled: $(cat "$dir/sampled.out"); promtool finds it clean"
	else
		fail "sampled: $(cat "$dir/sampled.out" "$dir/lint" | head -4 | tr '\n' '|')"
	fi
	kill -TERM $rec 2>/dev/null
	wait $rec
	wait $server_pid
}

# 500 slow connections held open (half idle, half sending a head a byte a second, each made
# again when the server drops it) while 20 scrapes each get a whole document, and the
# recording under way loses no call of the ground truth.
slow_clients() {
	local dir=$SCRATCH/slow rec
	start_server "$dir" -n 4000 || { fail "slow clients: no server"; return; }
	STARTED+=($server_pid)
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --ring-mb 256 \
		--metrics "127.0.0.1:$SLOW_PORT" --metrics-linger 120 2>"$dir/rec.err" &
	rec=$!
	STARTED+=($rec)
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	if python3 "$CHECK" slow-clients "http://127.0.0.1:$SLOW_PORT" $rec 500 20 1024 \
		>"$dir/slow.out"; then
		pass "slow clients: $(cat "$dir/slow.out")"
	else
		fail "slow clients: $(cat "$dir/slow.out")"
	fi
	wait $server_pid
	kill -TERM $rec
	wait $rec
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
	"$SPECPROBE" dump -H "$dir/rec.sprb" 2>/dev/null | grep '^#' >"$dir/header.txt"
	if python3 "$TOP/tests/integration/check_truth.py" --calls "$dir/calls.jsonl" \
		--header "$dir/header.txt" --dump-stderr "$dir/dump.err" --returns pinned-quiet \
		"$dir"/gt* >"$dir/check.out"; then
		pass "slow clients: the recording meanwhile has every call of the ground truth"
	else
		fail "slow clients: the recording differs from the truth: $(tail -2 "$dir/check.out")"
	fi
}

# expect_error NAME CMD...: a one-line error, a non-zero exit, nothing traced
expect_error() {
	local name=$1 dir=$SCRATCH/bad before rc errors
	shift
	mkdir -p "$dir"
	before=$(our_programs)
	"$@" >"$dir/out" 2>"$dir/err" </dev/null
	rc=$?
	errors=$(grep -c 'specprobe: error' "$dir/err")
	if [ $rc -ne 0 ] && [ "$errors" = 1 ] && [ ! -e "$dir/x.sprb" ] &&
		programs_back "$before" && ! grep -q 'tracing ' "$dir/err"; then
		pass "bad input: $name: $(grep 'specprobe: error' "$dir/err" | cut -c1-90)"
	else
		fail "bad input: $name: exit $rc, $errors error lines ($(head -2 "$dir/err"))"
	fi
	rm -f "$dir/x.sprb"
}

bad_input() {
	local dir=$SCRATCH/bad
	sleep 60 &
	STARTED+=($!)
	expect_error "record, port in use" "$SPECPROBE" record -o "$dir/x.sprb" -p $! \
		--metrics "127.0.0.1:$PROM_PORT"
	expect_error "top, port in use" "$SPECPROBE" top --batch -p $! --metrics "$PROM_PORT"
	expect_error "port out of range" "$SPECPROBE" record -o "$dir/x.sprb" -p $! \
		--metrics 127.0.0.1:70000
	expect_error "a host name" "$SPECPROBE" record -o "$dir/x.sprb" -p $! \
		--metrics example.com:9400
	expect_error "no port" "$SPECPROBE" record -o "$dir/x.sprb" -p $! --metrics "[::1]"
}

# listens_on SPEC WANT: record --metrics SPEC listens on WANT, and warns when not loopback
listens_on() {
	local spec=$1 want=$2 dir=$SCRATCH/bind sp got i warned=no
	mkdir -p "$dir"
	sleep 60 &
	STARTED+=($!)
	"$SPECPROBE" record -o "$dir/x.sprb" -p $! --duration 20 --metrics "$spec" \
		2>"$dir/err" &
	sp=$!
	STARTED+=($sp)
	for ((i = 0; i < 1200; i++)); do
		grep -q 'metrics at' "$dir/err" && break
		sleep 0.1
	done
	got=$(python3 "$CHECK" listening "$BIND_PORT")
	grep -q 'reachable from other hosts' "$dir/err" && warned=yes
	kill -TERM $sp 2>/dev/null
	wait $sp 2>/dev/null
	rm -f "$dir/x.sprb"
	if [ "$got" = "$want" ] && { [ "$3" = "$warned" ]; }; then
		pass "bind: --metrics $spec listens on $got (warning: $warned)"
	else
		fail "bind: --metrics $spec listens on '$got', not $want (warning: $warned)"
	fi
}

if start_prometheus; then
	version=$(prometheus --version 2>&1 | awk 'NR == 1 { print $3 }')
	pass "prometheus $version on 127.0.0.1:$PROM_PORT"
	record_metrics
	top_metrics
else
	fail "prometheus did not start: $(tail -2 "$SCRATCH/prometheus.log")"
fi
exit_scrapes
sampled
slow_clients
bad_input
listens_on "$BIND_PORT" "127.0.0.1:$BIND_PORT" no
listens_on "0.0.0.0:$BIND_PORT" "0.0.0.0:$BIND_PORT" yes
listens_on "[::1]:$BIND_PORT" "[::1]:$BIND_PORT" no
finish
