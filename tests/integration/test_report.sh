#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# specprobe report on the simulated server: cycles, phase boundaries and graphs against
# its ground truth; a live report equals the report of its recording; bad input.
source "$(dirname "$0")/lib.sh"
CHECK=$TOP/tests/integration/check_report.py

# check NAME DIR INVENTORY: the report of DIR/rec.sprb against the truth
check() {
	local name=$1 dir=$2 inventory=$3
	if ! "$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"; then
		fail "$name: report failed: $(head -1 "$dir/report.err")"
		return
	fi
	"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>/dev/null
	# expect_from, where set: how every loop's verify must have been told; the text's first
	# five lines: rates, p50, phase split and the top flagged sync against the truth
	if python3 "$CHECK" --report "$dir/report.json" --inventory "$inventory" \
		--text "$dir/report.txt" ${expect_from:+--verify-from "$expect_from"} \
		"$dir"/gt.rank*; then
		pass "$name: cycle count, phase boundaries, graphs and the first screen equal the truth"
	else
		fail "$name: report differs from the ground truth ($dir)"
		trap - EXIT
	fi
	widest=$(expand -t8 "$dir/report.txt" | awk '{ if (length($0) > w) w = length($0) } END { print w }')
	if grep -q '^Phase breakdown' "$dir/report.txt" && [ "$widest" -le 100 ]; then
		pass "$name: text report with its phase breakdown, $widest columns wide"
	else
		fail "$name: text report missing its breakdown or $widest columns wide"
	fi
}

# traced from before cuInit: every capture is seen, the inventory is complete
from_init() {
	local name=$1 dir="$SCRATCH/$1"
	shift
	start_server "$dir" --wait-at init "$@" || { fail "$name: no server"; return; }
	record_whole_run "$dir"
	check "$name" "$dir" full
}

# from_init with the recording's call sites left out (record --stacks none)
no_stacks() {
	local name=$1 dir="$SCRATCH/$1"
	shift
	start_server "$dir" --wait-at init "$@" || { fail "$name: no server"; return; }
	record_whole_run "$dir" --stacks none
	check "$name" "$dir" full
}

# attached at the start gate, after capture: the first cycle is the first thing recorded
from_gate() {
	local name=$1 dir="$SCRATCH/$1"
	shift
	start_server "$dir" "$@" || { fail "$name: no server"; return; }
	record_whole_run "$dir"
	check "$name" "$dir" launched
}

# attached while the loop runs: graphs are uncaptured, roles come from behaviour
mid_run() {
	local name=$1 dir="$SCRATCH/$1" rec
	shift
	start_server "$dir" "$@" || { fail "$name: no server"; return; }
	touch "$dir/go"
	sleep 0.5
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --ring-mb 256 2>"$dir/rec.err" &
	rec=$!
	wait $server_pid
	wait $rec
	check "$name" "$dir" launched
}

