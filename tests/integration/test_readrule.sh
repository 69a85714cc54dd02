#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# One reading rule for every reader: a recording cut inside a record reads up to its last whole
# record (exit 0, one warning line); calls of unknown cookies are kept and counted, records seen
# twice read once, stamps gone back counted, a ring's missing segment read across and counted;
# a call of a pid never traced is kept and left out of the analyses, calls removed from the middle
# are counted by their threads' call numbers.
source "$(dirname "$0")/lib.sh"
dir="$SCRATCH/rr"
mkdir -p "$dir"
check() { PYTHONPATH=$TOP/tests/integration python3 "$TOP/tests/integration/check_readrule.py" "$@"; }

"$SPECPROBE" record -o "$dir/a.sprb" -- "$SERVER" -q --cycles 4 --ranks 2 >/dev/null 2>&1
if [ ! -s "$dir/a.sprb" ]; then
	fail "no recording to work on"
	finish
fi
"$SPECPROBE" dump --json "$dir/a.sprb" >"$dir/a.jsonl" 2>/dev/null
"$SPECPROBE" report --json "$dir/a.sprb" >"$dir/a.json" 2>"$dir/a.err"
whole_calls=$(wc -l <"$dir/a.jsonl")
whole_unret=$(check recording_field "$dir/a.json" unreturned)
if [ -s "$dir/a.err" ] || [ "$(check input_field "$dir/a.json" cut_at)" != None ]; then
	fail "a sound recording: $(head -2 "$dir/a.err")"
fi

# warnings FILE: the number of warning lines in it
warnings() { grep -c "^specprobe: warning:" "$1"; }
errors() { grep -c "^specprobe: error:" "$1"; }

# cuts inside records, and at the boundary before each: every reader exit 0 and one warning
# line (cut inside a record, or no end record); dump gives the calls whose entry lies whole before
# the cut. merge says it of its output too (no end), and of a cut in its own line.
bad="" runs=0
while read -r inside boundary; do
	for at in $inside $boundary; do
		head -c "$at" "$dir/a.sprb" >"$dir/cut.sprb"
		if [ "$at" = "$inside" ]; then
			said="truncated at byte $boundary, inside a record"
		else
			said="no end record: its recorder was killed"
		fi
		for r in "report" "report --json" "dump --json" "export -o $dir/x.pftrace --force" \
			"top --replay" "diff" "merge -o $dir/m.sprb --force"; do
			runs=$((runs + 1))
			case $r in
			top*) $SPECPROBE top --replay "$dir/cut.sprb" --batch --speed 0 ;;
			diff) $SPECPROBE diff "$dir/a.sprb" "$dir/cut.sprb" ;;
			*) $SPECPROBE $r "$dir/cut.sprb" ;;
			esac >"$dir/out" 2>"$dir/err"
			rc=$?
			w=$(grep -c "$said" "$dir/err")
			want=1
			# diff of a prefix with no whole cycle has nothing to compare: its own one error
			if [ "$r" = diff ] && [ $rc = 1 ] && [ "$(errors "$dir/err")" = 1 ] &&
				grep -q "no cycles found" "$dir/err"; then
				rc=0
			fi
			nw=$(grep -c "^specprobe: warning:" "$dir/err")
			# merge: the merge has no end as its input had none, and a cut is its own line
			if [ "${r%% *}" = merge ]; then
				[ "$at" = "$boundary" ] && w=$(grep -c "not every input ended" "$dir/err")
				[ "$at" = "$inside" ] && nw=$((nw - 1))
			fi
			if [ $rc != 0 ] || [ "$w" != "$want" ] || [ "$nw" != "$want" ]; then
				bad="$bad; $r cut at $at: exit $rc, $nw warnings: $(head -2 "$dir/err" | tr '\n' '|')"
			fi
		done
		"$SPECPROBE" dump --json "$dir/cut.sprb" >"$dir/cut.jsonl" 2>/dev/null
		msg=$(check same_prefix "$dir/a.sprb" "$dir/cut.sprb" "$dir/cut.jsonl" "$dir/a.jsonl") ||
			bad="$bad; dump cut at $at: $msg"
	done
done < <(check cut_points "$dir/a.sprb" 12)
if [ -z "$bad" ] && [ $runs = 168 ]; then
	pass "cut at 12 offsets inside records and at the boundaries before them: report, --json, dump, export, top, diff, merge: $runs runs exit 0, one warning line (cut inside a record, or no end record); dump's calls are those before the cut, as in the whole"
