#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# On the GPU machine, `--gpu -p` (docs/gpu-timeline.md, "Into a running process"):
#  (a) fidelity: tools/gpu/gpu_decoder.py started untraced (split, then joined), its graphs
#      captured in its warm-up; `record --gpu -p` attached once it is warm, until it exits;
#      the stop specprobe states, whether graph-level records came for graphs made before
#      the attach, and tools/gpu/check_gpu_timeline.py against its events (the cycles from
#      the injection on);
#  (b) cost: ROUNDS rounds of `before` (a decoder never attached), `during` (a second
#      decoder, `record --gpu -p` attached for its round) and `after` (that second decoder
#      after the detach, the agent still loaded), the order rotated, each round AB_CYCLES
#      timed cycles (gpu_decoder.py --turns); paired ratios with 95 % intervals.
#   tools/gpu/run_inject.sh OUTDIR        (root; specprobe-static built)
# Environment: SPECPROBE (default ./specprobe-static), ROUNDS (20), FID_ARGS, AB_ARGS,
# AB_CYCLES (400), DECODER.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: run_inject.sh OUTDIR}
SP=${SPECPROBE:-$TOP/specprobe-static}
ROUNDS=${ROUNDS:-20}
FID_ARGS=${FID_ARGS:---cycles 1500 --warmup 10}
AB_ARGS=${AB_ARGS:---hidden 1024 --layers 4 --draft-hidden 1024 --draft-layers 2 --k 4 --warmup 5}
AB_CYCLES=${AB_CYCLES:-400}
DEC=${DECODER:-python3 $TOP/tools/gpu/gpu_decoder.py}
CHECK="python3 $TOP/tools/gpu/check_gpu_timeline.py"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
S=$OUT/inject-summary.txt
export PYTHONUNBUFFERED=1
own_cache=
[ -n "${TORCHINDUCTOR_CACHE_DIR:-}" ] || own_cache=$OUT/cache
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$own_cache}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-$TORCHINDUCTOR_CACHE_DIR/triton}
unset CUDA_INJECTION64_PATH
started=$SECONDS
say() { echo "$*" | tee -a "$S"; }
[ -x "$SP" ] || { echo "run_inject.sh: no specprobe at $SP" >&2; exit 1; }
: >"$S"

W=$OUT/inject
mkdir -p "$W"
for mode in split joined; do
	f=$W/$mode
	$DEC --out "$f.truth.json" $FID_ARGS --mode $mode --ready-file "$f.ready" --ready-wait 3 \
		>"$f.out" 2>&1 &
	dec=$!
	for i in $(seq 1 1800); do [ -e "$f.ready" ] && break; sleep 0.1; done
	"$SP" record --gpu -p $dec -o "$f.sprb" 2>"$f.record.err"
	wait $dec
	say "== (a) $mode: decoder exit $?; $(grep '^gpu_decoder' "$f.out" | head -1)"
	grep -v '^libbpf' "$f.record.err" | grep -i 'gpu\|cupti\|agent' | head -4 | sed 's/^/   /' |
		tee -a "$S"
	"$SP" report --json "$f.sprb" >"$f.report.json" 2>"$f.report.err"
	"$SP" report "$f.sprb" >"$f.report.txt" 2>>"$f.report.err"
	sed -n '/^GPU/,/^$/p' "$f.report.txt" | head -5 | sed 's/^/   report: /' | tee -a "$S"
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
g = [x for x in d["graphs"] if x.get("launches")]
print("   graphs launched %d (captured before the attach: %d); cycles %d, with GPU figures %d"
      % (len(g), sum(1 for x in g if not x.get("captured")), len(d["cycles"]),
         sum(1 for c in d["cycles"] if c.get("gpu"))))' "$f.report.json" 2>&1 | tee -a "$S"
	$CHECK "$f.truth.json" "$f.report.json" 2>&1 | tee -a "$S"
	rm -f "$f.sprb"
done

# (b) before / during / after, taking turns
A=$W/ab
mkdir -p "$A"
say "== (b) cost: $ROUNDS rounds of before, during, after: $AB_ARGS --cycles $AB_CYCLES"
turn="--turns $A $AB_ARGS --cycles $AB_CYCLES"
$DEC --arm p1 --rounds $ROUNDS --out "$A/p1.json" $turn >"$A/p1.out" 2>&1 &
$DEC --arm p2 --rounds $((2 * ROUNDS)) --out "$A/p2.json" $turn >"$A/p2.out" 2>&1 &
p2=$!
for i in $(seq 1 3000); do [ -e "$A/p1.ready" ] && [ -e "$A/p2.ready" ] && break; sleep 0.1; done
run_turn() {	# $1 arm file name, $2 round index of that arm
	touch "$A/go.$2.$1"
	for i in $(seq 1 6000); do [ -e "$A/done.$2.$1" ] && return 0; sleep 0.01; done
	return 1
}
: >"$A/rounds.jsonl"
arms=(before during after)
n2=0
for r in $(seq 0 $((ROUNDS - 1))); do
	for k in 0 1 2; do
		arm=${arms[(k + r) % 3]}
		case $arm in
		before) run_turn p1 $r; truth=p1.$r.json ;;
		during)
			"$SP" record --gpu -p $p2 -o "$A/during.$r.sprb" 2>"$A/during.$r.err" &
			rec=$!
			for i in $(seq 1 300); do
				grep -q "GPU agent\|--gpu:" "$A/during.$r.err" 2>/dev/null && break
				sleep 0.1
			done
			run_turn p2 $n2; truth=p2.$n2.json; n2=$((n2 + 1))
			kill -INT $rec; wait $rec
			grep -o 'GPU agent [a-z]* after a [0-9.]* ms stop' "$A/during.$r.err" >>"$A/stops.txt"
			rm -f "$A/during.$r.sprb" ;;
		after) run_turn p2 $n2; truth=p2.$n2.json; n2=$((n2 + 1)) ;;
		esac
		printf '{"round":%d,"arm":"%s","truth":"%s"}\n' "$r" "$arm" "$truth" >>"$A/rounds.jsonl"
	done
done
wait
sed -i 's/"arm":"before"/"arm":"untraced"/' "$A/rounds.jsonl"
python3 "$TOP/tools/gpu/ab_stats.py" "$A" 2>&1 | sed 's/untraced/before/g' | tee -a "$S"
say "stops: $(sort "$A/stops.txt" | uniq -c | wc -l) attaches; $(awk '{print $(NF-2)}' \
	"$A/stops.txt" | sort -n | awk '{a[NR]=$1} END {if (NR) printf "median %s ms, max %s ms", a[int((NR+1)/2)], a[NR]}')"
tar -C "$OUT" -czf "$OUT/inject.tar.gz" inject && rm -rf "$W"
[ -n "$own_cache" ] && rm -rf "$own_cache"
say "run_inject.sh: $((SECONDS - started)) s"