# attach_cut NAME LEAD_ROLE [SERVER_ARGS...]: attached with -p to a server decoding for ever and
# stopped before it is, as top -p or record -p --duration see one: neither the captures nor
# the loop's start or end are seen; where the graphs are launched from tells the lead
# (docs/report-json.md, Roles): every exec's role, phase and count as the truth has them
# (lead_only set: the lead alone, for --torch, whose draft counts launches the truth does not)
attach_cut() {
	local name=$1 lead=$2 dir="$SCRATCH/$1" got
	shift 2
	start_server "$dir" --forever "$@" || { fail "$name: no server"; return; }
	touch "$dir/go"
	sleep 0.5
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --duration 1.5 2>"$dir/rec.err"
	kill -INT $server_pid
	wait $server_pid
	if [ -z "$lead_only" ]; then
		check "$name" "$dir" launched
	else
		"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"
	fi
	got=$(python3 -c '
import json, sys
loops = json.load(open(sys.argv[1]))["loops"]
print(" ".join("%s/%s/%s" % (l["lead_role"], l["lead_from"], str(l["extend_unresolved"]).lower())
               for l in loops))' "$dir/report.json" 2>&1)
	if [ "$got" = "$lead/site/false" ]; then
		pass "$name: the lead is $lead, told by where the graphs are launched from"
	else
		fail "$name: lead role/from/unresolved $got, want $lead/site/false ($dir)"
	fi
}

# runq_waits NAME: an attach with -p keeps each thread's run-queue wait before the mark and
# at its first hit; report's late_start_ns is the wait in between, 0 for a thread that made
# a call before the mark (docs/recording-format.md, SP_REC_RUNQ)
runq_waits() {
	local name=$1 dir="$SCRATCH/$1" out
	if out=$(TESTDIR="$TOP/tests/integration" python3 - "$dir/rec.sprb" "$dir/report.json" \
		"$(head -1 "$dir/ready")" <<'PY'
import json, os, struct, sys
sys.path.insert(0, os.environ["TESTDIR"])
from recfile import records
data = open(sys.argv[1], "rb").read()
pid = int(sys.argv[3])
mark, hit = {}, {}
for off, kind, size in records(data):
    if kind == 69:
        _, _, tgid, ts, tid, when, delay = struct.unpack_from("<HHIQIIQ", data, off)
        if tgid == pid:
            (mark if when == 1 else hit)[tid] = (ts, delay)
loops = [l for l in json.load(open(sys.argv[2]))["loops"] if l["pid"] == pid]
if pid not in mark or pid not in hit or not loops:
    sys.exit(f"no wait at the mark ({len(mark)} threads) or first hit ({len(hit)}) of {pid}")
(mts, md), (hts, hd) = mark[pid], hit[pid]
want = hd - md if hts >= mts and hd >= md else 0
got = loops[0]["late_start_ns"]
print(f"{len(mark)} threads at the mark, {len(hit)} first hits, late start {got} ns")
sys.exit(0 if got == want else f"late_start_ns {got}, the records say {want}")
PY
	); then
		pass "$name: run-queue waits at the mark and first hit, and the late start: $out"
	else
		fail "$name: $out ($dir)"
	fi
}

# report -p while the loop runs, for a while, into the default recording name
live() {
	local name=$1 dir="$SCRATCH/$1" kept
	shift
	start_server "$dir" --cycles 1000000 "$@" || { fail "$name: no server"; return; }
	touch "$dir/go"
	sleep 0.3
	(cd "$dir" && "$SPECPROBE" report -p "$target" --duration 2 --json >live.json 2>live.err)
	kill -TERM $server_pid
	wait $server_pid
	kept="$dir/report-$target.sprb"
	if [ ! -s "$kept" ]; then
		fail "$name: no recording at $kept: $(tail -1 "$dir/live.err")"
		return
	fi
	"$SPECPROBE" report --json "$kept" >"$dir/offline.json" 2>/dev/null
	if [ -s "$dir/live.json" ] && cmp -s "$dir/live.json" "$dir/offline.json"; then
		pass "$name: the live report equals the report of its recording"
	else
		fail "$name: live and offline reports differ ($dir)"
	fi
	if python3 "$CHECK" --report "$dir/live.json" --inventory launched "$dir"/gt.rank*; then
		pass "$name: live cycles and boundaries equal the ground truth up to the end"
	else
		fail "$name: live report differs from the ground truth ($dir)"
		trap - EXIT
	fi
}

# one line on stderr, nothing on stdout, exit status 1
bad_input() {
	local name=$1 file=$2 out err
	out=$("$SPECPROBE" report "$file" 2>"$SCRATCH/bad.err")
	status=$?
	err=$(wc -l <"$SCRATCH/bad.err")
	if [ "$status" = 1 ] && [ -z "$out" ] && [ "$err" = 1 ]; then
		pass "$name: one line ($(cat "$SCRATCH/bad.err")), exit status 1"
	else
		fail "$name: status $status, $err lines on stderr, output '${out:0:60}'"
	fi
}

no_cycles() {
	local dir="$SCRATCH/no-cycles" rec
	start_server "$dir" --wait-at init --cycles 0 || { fail "no-cycles: no server"; return; }
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb"
	touch "$dir/go"
	wait $server_pid
	wait $rec
	if "$SPECPROBE" report "$dir/rec.sprb" 2>&1 | grep -q '^no cycles found: ' &&
		"$SPECPROBE" report --json "$dir/rec.sprb" | grep -q '"notes":\["no cycles found'; then
		pass "no-cycles: text and JSON say no cycles found"
	else
		fail "no-cycles: no explicit 'no cycles found' ($dir)"
	fi
}

from_init per-step-sync --cycles 200
from_init one-graph-event --cycles 100 --draft-mode one-graph --accept-mode event
from_init planted-deferred --cycles 100 --plant-sync 3 --pageable-copies --free-in-loop \
	--accept-mode deferred --draft-mode one-graph
from_init four-ranks --cycles 100 --ranks 4 --accept-mode event
from_init batch-sizes-k5 --cycles 100 --draft-k 5 --batch-sizes 2,4 --batch 4 --eager 0
# captured in the order of a cycle, as cudagraph trees record: the last draft step is
# captured and launched right before verify, yet it is no verify piece
from_init run-order --cycles 100 --draft-k 4 --capture-order run
from_gate gate-one-graph-event --cycles 100 --draft-mode one-graph --accept-mode event
mid_run mid-run-per-step --cycles 1500
mid_run mid-run-two-ranks-deferred --cycles 1500 --ranks 2 --accept-mode deferred
attach_cut attach-cut-extend extend
attach_cut attach-cut-one-graph extend --draft-mode one-graph --accept-mode event
lead_only=1 attach_cut attach-cut-torch draft --torch -k 5
live live-one-graph-deferred --draft-mode one-graph --accept-mode deferred
# loop variants of newer servers: eager drafts, extra draft steps, piecewise verify,
# batch schedules, planted syncs
if "$SERVER" --help | grep -q -- --verify-pieces; then
	from_init eager-pieces --cycles 100 --draft-mode eager --verify-pieces 2 \
		--batch-schedule 1,4,4
	from_init extra-draft-schedule --cycles 100 --extra-draft-every 3 --batch-schedule 1,2 \
		--accept-mode deferred
	from_init one-graph-pieces-ranks --cycles 60 --draft-mode one-graph --verify-pieces 4 \
		--ranks 2 --accept-mode event
	from_init plants --cycles 100 --plant ctx@draft-verify/5 --plant stream@accept \
		--plant event@after-verify/2 --plant free@extend/3 --clean-syncs
	from_init plants-deferred --cycles 100 --accept-mode deferred \
		--plant sync-copy@after-verify/3 --plant legacy@extend/2 --plant event@accept
	# uncaptured pieces cannot be told from draft steps (docs/report-json.md, Limits)
	mid_run mid-run-eager --cycles 1500 --draft-mode eager --plant stream@accept
	mid_run mid-run-schedule-deferred --cycles 1500 --batch-schedule 1,2,4 \
		--accept-mode deferred --extra-draft-every 4
fi
# no graph at all: eager draft tokens with a sync each, an eager verify, the KV trim
if "$SERVER" --help | grep -q -- --eager-loop; then
	from_init eager-loop --cycles 100 --eager-loop --draft-k 6
	# draft = target: the same kernels, only the loop's structure tells them apart
	from_init eager-same --cycles 100 --eager-loop --eager-same --draft-k 6
	# the trim's kernels run on into the next draft's first forward: split from it
	from_init eager-same-joined --cycles 100 --eager-loop --eager-same --draft-k 6 \
		--eager-trim-joined
	from_init eager-two-ranks --cycles 60 --eager-loop --ranks 2 --draft-k 4 --eager-trim-joined
	from_gate gate-eager-plants --cycles 100 --eager-loop --draft-k 5 \
		--plant ctx@after-verify/3 --plant stream@accept/4 --plant free@extend/5
	mid_run mid-run-eager-loop --cycles 1500 --eager-loop --eager-same
	runq_waits mid-run-eager-loop
	# as PyTorch runs it eagerly: the legacy stream, tolist() into pageable memory, the
	# trim's fill kernels running on into the next draft
	from_init eager-torch --cycles 100 --eager-loop --torch --draft-k 6
	from_init eager-torch-same-ranks --cycles 60 --eager-loop --torch --eager-same --ranks 2 \
		--draft-k 4
	mid_run mid-run-eager-torch --cycles 1500 --eager-loop --torch --eager-same
	# draft = target drafting at most two tokens: the steps rarely follow one another, so
	# only the call sites of the syncs (the token reads, the accept) tell the verify
	expect_from=eager-sites from_init eager-same-k2 --cycles 100 --eager-loop --eager-same \
		--draft-k 2
	expect_from=eager-sites from_init eager-same-k2-ranks --cycles 60 --eager-loop \
		--eager-same --draft-k 2 --ranks 2 --eager-trim-joined
	# without call sites the loop's structure tells them, as it did before sites were read
	expect_from=eager-steps no_stacks eager-same-no-stacks --cycles 100 --eager-loop \
		--eager-same --draft-k 6
	expect_from=eager-launches no_stacks eager-loop-no-stacks --cycles 100 --eager-loop \
		--draft-k 6
fi
# graph draft steps and extend, the verify forward eager (a batch too large for the graphs)
if "$SERVER" --help | grep -q -- --verify-mode; then
	expect_from=eager-graphs from_init eager-verify --cycles 100 --verify-mode eager \
		--draft-k 4
	expect_from=eager-graphs from_init eager-verify-ranks --cycles 60 --verify-mode eager \
		--ranks 2 --draft-k 3 --batch-schedule 1,2 --accept-mode event
	expect_from=eager-graphs from_init eager-verify-deferred --cycles 100 --verify-mode eager \
		--accept-mode deferred --extra-draft-every 3 --plant stream@after-verify/4
	# attached after capture: graph sizes unknown, the verify's layers tell it
	expect_from=eager-graphs mid_run mid-run-eager-verify --cycles 1500 --verify-mode eager \
		--draft-k 4
	expect_from=eager-graphs mid_run mid-run-eager-verify-ranks --cycles 1500 \
		--verify-mode eager --draft-k 4 --ranks 2 --accept-mode event
fi
no_cycles
good="$SCRATCH/per-step-sync/rec.sprb"
# of two cuts one byte apart, at least one falls inside a record
for cut in $(($(stat -c %s "$good") / 2)) $(($(stat -c %s "$good") / 2 + 1)); do
	head -c "$cut" "$good" >"$SCRATCH/cut.sprb"
	"$SPECPROBE" report "$SCRATCH/cut.sprb" 2>&1 >/dev/null | grep -q "inside a record" && break
done
# the part before the cut reported, the cut said in one warning line
if "$SPECPROBE" report "$SCRATCH/cut.sprb" >"$SCRATCH/cut.txt" 2>"$SCRATCH/cut.err" &&
	grep -q "^specprobe report:" "$SCRATCH/cut.txt" && [ "$(wc -l <"$SCRATCH/cut.err")" = 1 ] &&
	grep -q "^specprobe: warning: .*inside a record: read up to" "$SCRATCH/cut.err"; then
	pass "truncated: reported up to the cut, one line: $(cat "$SCRATCH/cut.err")"
else
	fail "truncated: $(cat "$SCRATCH/cut.err")"
fi
echo "not a recording" >"$SCRATCH/garbage.sprb"
bad_input garbage "$SCRATCH/garbage.sprb"
finish