else
	fail "cuts: $runs runs; ${bad#; }"
fi

# an unknown cookie: the call is kept (dump), counted (report --json), and merge keeps it too
read -r pid tid seq < <(check unknown_cookie "$dir/a.sprb" "$dir/cookie.sprb")
"$SPECPROBE" dump --json "$dir/cookie.sprb" >"$dir/cookie.jsonl" 2>"$dir/cookie.derr"
"$SPECPROBE" report --json "$dir/cookie.sprb" >"$dir/cookie.json" 2>"$dir/cookie.err"
rc=$?
"$SPECPROBE" merge "$dir/cookie.sprb" -o "$dir/cookie-m.sprb" --force 2>"$dir/cookie.merr"
mrc=$?
"$SPECPROBE" report --json "$dir/cookie-m.sprb" >"$dir/cookie-m.json" 2>/dev/null
unknown=$(check input_field "$dir/cookie.json" unknown_cookie_calls)
calls=$(check recording_field "$dir/cookie.json" calls)
kept=$(grep -c "\"pid\":$pid,\"tid\":$tid,\"seq\":$seq," "$dir/cookie.jsonl")
if [ $rc = 0 ] && [ "$unknown" = 1 ] && [ $((calls + unknown)) = "$whole_calls" ] &&
	[ "$(wc -l <"$dir/cookie.jsonl")" = "$whole_calls" ] && [ "$kept" = 1 ] &&
	[ "$(warnings "$dir/cookie.err")" = 1 ] && grep -q "1 calls of probes the recording does not describe" "$dir/cookie.err" &&
	[ "$(warnings "$dir/cookie.derr")" = 1 ] &&
	[ $mrc = 0 ] && grep -q "1 calls of probes the recording does not describe" "$dir/cookie.merr" &&
	[ "$(check input_field "$dir/cookie-m.json" unknown_cookie_calls)" = 1 ]; then
	pass "a call of an unknown cookie: kept by dump ($whole_calls calls), counted by report (input.unknown_cookie_calls 1, $calls analysed + 1 = the recording's), one warning; merge keeps it and warns"
else
	fail "unknown cookie: exit $rc/$mrc, unknown $unknown, calls $calls of $whole_calls, kept $kept: $(cat "$dir/cookie.err" "$dir/cookie.merr" | head -3 | tr '\n' '|')"
fi

# records written twice: read once, counted, no phantom unreturned call
planted=$(check duplicate "$dir/a.sprb" "$dir/dup.sprb" 7)
"$SPECPROBE" report --json "$dir/dup.sprb" >"$dir/dup.json" 2>"$dir/dup.err"
rc=$?
"$SPECPROBE" dump --json "$dir/dup.sprb" >"$dir/dup.jsonl" 2>/dev/null
dups=$(check input_field "$dir/dup.json" duplicate_records)
if [ $rc = 0 ] && [ "$planted" -gt 2 ] && [ "$dups" = "$planted" ] &&
	[ "$(check recording_field "$dir/dup.json" unreturned)" = "$whole_unret" ] &&
	[ "$(check recording_field "$dir/dup.json" calls)" = "$(check recording_field "$dir/a.json" calls)" ] &&
	cmp -s "$dir/dup.jsonl" "$dir/a.jsonl" && [ "$(warnings "$dir/dup.err")" = 1 ] &&
	grep -q "$planted records seen twice" "$dir/dup.err"; then
	pass "$planted records written twice: input.duplicate_records $dups, the same calls and $whole_unret unreturned as the sound recording, dump identical, one warning"
else
	fail "duplicates: exit $rc, $planted planted, $dups counted, unreturned $(check recording_field "$dir/dup.json" unreturned) (sound: $whole_unret): $(head -2 "$dir/dup.err" | tr '\n' '|')"
fi

# a stamp gone back: the call kept, counted once
read -r pid tid seq < <(check back_in_time "$dir/a.sprb" "$dir/ooo.sprb")
"$SPECPROBE" report --json "$dir/ooo.sprb" >"$dir/ooo.json" 2>"$dir/ooo.err"
rc=$?
"$SPECPROBE" dump --json "$dir/ooo.sprb" >"$dir/ooo.jsonl" 2>/dev/null
if [ $rc = 0 ] && [ "$(check input_field "$dir/ooo.json" out_of_order)" = 1 ] &&
	[ "$(wc -l <"$dir/ooo.jsonl")" = "$whole_calls" ] && [ "$(warnings "$dir/ooo.err")" = 1 ] &&
	grep -q "1 records stamped before their thread's previous one" "$dir/ooo.err"; then
	pass "a call stamped before its thread's previous record: kept ($whole_calls calls), input.out_of_order 1, one warning"
