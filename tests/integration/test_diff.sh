#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# specprobe diff on the simulated server: its p50s, noise floor, interval and verdict are
# what the server's own truth of the same runs gives (two runs of one setting differ as much
# as the machine made them differ, and diff must say so exactly when the truth does); a
# planted sync that drains the GPU every cycle makes B slower in the truth and diff finds
# it; replicate recordings and the between-run spread they give the noise floor; setup
# differences; bad input.
source "$(dirname "$0")/lib.sh"
CHECK=$TOP/tests/integration/check_diff.py
# host preparation (250 us) hides behind each draft step's GPU time (400 us) unless a sync
# has just drained the GPU: the planted sync costs the GPU that preparation, every cycle
LOOP=(--cycles 300 --draft-us 400 --host-us 250)

# trace NAME SERVER_ARGS...: from before cuInit into $SCRATCH/NAME/rec.sprb, then report it
trace() {
	local dir="$SCRATCH/$1"
	shift
	start_server "$dir" --wait-at init "$@" || return 1
	record_whole_run "$dir"
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json"
}

# against_truth NAME A B [slower|faster [a|b]]: diff --json A B against both truths; the
# verdict expected is the truth's; with a direction, the truth has B so (a planted change);
# with a side, that side's server planted a sync, which the flagged sites compare
against_truth() {
	local name=$1 a="$SCRATCH/$2" b="$SCRATCH/$3" out="$SCRATCH/$1.json" shows=()
	[ -n "$4" ] && shows=(--truth-shows "$4")
	[ -n "$5" ] && shows+=(--planted "$5")
	if ! "$SPECPROBE" diff --json "$a/rec.sprb" "$b/rec.sprb" >"$out" 2>"$out.err"; then
		fail "$name: diff failed: $(head -1 "$out.err")"
		return
	fi
	if python3 "$CHECK" --diff "$out" --a "$a" --b "$b" "${shows[@]}" >"$out.check"; then
		pass "$name: p50s, floor, interval and verdict as the truth gives: $(tac \
			"$out.check" | tr '\n' '|')"
	else
		cat "$out.check"
		fail "$name: diff disagrees with the ground truth ($out)"
		trap - EXIT
	fi
}

# the text of A B: within 100 columns, the same twice (fixed seed), and it names the
# verdict of JSON (diff --json of the same pair, checked against the truth)
text_output() {
	local a="$SCRATCH/$1/rec.sprb" b="$SCRATCH/$2/rec.sprb" t1 t2 verdict
	t1=$("$SPECPROBE" diff "$a" "$b")
	t2=$("$SPECPROBE" diff "$a" "$b")
	verdict=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))
		["verdict"]["verdict"])' "$3")
	if [ -n "$t1" ] && [ "$t1" = "$t2" ] && ! echo "$t1" | grep -q '.\{101\}' &&
		echo "$t1" | grep -q "^  verdict: $verdict"; then
		pass "text: reproducible, within 100 columns, verdict $verdict as in the JSON"
	else
		fail "text: $(echo "$t1" | grep verdict), JSON $verdict"
	fi
}

