#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# On the GPU machine, `--gpu` against tools/gpu/gpu_decoder.py's event-timed truth:
#  (a) fidelity: the decoder started under `record --gpu` (draft and verify back to back,
#      then with a stream sync between them), `report --json` and the text report of each
#      recording, and tools/gpu/check_gpu_timeline.py: GPU draft, verify and extend ms per
#      cycle within 2 % of the events' cycle time;
#  (b) bad input: torch.profiler holding CUPTI (started before the program's first CUDA
#      work, and around the timed cycles only), and `--cupti /nonexistent`: specprobe's
#      one line, the program unharmed, and a host-only report;
#  (c) cost: ROUNDS rounds of untraced / `record` / `record --gpu`: one decoder per arm,
#      started under it and warmed once, the arms taking turns (gpu_decoder.py --turns),
#      one round of AB_CYCLES timed cycles at a time, the order rotated from round to
#      round; paired ratio of each round's tokens/s to the same round's untraced one
#      with a 95 % bootstrap interval (tools/gpu/ab_stats.py).
#   tools/gpu/run_gpu.sh OUTDIR        (root; specprobe-static built)
# Environment: SPECPROBE (default ./specprobe-static), PARTS (which of fidelity, bad, ab to
# run; all by default), ROUNDS (20), FID_ARGS
# (the decoder's options for (a): default sizes, 1000 timed cycles), AB_ARGS (for (b) and
# (c): a small model so start-up stays short), AB_CYCLES (timed cycles a round, 400),
# DECODER (default: python3 tools/gpu/gpu_decoder.py; another program that takes its
# options and writes its truth).
# The inductor cache is kept in OUTDIR/cache across all runs (removed at the end unless
# KEEP_CACHE=1), so only the first start compiles. What comes back is OUTDIR/summary.txt,
# OUTDIR/ab.txt and one archive per part (fidelity.tar.xz, bad.tar.xz, ab.tar.xz).
# Runs of the A/B on one machine pool: `tools/gpu/ab_stats.py ab-1 ab-2` over the unpacked
# ab folders.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: run_gpu.sh OUTDIR}
SP=${SPECPROBE:-$TOP/specprobe-static}
DURATION=${DURATION:-480}
ROUNDS=${ROUNDS:-20}
FID_ARGS=${FID_ARGS:---cycles 1000 --warmup 10}
AB_ARGS=${AB_ARGS:---hidden 1024 --layers 4 --draft-hidden 1024 --draft-layers 2 --k 4 --warmup 5}
AB_CYCLES=${AB_CYCLES:-400}
PARTS=${PARTS:-fidelity,bad,ab}
part() { [[ ",$PARTS," == *",$1,"* ]]; }
DEC=${DECODER:-python3 $TOP/tools/gpu/gpu_decoder.py}
CHECK="python3 $TOP/tools/gpu/check_gpu_timeline.py"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
S=$OUT/summary.txt
export PYTHONUNBUFFERED=1
own_cache=
[ -n "${TORCHINDUCTOR_CACHE_DIR:-}" ] || own_cache=$OUT/cache
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$own_cache}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-$TORCHINDUCTOR_CACHE_DIR/triton}
unset CUDA_INJECTION64_PATH	# another tool's agent: --gpu would refuse
started=$SECONDS

say() { echo "$*" | tee -a "$S"; }
pack() {	# $1 part: its folder becomes one archive, so few files come back
	if command -v xz >/dev/null; then
		tar -C "$OUT" -cJf "$OUT/$1.tar.xz" "$1" && rm -rf "${OUT:?}/$1"
	else
		tar -C "$OUT" -czf "$OUT/$1.tar.gz" "$1" && rm -rf "${OUT:?}/$1"
	fi
}

[ -x "$SP" ] || { echo "run_gpu.sh: no specprobe at $SP (SPECPROBE names it)" >&2; exit 1; }
: >"$S"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__)'; } 2>&1 | tee -a "$S"

