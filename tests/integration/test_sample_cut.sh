#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# tools/sample/sample_cut: a whole recording cut into --sample windows. Against its input: the
# windows sit where the options put them and alternate, no launch is left outside one, every
# launch inside one and every other call is kept whole, each thread numbers its calls 1, 2, 3
# ... again and a call a dropped launch enclosed hangs from that launch's parent; the output
# reads without a warning. On specsim's eager loop and on the H100 Hugging Face recording.
source "$(dirname "$0")/lib.sh"
CUT=$TOP/.output/sample/sample_cut
CHECK=$TOP/tests/integration/check_sample_cut.py

# cut_check NAME IN ON EVERY PHASE [NESTED]: cut IN, check the output against it
cut_check() {
	local name=$1 in=$2 on=$3 every=$4 phase=$5 nested=$6 dir="$SCRATCH/$1" line got
	mkdir -p "$dir"
	if ! "$CUT" "$in" "$dir/cut.sprb" --on "$on" --every "$every" --phase "$phase" \
		2>"$dir/cut.err"; then
		fail "$name: sample_cut failed: $(cat "$dir/cut.err")"
		return
	fi
	"$SPECPROBE" dump --json "$in" >"$dir/in.jsonl" 2>/dev/null
	"$SPECPROBE" dump --json "$dir/cut.sprb" >"$dir/out.jsonl" 2>/dev/null
	if ! got=$(python3 "$CHECK" "$in" "$dir/cut.sprb" "$dir/in.jsonl" "$dir/out.jsonl" \
		"$on" "$every" "$phase" $nested); then
		echo "$got"
		fail "$name: the cut differs from what --on $on --every $every --phase $phase make"
		return
	fi
	pass "$name: $got"
	# the tool's own count: "W windows, K launches kept, D launches dropped"
	line=$(cat "$dir/cut.err")
	read -r w k n <<<"$(python3 -c '
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
print(sys.argv[3].split()[0], sum(1 for c in calls if "name" in c and c["class"] == "launch"),
      sum(1 for l in open(sys.argv[2]) if json.loads(l).get("class") == "launch"))
' "$dir/out.jsonl" "$dir/in.jsonl" "$got")"
	if [ "$line" = "sample_cut: $w windows, $k launches kept, $((n - k)) launches dropped" ]; then
		pass "$name: its line says what it kept ($line)"
	else
		fail "$name: its line says '$line', the output holds $w windows, $k of $n launches"
	fi
	if "$SPECPROBE" report "$dir/cut.sprb" >/dev/null 2>"$dir/report.err" &&
		[ ! -s "$dir/report.err" ]; then
		pass "$name: report reads the cut without a warning"
	else
		fail "$name: report on the cut: $(head -3 "$dir/report.err")"
	fi
}

dir=$SCRATCH/eager
start_server "$dir" --cycles 60 --eager-loop --torch -k 5 && record_whole_run "$dir"
if [ ! -s "$dir/rec.sprb" ]; then
	fail "specsim: no recording ($(tail -1 "$dir/rec.err"))"
	finish
	exit
fi
REC=$dir/rec.sprb
cut_check eager "$REC" 5 20 0
cut_check eager-phase "$REC" 3 50 7

# a launch that encloses the call after it, once outside every window and once inside
"$SPECPROBE" dump --json "$REC" >"$SCRATCH/rec.jsonl" 2>/dev/null
if PYTHONPATH=$TOP/tests/integration python3 "$CHECK" nest "$REC" "$SCRATCH/rec.jsonl" 5 20 0 \
	"$SCRATCH/nested.sprb" "$SCRATCH/nested.json"; then
	cut_check nested "$SCRATCH/nested.sprb" 5 20 0 "$SCRATCH/nested.json"
else
	fail "nested: no launch to nest a call under"
fi

# the shared H100 recording of Hugging Face's assisted generation (about 139 k launches)
xz -dc "$TOP/docs/results/hf-assisted-rand.sprb.xz" >"$SCRATCH/hf.sprb"
cut_check hf-rand "$SCRATCH/hf.sprb" 10 100 0

# bad input: one line, exit 1, nothing written
bad() {
	local name=$1 out=$SCRATCH/bad.sprb
	shift
	rm -f "$out"
	if "$CUT" "$@" 2>"$SCRATCH/bad.err"; then
		fail "$name: exit 0"
	elif [ "$(wc -l <"$SCRATCH/bad.err")" != 1 ] || [ -e "$out" ]; then
		fail "$name: $(wc -l <"$SCRATCH/bad.err") lines, output left: $(ls "$out" 2>&1)"
	else
		pass "$name: $(cat "$SCRATCH/bad.err")"
	fi
}
echo "not a recording" >"$SCRATCH/text"
bad "not a recording" "$SCRATCH/text" "$SCRATCH/bad.sprb" --on 5 --every 20
bad "no such file" "$SCRATCH/none.sprb" "$SCRATCH/bad.sprb" --on 5 --every 20
bad "on not under every" "$REC" "$SCRATCH/bad.sprb" --on 20 --every 20
bad "on not a number" "$REC" "$SCRATCH/bad.sprb" --on 5x --every 20
bad "no --every" "$REC" "$SCRATCH/bad.sprb" --on 5
bad "cut already" "$SCRATCH/eager/cut.sprb" "$SCRATCH/bad.sprb" --on 5 --every 20
# a corrupt record size in the middle; and a file cut inside its 1000th record
python3 -c '
import sys
sys.path.insert(0, sys.argv[4])
import recfile
d = bytearray(open(sys.argv[1], "rb").read())
off = [r[0] for r in recfile.records(d)]
open(sys.argv[3], "wb").write(d[:off[1000] + 5])
d[off[100] + 2:off[100] + 4] = (3).to_bytes(2, "little")
open(sys.argv[2], "wb").write(d)' "$REC" "$SCRATCH/corrupt.sprb" "$SCRATCH/cutshort.sprb" \
	"$TOP/tests/integration"
bad "corrupt record" "$SCRATCH/corrupt.sprb" "$SCRATCH/bad.sprb" --on 5 --every 20

# an existing output is kept unless -f
echo keep >"$SCRATCH/exists.sprb"
if ! "$CUT" "$REC" "$SCRATCH/exists.sprb" --on 5 --every 20 2>/dev/null &&
	[ "$(cat "$SCRATCH/exists.sprb")" = keep ] &&
	"$CUT" -f "$REC" "$SCRATCH/exists.sprb" --on 5 --every 20 2>/dev/null &&
	"$SPECPROBE" dump -c "$SCRATCH/exists.sprb" >/dev/null 2>&1; then
	pass "an existing output: kept, replaced with -f"
else
	fail "an existing output: not kept, or -f did not replace it"
fi

# a cut input reads up to its last whole record, as every reader takes it
if "$CUT" "$SCRATCH/cutshort.sprb" "$SCRATCH/short.sprb" --on 5 --every 20 \
	2>"$SCRATCH/short.err" && grep -q "warning: .*truncated" "$SCRATCH/short.err" &&
	python3 -c '
import sys
sys.path.insert(0, sys.argv[2])
import recfile, struct
d = open(sys.argv[1], "rb").read()
s = [struct.unpack_from("<I", d, o + 4)[0] for o, k, _ in recfile.records(d) if k == 72]
sys.exit(not s or s[-1] & 1)' "$SCRATCH/short.sprb" "$TOP/tests/integration"; then
	pass "a truncated input: warned, cut up to its last record, its last window closed"
else
	fail "a truncated input: $(cat "$SCRATCH/short.err")"
fi
finish
