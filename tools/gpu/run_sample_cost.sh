#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The sampled mode's cost on a GPU, side by side in the same rounds: tools/bench/gpu_ab.sh
# with the arms untraced, record, record_sample and floor, on three decoders one after
# another, each in OUTDIR/NAME:
#   hf     Hugging Face assisted generation, eager (tools/gpu/hf_assist.py): bar 0.99
#   eager  the project's eager decoder (tools/gpu/eager_decoder.py): bar 0.99
#   graph  the CUDA-graph decoder (tools/gpu/spec_compile.py): record inside floor's
#          interval, record_sample >= 0.998
# then OUTDIR/sample-cost.txt (tools/gpu/sample_cost.py: ratios, intervals, verdicts) and,
# per decoder, NAME/sample-heads.txt: the head and the Sampled section of every sampled
# recording's report, as a user sees them.
#   tools/gpu/run_sample_cost.sh OUTDIR                      (root)
# Environment: PART (all, the default: hf eager graph; eager: hf eager; graph; or any list
# of the names) picks the decoders. BUDGET (560) is the seconds the whole run may take,
# model start-ups and reports included: each decoder's DURATION is what is left, less
# REPORT_S (20) a decoder for its reports, shared among the decoders still to run, unless
# DURATION_HF, DURATION_EAGER or DURATION_GRAPH sets it. CYCLES_HF (generate() calls of 96
# tokens, 2), CYCLES_EAGER (decoder rounds, 250), CYCLES_GRAPH (cycles, 800) size a
# round to about 3 s on an H100; SAMPLE (100ms/1s) puts about 3 windows in each. GAP (2),
# SPECPROBE (./specprobe-static), FLOOR (.output/bench/trapfloor-static) pass to gpu_ab.sh;
# DECODER_HF, DECODER_EAGER, DECODER_GRAPH replace a decoder (a stand-in such as
# "python3 tools/gpu/fake_decoder.py --lib LIBCUDA" runs the script without a GPU).
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: run_sample_cost.sh OUTDIR}
case ${PART:-all} in
all) names="hf eager graph" ;;
eager) names="hf eager" ;;
*) names=$PART ;;
esac
for n in $names; do
	case $n in hf | eager | graph) ;;
	*) echo "run_sample_cost.sh: PART: $n is none of all, eager, graph, hf" >&2; exit 2 ;;
	esac
done
export SPECPROBE=${SPECPROBE:-$TOP/specprobe-static}
export FLOOR=${FLOOR:-$TOP/.output/bench/trapfloor-static}
for bin in "$SPECPROBE" "$FLOOR"; do
	[ -x "$bin" ] || { echo "run_sample_cost.sh: $bin missing: make static $FLOOR" >&2; exit 2; }
done
"$SPECPROBE" record --help 2>/dev/null | grep -q -- '--sample' ||
	{ echo "run_sample_cost.sh: $SPECPROBE has no record --sample" >&2; exit 2; }
BUDGET=${BUDGET:-560}
REPORT_S=${REPORT_S:-20}
mkdir -p "$OUT"
started=$SECONDS

decoder_of() {
	case $1 in
	hf) echo "${DECODER_HF:-python3 $TOP/tools/gpu/hf_assist.py}" ;;
	eager) echo "${DECODER_EAGER:-python3 $TOP/tools/gpu/eager_decoder.py}" ;;
	graph) echo "${DECODER_GRAPH:-python3 $TOP/tools/gpu/spec_compile.py}" ;;
	esac
}

cycles_of() {
	case $1 in
	hf) echo "${CYCLES_HF:-2}" ;;
	eager) echo "${CYCLES_EAGER:-250}" ;;
	graph) echo "${CYCLES_GRAPH:-800}" ;;
	esac
}

duration_of() {	# $1 name, $2 decoders left to run, this one included
	local key=DURATION_${1^^}
	if [ -n "${!key:-}" ]; then
		echo "${!key}"
		return
	fi
	echo $(((BUDGET - (SECONDS - started) - REPORT_S * $2) / $2))
}

heads() {	# $1 the run's ab folder: what report shows of each sampled recording
	local f
	for f in $(cd "$1" && ls -v -- *-record_sample.report.txt 2>/dev/null); do
		echo "== ${f%.report.txt}"
		# the head (to its first blank line), then the whole Sampled section
		awk 'h == 0 { print; h = /^$/; next }
			/^Sampled \(--sample/ { s = 1 } s { print } s && /^$/ { exit }' "$1/$f"
	done
}

left=$(wc -w <<<"$names")
for n in $names; do
	d=$(duration_of "$n" "$left")
	if [ "$d" -lt 30 ]; then
		echo "$n: ${d} s left of BUDGET $BUDGET: not run" | tee "$OUT/$n.skipped"
		left=$((left - 1))
		continue
	fi
	echo "== $n: DURATION $d, CYCLES $(cycles_of "$n"), from $(date +%T)"
	mkdir -p "$OUT/$n"
	# ROUNDS well above what DURATION lets run: DURATION ends the run
	ARMS="untraced record record_sample floor" SAMPLE=${SAMPLE:-100ms/1s} HITCOST=none \
		GAP=${GAP:-2} DURATION=$d CYCLES=$(cycles_of "$n") DECODER=$(decoder_of "$n") \
		timeout -k 5 $((d + 3 * REPORT_S)) "$TOP/tools/bench/gpu_ab.sh" "$OUT/$n" 200 \
		>"$OUT/$n/gpu_ab.log" 2>&1
	echo "gpu_ab.sh exit $?" >>"$OUT/$n/gpu_ab.log"
	tail -n 3 "$OUT/$n/gpu_ab.log"
	heads "$OUT/$n/ab" >"$OUT/$n/sample-heads.txt"
	left=$((left - 1))
done

runs=
for n in $names; do
	[ -e "$OUT/$n/ab/rounds.jsonl" ] || continue
	[ "$n" = graph ] && runs="$runs graph:graph" || runs="$runs $n:eager"
done
{
	echo "# tools/gpu/run_sample_cost.sh, PART=${PART:-all}, SAMPLE=${SAMPLE:-100ms/1s}, $(date -u +%FT%TZ)"
	echo "# $(cat "$OUT"/*/ab/gpu.txt 2>/dev/null | grep -m1 GPU || echo 'no GPU named by nvidia-smi')"
	echo "# $("$SPECPROBE" --version 2>&1 | head -n 1)"
	[ -n "$runs" ] && python3 "$TOP/tools/gpu/sample_cost.py" "$OUT" $runs
	cat "$OUT"/*.skipped 2>/dev/null
	for n in $names; do
		[ -s "$OUT/$n/sample-heads.txt" ] || continue
		echo "== $n: the first sampled recording's report, as shown"
		awk '/^== / && seen++ { exit } { print }' "$OUT/$n/sample-heads.txt"
	done
	echo "# $((SECONDS - started)) s in all"
} | tee "$OUT/sample-cost.txt"