else
	fail "out of order: exit $rc, $(check input_field "$dir/ooo.json" out_of_order) counted: $(head -2 "$dir/ooo.err" | tr '\n' '|')"
fi

# every_reader NAME FILE: each reader on FILE; "" when each exits 0 with exactly one warning line
# (WANT_WARNING in it), else what went wrong
every_reader() {
	local name=$1 f=$2 r rc bad=""
	for r in "report" "report --json" "dump --json" "export -o $dir/x.pftrace --force" \
		"top --replay" "diff" "merge -o $dir/m.sprb --force"; do
		case $r in
		top*) $SPECPROBE top --replay "$f" --batch --speed 0 ;;
		diff) $SPECPROBE diff "$dir/a.sprb" "$f" ;;
		*) $SPECPROBE $r "$f" ;;
		esac >"$dir/$name.out" 2>"$dir/$name.err"
		rc=$?
		# merge writes what it read: its warning is its inputs' own, if any
		if [ $rc != 0 ] || { [ "${r%% *}" != merge ] && { [ "$(warnings "$dir/$name.err")" != 1 ] ||
			! grep -q "$WANT_WARNING" "$dir/$name.err"; }; }; then
			bad="$bad; $r: exit $rc, $(warnings "$dir/$name.err") warnings: $(head -2 "$dir/$name.err" | tr '\n' '|')"
		fi
	done
	echo "${bad#; }"
}

# a call of a pid the recording never saw (byte 3 of its pid set: the reader crashed on it)
read -r pid tid seq < <(check unseen_pid "$dir/a.sprb" "$dir/pid.sprb")
WANT_WARNING="1 calls of processes the recording does not describe"
bad=$(every_reader pid "$dir/pid.sprb")
"$SPECPROBE" report --json "$dir/pid.sprb" >"$dir/pid.json" 2>/dev/null
"$SPECPROBE" report "$dir/pid.sprb" >"$dir/pid.txt" 2>/dev/null
"$SPECPROBE" dump --json "$dir/pid.sprb" >"$dir/pid.jsonl" 2>/dev/null
calls=$(check recording_field "$dir/pid.json" calls)
if [ -z "$bad" ] && [ "$(check input_field "$dir/pid.json" unknown_process_calls)" = 1 ] &&
	[ "$(check input_field "$dir/pid.json" missing_calls)" = 0 ] &&
	[ $((calls + 1)) = "$whole_calls" ] && [ "$(wc -l <"$dir/pid.jsonl")" = "$whole_calls" ] &&
	grep -q "^  input: 1 calls of undescribed processes" "$dir/pid.txt"; then
	pass "a call of pid $((pid | 1 << 24)) (never traced): every reader exit 0 and one warning; kept by dump, left out of the analyses ($calls + 1 = $whole_calls), input.unknown_process_calls 1, none counted missing"
else
	fail "unseen pid: ${bad:-counted $(check input_field "$dir/pid.json" unknown_process_calls), $calls analysed of $whole_calls}"
fi

# ten consecutive calls of one thread taken out: its call numbers skip them
n=$(check remove_calls "$dir/a.sprb" "$dir/gone.sprb" 10)
WANT_WARNING="$n calls missing: their threads' call numbers skip them"
bad=$(every_reader gone "$dir/gone.sprb")
"$SPECPROBE" report --json "$dir/gone.sprb" >"$dir/gone.json" 2>/dev/null
"$SPECPROBE" report "$dir/gone.sprb" >"$dir/gone.txt" 2>/dev/null
if [ -z "$bad" ] && [ "$(check input_field "$dir/gone.json" missing_calls)" = "$n" ] &&
	grep -q "^  input: $n calls missing (call numbers skip)" "$dir/gone.txt"; then
	pass "$n calls of one thread removed: input.missing_calls $n, the text report's input line, one warning from every reader"
else
	fail "removed calls: ${bad:-$(check input_field "$dir/gone.json" missing_calls) counted of $n}"
fi