# replicates NAME B A A2...: diff --json A B --also-a A2...; the recordings, their spread and
# the floor it sets are shown, and p50s, floor and verdict are the truth's
replicates() {
	local name=$1 b="$SCRATCH/$2/rec.sprb" a="$SCRATCH/$3/rec.sprb" bdir="$SCRATCH/$2" out
	local also=() dirs=("$SCRATCH/$3")
	out="$SCRATCH/$name.json"
	shift 3
	for r in "$@"; do
		also+=(--also-a "$SCRATCH/$r/rec.sprb")
		dirs+=("$SCRATCH/$r")
	done
	if ! "$SPECPROBE" diff --json "$a" "$b" "${also[@]}" >"$out" 2>"$out.err"; then
		fail "$name: diff failed: $(head -1 "$out.err")"
		return
	fi
	python3 "$CHECK" --diff "$out" --a "${dirs[@]}" --b "$bdir" >"$out.check"
	local truth_ok=$?
	if [ $truth_ok = 0 ] && python3 - "$out" $(($# + 1)) <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
t, runs, spread = d["cycle_time"], d["recordings"], d["between_run_spread_ns"]
p50s = [r["p50_ns"] for r in runs["a"]]
ok = len(p50s) == int(sys.argv[2]) and len(runs["b"]) == 1
ok = ok and t["cycles"]["a"] == sum(r["cycles"] for r in runs["a"])
ok = ok and abs(spread - (max(p50s) - min(p50s))) < 1
floor = max(0.03 * t["p50_ns"]["a"], 0.25 * (t["iqr_ns"]["a"] + t["iqr_ns"]["b"]) / 2,
            2 * spread)
ok = ok and abs(t["noise_floor_ns"] - floor) < 1
ms = [f"{p / 1e6:.3f}" for p in p50s]
print(f"  p50s {' '.join(ms)} ms, spread {spread / 1e6:.3f} ms, floor "
      f"{t['noise_floor_ns'] / 1e6:.3f} ms, change {t['p50_ns']['change'] / 1e6:+.3f} ms: "
      f"{t['verdict']}")
sys.exit(0 if ok else 1)
PY
		pass "$name: A and $# more, between-run spread in the floor, verdict as the truth gives: $(
			tail -1 "$out.check")"
	else
		cat "$out.check" 2>/dev/null
		fail "$name: recordings, spread or verdict wrong ($out)"
	fi
}

# the text: each recording's p50 and the spread with replicates; without, that it is unmeasured
replicates_text() {
	local one two
	one=$("$SPECPROBE" diff "$SCRATCH/$1/rec.sprb" "$SCRATCH/$2/rec.sprb")
	two=$("$SPECPROBE" diff "$SCRATCH/$1/rec.sprb" "$SCRATCH/$2/rec.sprb" \
		--also-a "$SCRATCH/$3/rec.sprb")
	if echo "$one" | grep -q '^  one recording per side: between-run variation not measured' &&
		echo "$two" | grep -q '^  A2 = .*(300 cycles, p50 [0-9.]* ms)$' &&
		echo "$two" | grep -q '^  between-run spread: [0-9.]* ms' &&
		! echo "$two" | grep -q '.\{101\}'; then
		pass "text: one recording per side said; replicates' p50s and spread shown"
	else
		fail "text with replicates: $(echo "$two" | grep -m1 spread)"
	fi
}

# a run with two ranks and five draft steps: the setup rows say so
setup_differs() {
	local out="$SCRATCH/setup.json"
	"$SPECPROBE" diff --json "$SCRATCH/$1/rec.sprb" "$SCRATCH/$2/rec.sprb" >"$out"
	if python3 - "$out" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
differs, s = d["setup"]["differs"], d["setup"]
ok = {"ranks", "loops", "draft_graphs"} <= set(differs)
ok = ok and s["a"]["ranks"] is None and s["b"]["ranks"] == 2 and s["b"]["loops"] == 2
ok = ok and d["phases"]["draft"]["launches"]["change"] == 2.0
ok = ok and d["loops_paired_by"] == "position" and len(d["loops"]) == 2
ok = ok and d["loops"][1]["a"] is None and d["loops"][1]["verdict"] is None
sys.exit(0 if ok else 1)
PY
		pass "setup: ranks, loops and draft graphs differ; two more draft launches per cycle"
	else
		fail "setup: differences not shown ($out)"
	fi
}

# one line on stderr, nothing on stdout, exit status 1
bad_input() {
	local name=$1 a=$2 b=$3 out status lines
	out=$("$SPECPROBE" diff "$a" "$b" 2>"$SCRATCH/bad.err")
	status=$?
	lines=$(wc -l <"$SCRATCH/bad.err")
	if [ "$status" = 1 ] && [ -z "$out" ] && [ "$lines" = 1 ]; then
		pass "$name: one line ($(cat "$SCRATCH/bad.err")), exit status 1"
	else
		fail "$name: status $status, $lines lines on stderr, output '${out:0:60}'"
	fi
}

trace same-1 "${LOOP[@]}" || fail "same-1: no server"
trace same-2 "${LOOP[@]}" || fail "same-2: no server"
trace same-3 "${LOOP[@]}" || fail "same-3: no server"
trace planted "${LOOP[@]}" --plant-sync 1 || fail "planted: no server"
trace ranks-k5 --cycles 100 --ranks 2 --draft-k 5 || fail "ranks-k5: no server"
trace k5 "${LOOP[@]}" --draft-k 5 || fail "k5: no server"
trace no-cycles --cycles 0 || fail "no-cycles: no server"

against_truth same-setting same-1 same-2
against_truth planted-sync same-1 planted slower b
against_truth planted-reversed planted same-2 faster a
# two more draft steps a cycle: B slower by every row, one verdict of them all
against_truth k3-k5 same-1 k5 slower
text_output same-1 planted "$SCRATCH/planted-sync.json"
replicates replicates-same same-3 same-1 same-2
replicates replicates-planted planted same-1 same-2
# runs of "one setting" that disagree by the planted sync: their spread raises the floor
replicates replicates-disagree same-3 same-1 planted
replicates_text same-1 planted same-2
setup_differs same-1 ranks-k5

good="$SCRATCH/same-1/rec.sprb"
bad_input missing "$SCRATCH/nonexistent.sprb" "$good"
for cut in $(($(stat -c %s "$good") / 2)) $(($(stat -c %s "$good") / 2 + 1)); do
	head -c "$cut" "$good" >"$SCRATCH/cut.sprb"
	"$SPECPROBE" report "$SCRATCH/cut.sprb" 2>&1 >/dev/null | grep -q "inside a record" && break
done
# a cut recording compares up to its cut, said in one warning line
if "$SPECPROBE" diff "$good" "$SCRATCH/cut.sprb" >"$SCRATCH/cut.txt" 2>"$SCRATCH/cut.err" &&
	[ -s "$SCRATCH/cut.txt" ] && [ "$(wc -l <"$SCRATCH/cut.err")" = 1 ] &&
	grep -q "^specprobe: warning: .*inside a record: read up to" "$SCRATCH/cut.err"; then
	pass "truncated: compared up to the cut, one line: $(cat "$SCRATCH/cut.err")"
else
	fail "truncated: $(cat "$SCRATCH/cut.err")"
fi
echo "not a recording" >"$SCRATCH/garbage.sprb"
bad_input garbage "$SCRATCH/garbage.sprb" "$good"
bad_input no-cycles "$good" "$SCRATCH/no-cycles/rec.sprb"
finish
