#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# --sample's reading inside its windows. Whole recordings cut into windows by
# tools/sample/sample_cut (the recording --sample would have made: launches only inside
# windows, every other call all the time): every cycle counted equals the whole reading's and
# the truth's, none a window holds whole is missed, every sync is still seen. On specsim's
# graph, cudagraph-tree and eager loops, and on Hugging Face's assisted generation recorded
# on an H100.
source "$(dirname "$0")/lib.sh"
CUT=$TOP/.output/sample/sample_cut
SAMPLE=$TOP/tests/integration/check_sample.py
REPORT=$TOP/tests/integration/check_report.py

# judge NAME FULL ON EVERY [TRUTH...]: cut FULL, read both, compare
judge() {
	local name=$1 full=$2 on=$3 every=$4 dir="$SCRATCH/$1-$3-$4" got
	shift 4
	mkdir -p "$dir"
	if ! "$CUT" "$full" "$dir/cut.sprb" --on "$on" --every "$every" 2>"$dir/cut.err" ||
		! "$SPECPROBE" report --json "$full" >"$dir/full.json" 2>"$dir/full.err" ||
		! "$SPECPROBE" report --json "$dir/cut.sprb" >"$dir/cut.json" 2>"$dir/cut.err"; then
		fail "$name $on/$every: $(cat "$dir/cut.err" "$dir/full.err" | head -2)"
		return
	fi
	if got=$(python3 "$SAMPLE" "$dir/full.json" "$dir/cut.json" --syncs); then
		pass "$name $on/$every: $got"
	else
		fail "$name $on/$every: $got"
	fi
	[ $# -gt 0 ] || return
	if got=$(python3 "$REPORT" --report "$dir/cut.json" --inventory launched "$@" 2>&1); then
		pass "$name $on/$every: the counted cycles are the truth's"
	else
		fail "$name $on/$every: against the truth: $(echo "$got" | head -3)"
	fi
}

# specsim NAME CYCLES ON EVERY SERVER_ARGS...: a whole run recorded, then judged
specsim() {
	local name=$1 cycles=$2 on=$3 every=$4 dir="$SCRATCH/$1"
	shift 4
	start_server "$dir" --cycles "$cycles" "$@" || { fail "$name: no server"; return; }
	record_whole_run "$dir"
	if [ ! -s "$dir/rec.sprb" ]; then
		fail "$name: no recording ($(tail -1 "$dir/rec.err"))"
		return
	fi
	# --torch's draft counts its setup's copy kernels, which the truth's launches do not
	judge "$name" "$dir/rec.sprb" "$on" "$every" $([ "$name" = torch ] || echo "$dir"/gt.rank*)
}

# captured NAME CYCLES SAMPLE SERVER_ARGS...: record --sample itself, its counted cycles
# against the truth (the windows its records say)
captured() {
	local name=$1 cycles=$2 sample=$3 dir="$SCRATCH/$1" got
	shift 3
	start_server "$dir" --cycles "$cycles" "$@" || { fail "$name: no server"; return; }
	record_whole_run "$dir" --sample "$sample"
	if ! "$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/rec.json" 2>"$dir/report.err"; then
		fail "$name: report: $(head -1 "$dir/report.err")"
		return
	fi
	if got=$(python3 "$REPORT" --report "$dir/rec.json" --inventory launched \
		"$dir"/gt.rank* 2>&1); then
		pass "$name: record --sample $sample: $(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["sampling"]
print(s["cycles_whole"], "cycles whole in", s["windows"], "windows, each as the truth has it")
' "$dir/rec.json")"
	else
		fail "$name: record --sample $sample against the truth: $(echo "$got" | head -3)"
	fi
}

captured captured-graphs 3000 40ms/150ms
captured captured-eager 1500 40ms/150ms --eager-loop --torch -k 5
specsim graphs 3000 40 150
specsim torch 3000 40 150 --torch -k 4
specsim eager 1500 40 150 --eager-loop --torch -k 5

for rec in "$TOP/docs/results/hf-assist-small.sprb.xz" \
	"$TOP/docs/results/hf-assist-sample-p.sprb.xz" \
	"/work/shared/recordings/hf-assisted-rand.sprb.xz"; do
	[ -e "$rec" ] || continue
	name=$(basename "$rec" .sprb.xz)
	xz -dc "$rec" >"$SCRATCH/$name.sprb"
	judge "$name" "$SCRATCH/$name.sprb" 300 1000
	judge "$name" "$SCRATCH/$name.sprb" 1000 2500
done
finish