# a run of 4 KiB of whole records taken out of the middle
read -r gone seen < <(check remove_run "$dir/a.sprb" "$dir/run.sprb" 4096)
WANT_WARNING="$seen calls missing: their threads' call numbers skip them"
bad=$(every_reader run "$dir/run.sprb")
"$SPECPROBE" report --json "$dir/run.sprb" >"$dir/run.json" 2>/dev/null
if [ -z "$bad" ] && [ "$seen" -gt 0 ] &&
	[ "$(check input_field "$dir/run.json" missing_calls)" = "$seen" ]; then
	pass "4 KiB of records removed ($gone calls, $seen of them with a later call of their thread): input.missing_calls $seen, one warning from every reader"
else
	fail "removed run: ${bad:-$(check input_field "$dir/run.json" missing_calls) counted of $seen}"
fi

# a ring with a middle segment gone: the segments before and after read, the gap stated
ring="$dir/ring"
mkdir -p "$ring"
"$SPECPROBE" record -o "$ring/rec.sprb" --max-size 256K -- "$SERVER" -q --cycles 300 --ranks 2 \
	>/dev/null 2>"$ring/rec.err"
segs=$(ls "$ring" | sed -n 's/^rec\.sprb\.\([0-9]*\)$/\1/p' | sort -n)
low=$(echo "$segs" | head -1)
n=$(echo "$segs" | wc -l)
if [ "$n" -lt 3 ]; then
	fail "ring: $n segments, 3 needed: $(tail -1 "$ring/rec.err")"
else
	gone=$((low + 1))
	"$SPECPROBE" dump --json "$ring/rec.sprb" >"$ring/whole.jsonl" 2>/dev/null
	"$SPECPROBE" dump --json "$ring/rec.sprb.$gone" >"$ring/gone.jsonl" 2>/dev/null
	mv "$ring/rec.sprb.$gone" "$ring/kept-aside"
	"$SPECPROBE" dump --json "$ring/rec.sprb" >"$ring/gap.jsonl" 2>"$ring/gap.derr"
	"$SPECPROBE" report --json "$ring/rec.sprb" >"$ring/gap.json" 2>"$ring/gap.err"
	rc=$?
	lost=$(wc -l <"$ring/gone.jsonl")
	msg=$(PYTHONPATH=$TOP/tests/integration python3 - "$ring" <<'PY'
import sys
from check_readrule import keys
d = sys.argv[1]
whole, gone, gap = (set(keys(f"{d}/{n}.jsonl")) for n in ("whole", "gone", "gap"))
if gap != whole - gone:
    print(f"{len(gap)} calls read, {len(whole - gone)} expected")
PY
)
	if [ $rc = 0 ] && [ -z "$msg" ] && [ "$lost" -gt 0 ] &&
		[ "$(check input_field "$ring/gap.json" ring_gaps)" = 1 ] &&
		[ "$(check input_field "$ring/gap.json" ring_gap_calls)" = "$lost" ] &&
		[ "$(warnings "$ring/gap.err")" = 1 ] && [ "$(warnings "$ring/gap.derr")" = 1 ] &&
		grep -q "rec.sprb.$gone: 1 segment missing from the set: the $lost calls held there are lost" "$ring/gap.err"; then
		pass "ring of $n segments, rec.sprb.$gone removed: every call of the others read, input.ring_gaps 1 and ring_gap_calls $lost (what that file held), one warning naming it"
	else
		fail "ring gap: exit $rc, $msg, $(check input_field "$ring/gap.json" ring_gap_calls) of $lost lost: $(head -2 "$ring/gap.err" | tr '\n' '|')"
	fi
	# merge reads the set by the same rule: the same calls, the gap said
	"$SPECPROBE" merge "$ring/rec.sprb" -o "$ring/m.sprb" --force 2>"$ring/m.err"
	rc=$?
	"$SPECPROBE" dump --json "$ring/m.sprb" 2>/dev/null | sed 's/"ts_[a-z]*":[0-9]*,//g' |
		sort >"$ring/m.jsonl"
	sed 's/"ts_[a-z]*":[0-9]*,//g' "$ring/gap.jsonl" | sort >"$ring/gap-sorted.jsonl"
	if [ $rc = 0 ] && cmp -s "$ring/m.jsonl" "$ring/gap-sorted.jsonl" &&
		grep -q "rec.sprb.$gone: 1 segment missing from the set: the $lost calls held there are lost" "$ring/m.err"; then
		pass "merge of that set: the same calls as its readers read, the gap warned"
	else
		fail "merge of the set with a gap: exit $rc, $(wc -l <"$ring/m.jsonl") calls of $(wc -l <"$ring/gap.jsonl"): $(grep warning "$ring/m.err" | head -2 | tr '\n' '|')"
	fi
fi
finish