# The first start of each configuration compiles; later ones read the cache. Untraced,
# with inductor's compile workers; every measured run after it compiles nothing and
# starts no workers.
C=$(mktemp -d /tmp/run_gpu.XXXXXX)
part fidelity && $DEC --out "$C/fid.json" $FID_ARGS --cycles 20 >"$C/fid.out" 2>&1 &
$DEC --out "$C/ab.json" $AB_ARGS --cycles 20 >"$C/ab.out" 2>&1
wait
cat "$C"/*.out | grep '^gpu_decoder' | sed 's/^/first start: /' | tee -a "$S"
rm -rf "$C"
export TORCHINDUCTOR_COMPILE_THREADS=1

# (a) fidelity
W=$OUT/fidelity
part fidelity && mkdir -p "$W" && say "== (a) fidelity: record --gpu -- gpu_decoder.py $FID_ARGS"
for mode in joined split; do
	part fidelity || break
	f=$W/$mode
	"$SP" record --gpu -o "$f.sprb" -- $DEC --out "$f.truth.json" --mode "$mode" $FID_ARGS \
		>"$f.out" 2>"$f.record.err"
	echo "record exit $?" >>"$f.record.err"
	"$SP" report --json "$f.sprb" >"$f.report.json" 2>"$f.report.err"
	"$SP" report "$f.sprb" >"$f.report.txt" 2>>"$f.report.err"
	say "-- $mode: $(cat "$f.record.err" "$f.out" | grep '^gpu_decoder' | head -1)"
	$CHECK "$f.truth.json" "$f.report.json" >"$f.check.txt" 2>&1
	echo "check exit $?" >>"$f.check.txt"
	tee -a "$S" <"$f.check.txt"
	grep -v '^libbpf\|^gpu_decoder' "$f.record.err" | grep -i 'gpu\|cupti' | head -5 |
		sed 's/^/record: /' | tee -a "$S"
done
part fidelity && pack fidelity

# (b) bad input: one line from specprobe, the program unharmed, the report host-only
B=$OUT/bad
part bad && mkdir -p "$B" && say "== (b) bad input"
bad() {	# $1 name, $2 host-only or either, $3 record's options, then the decoder's
	local name=$1 expect=$2 opts=$3
	shift 3
	local f=$B/$name
	"$SP" record --gpu $opts -o "$f.sprb" -- $DEC --out "$f.truth.json" $AB_ARGS \
		--cycles 100 "$@" >"$f.out" 2>"$f.record.err"
	local rc=$?
	"$SP" report --json "$f.sprb" >"$f.report.json" 2>"$f.report.err"
	"$SP" report "$f.sprb" >"$f.report.txt" 2>>"$f.report.err"
	say "-- $name: record exit $rc; the decoder $( [ -s "$f.truth.json" ] &&
		echo "finished and wrote its truth" || echo "wrote NO truth")"
	grep -v '^libbpf\|^gpu_decoder' "$f.record.err" | grep -i 'gpu\|cupti\|profil' | head -5 |
		sed 's/^/   stderr: /' | tee -a "$S"
	sed -n '/^GPU/,/^$/p' "$f.report.txt" | head -5 | sed 's/^/   report: /' | tee -a "$S"
	local pre="   "
	[ "$expect" = either ] && pre="   (host-only or not, either may be right) "
	[ -s "$f.truth.json" ] && $CHECK --host-only "$f.report.json" "$f.truth.json" 2>&1 |
		sed "s/^/$pre/" | tee -a "$S"
	if [ -e "$f.table.txt" ]; then	# the profiler's own view: did it see GPU work?
		say "   torch.profiler's table: $(grep -c 'triton_\|gemm\|Memcpy\|Memset' \
			"$f.table.txt") rows of GPU work"
	fi
}
if part bad; then
	bad profiler-early host-only "" --profiler early --profile-table "$B/profiler-early.table.txt"
	bad profiler-late either "" --profiler late --profile-table "$B/profiler-late.table.txt"
	bad no-cupti host-only "--cupti /nonexistent"
	pack bad
fi
part ab || { say "run_gpu.sh: $((SECONDS - started)) s"; exit 0; }

# (c) cost: one decoder per arm, started under it and warmed once; the arms then take
# turns, one round at a time, the order rotated from round to round
A=$OUT/ab
mkdir -p "$A"
arms=(untraced record record_gpu)
say "== (c) cost: $ROUNDS rounds of ${arms[*]} taking turns: $AB_ARGS --cycles $AB_CYCLES"
: >"$A/rounds.jsonl"
turn_args="--turns $A --rounds $ROUNDS $AB_ARGS --cycles $AB_CYCLES"
$DEC --arm untraced --out "$A/untraced.json" $turn_args >"$A/untraced.out" 2>&1 &
"$SP" record -o "$A/record.sprb" -- $DEC --arm record --out "$A/record.json" $turn_args \
	>"$A/record.out" 2>"$A/record.err" &
"$SP" record --gpu -o "$A/record_gpu.sprb" -- $DEC --arm record_gpu --out \
	"$A/record_gpu.json" $turn_args >"$A/record_gpu.out" 2>"$A/record_gpu.err" &
waited=0
while [ "$(ls "$A"/*.ready 2>/dev/null | wc -l)" -lt 3 ] && [ $waited -lt 3000 ]; do
	sleep 0.1
	waited=$((waited + 1))
done
say "arms ready after $((waited / 10)) s"
for r in $(seq 0 $((ROUNDS - 1))); do
	for k in 0 1 2; do
		arm=${arms[(k + r) % 3]}
		touch "$A/go.$r.$arm"
		n=0
		while [ ! -e "$A/done.$r.$arm" ] && [ $n -lt 6000 ]; do
			sleep 0.01
			n=$((n + 1))
		done
		report=
		[ "$arm" != untraced ] && report=$arm.report.json
		printf '{"round":%d,"arm":"%s","truth":"%s","report":"%s"}\n' "$r" "$arm" \
			"$arm.$r.json" "$report" >>"$A/rounds.jsonl"
	done
done
wait
for arm in record record_gpu; do
	"$SP" report --json "$A/$arm.sprb" >"$A/$arm.report.json" 2>>"$A/$arm.err"
	"$SP" report "$A/$arm.sprb" >"$A/$arm.report.txt" 2>>"$A/$arm.err"
	rm -f "$A/$arm.sprb"
done
rm -f "$A"/go.* "$A"/done.* "$A"/*.ready
cat "$A"/*.out "$A"/*.err 2>/dev/null | grep "^gpu_decoder" | tee -a "$S"
python3 "$TOP/tools/gpu/ab_stats.py" "$A" >"$OUT/ab.txt" 2>&1
tee -a "$S" <"$OUT/ab.txt"
cp "$OUT/ab.txt" "$A/"
pack ab
[ -n "$own_cache" ] && [ -z "${KEEP_CACHE:-}" ] && rm -rf "$own_cache"
say "run_gpu.sh: $((SECONDS - started)) s"
