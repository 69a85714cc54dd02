#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# On the GPU machine, `--gpu -p` (docs/gpu-timeline.md, "Into a running process"):
#  (a) fidelity: tools/gpu/gpu_decoder.py started untraced (split, then joined), its graphs
#      captured in its warm-up; `record --gpu -p` attached once it is warm, until it exits;
#      the stop specprobe states, whether graph-level records came for graphs made before
#      the attach, and tools/gpu/check_gpu_timeline.py against its events (the cycles from
#      the injection on);
#  (b) cost: ROUNDS rounds of four arms, the order rotated, each AB_CYCLES timed cycles
#      (gpu_decoder.py --turns): `before` (a decoder never attached), `during` (a second
#      decoder, `record --gpu -p` attached for its round), `after` (that second decoder
#      after the detach, the agent still loaded) and `cmd` (a third decoder started under
#      `record --gpu -- CMD`, traced from its start, its graphs captured while traced);
#      paired ratios to `before` with 95 % intervals, the attaches and detaches made, the
#      decoders' exits and the kernel log's segfaults. Uprobes sit on the library's file,
#      so while the `cmd` arm's recorder runs, a process mapping the same libcuda pays the
#      trap: that decoder loads a copy of libcuda (LD_LIBRARY_PATH), the others do not.
#   tools/gpu/run_inject.sh OUTDIR        (root; specprobe-static built)
# Environment: SPECPROBE (default ./specprobe-static), ROUNDS (20), FID_ARGS, AB_ARGS,
# AB_CYCLES (400), AB_DEADLINE (seconds from the start: no round starts that would end
# past it), GAP (seconds from one turn's end to the next one's start, whatever the arm,
# 1 by default: the attach happens inside it, and every arm starts after the same pause),
# PARTS ("a b" by default; "b" runs the cost alone), DECODER.
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
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)
torch=$(python3 -c 'import torch; print(torch.__version__)' 2>&1 | tail -1)
say "machine: $gpu; kernel $(uname -r); torch $torch"
segv0=$(dmesg 2>/dev/null | grep -c segfault)
fid_rc=() fid_bad=0

W=$OUT/inject
mkdir -p "$W"
modes="split joined"
[[ " ${PARTS:-a b} " == *" a "* ]] || modes=
for mode in $modes; do
	f=$W/$mode
	$DEC --out "$f.truth.json" $FID_ARGS --mode $mode --ready-file "$f.ready" --ready-wait 3 \
		>"$f.out" 2>&1 &
	dec=$!
	for i in $(seq 1 1800); do [ -e "$f.ready" ] && break; sleep 0.1; done
	"$SP" record --gpu -p $dec -o "$f.sprb" 2>"$f.record.err"
	wait $dec
	rc=$?
	fid_rc+=("$mode $rc")
	[ $rc = 0 ] || fid_bad=$((fid_bad + 1))
	say "== (a) $mode: decoder exit $rc; $(grep '^gpu_decoder' "$f.out" | head -1)"
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

# (b) before / during / after / cmd, taking turns
A=$W/ab
mkdir -p "$A"
say "== (b) cost: $ROUNDS rounds of before, during, after, cmd: $AB_ARGS --cycles $AB_CYCLES"
turn="--turns $A $AB_ARGS --cycles $AB_CYCLES"
# the cmd arm's own libcuda: another file, so its recorder's uprobes trap no other arm
lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" { print $NF; exit }')
ld_path=${LD_LIBRARY_PATH:-}
for d in ${ld_path//:/ } /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu; do
	[ -z "$lib" ] && [ -e "$d/libcuda.so.1" ] && lib=$d/libcuda.so.1
done
LIBDIR=$(mktemp -d /tmp/inject-libcuda.XXXXXX)
if [ -n "$lib" ] && cp -L "$lib" "$LIBDIR/libcuda.so.1"; then
	cmd_env="LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
	cmd_env=
	say "   no libcuda.so.1 to copy ($lib): every arm shares the cmd arm's probed library"
fi
$DEC --arm p1 --rounds $ROUNDS --out "$A/p1.json" $turn >"$A/p1.out" 2>&1 &
p1=$!
$DEC --arm p2 --rounds $((2 * ROUNDS)) --out "$A/p2.json" $turn >"$A/p2.out" 2>&1 &
p2=$!
env $cmd_env "$SP" record --gpu -o "$A/cmd.sprb" -- $DEC --arm p3 --rounds $ROUNDS \
	--out "$A/p3.json" $turn >"$A/p3.out" 2>&1 &
rec3=$!
for i in $(seq 1 3000); do
	[ -e "$A/p1.ready" ] && [ -e "$A/p2.ready" ] && [ -e "$A/p3.ready" ] && break
	kill -0 $p1 $p2 $rec3 2>/dev/null || break
	sleep 0.1
done
p3=$(cat "$A/p3.ready" 2>/dev/null)
p3=${p3:-0}
libcudas() {	# the libcuda files pid $1 maps
	grep -o '/[^ ]*libcuda\.so[^ ]*' "/proc/$1/maps" 2>/dev/null | sort -u | paste -sd' '
}
say "   decoders ready at $((SECONDS - started)) s; the cmd arm's (pid $p3) maps" \
	"$(libcudas $p3), before's $(libcudas $p1), during's $(libcudas $p2)"
turn_end=$(date +%s.%N)
run_turn() {	# $1 arm file name, $2 round index of that arm, $3 its pid
	sleep "$(awk -v gap="${GAP:-1}" -v end="$turn_end" -v now="$(date +%s.%N)" \
		'BEGIN { w = gap - (now - end); print (w > 0 ? w : 0) }')"
	touch "$A/go.$2.$1"
	turn_end=$(date +%s.%N)	# if it never finishes
	for i in $(seq 1 6000); do
		[ -e "$A/done.$2.$1" ] && turn_end=$(date +%s.%N) && return 0
		[ "$3" -gt 0 ] && kill -0 "$3" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}
: >"$A/rounds.jsonl"
: >"$A/stops.txt"
arms=(before during after cmd)
n2=0 attached=0 detached=0 lost=0 rounds_done=0 round_s=0
for r in $(seq 0 $((ROUNDS - 1))); do
	if [ -n "${AB_DEADLINE:-}" ] && [ $((SECONDS - started + round_s)) -gt "$AB_DEADLINE" ]; then
		say "   AB_DEADLINE $AB_DEADLINE s: $r of $ROUNDS rounds"
		break
	fi
	round_start=$SECONDS
	for k in 0 1 2 3; do
		arm=${arms[(k + r) % 4]}
		ok=0
		case $arm in
		before) run_turn p1 $r $p1 && ok=1; truth=p1.$r.json ;;
		during)
			"$SP" record --gpu -p $p2 -o "$A/during.$r.sprb" 2>"$A/during.$r.err" &
			rec=$!
			# attached once it says "tracing"; the agent comes in at the decoder's
			# first CUDA call after that, inside the round
			for i in $(seq 1 300); do
				grep -q "tracing" "$A/during.$r.err" 2>/dev/null && break
				kill -0 $rec 2>/dev/null || break
				sleep 0.05
			done
			run_turn p2 $n2 $p2 && ok=1; truth=p2.$n2.json; n2=$((n2 + 1))
			kill -INT $rec; wait $rec && detached=$((detached + 1))
			grep -q 'GPU agent \(in\|woken\) after' "$A/during.$r.err" &&
				attached=$((attached + 1))
			grep -o 'GPU agent [a-z]* after a [0-9.]* ms stop' "$A/during.$r.err" >>"$A/stops.txt"
			rm -f "$A/during.$r.sprb" ;;
		after) run_turn p2 $n2 $p2 && ok=1; truth=p2.$n2.json; n2=$((n2 + 1)) ;;
		cmd) run_turn p3 $r $p3 && ok=1; truth=p3.$r.json ;;
		esac
		[ $ok = 1 ] || lost=$((lost + 1))
		printf '{"round":%d,"arm":"%s","truth":"%s"}\n' "$r" "$arm" "$truth" >>"$A/rounds.jsonl"
	done
	rounds_done=$((r + 1))
	round_s=$((SECONDS - round_start))
done
touch "$A/end"	# arms still waiting for a round end now
rc=()
for p in $p1 $p2 $rec3; do wait $p; rc+=($?); done
# the cmd arm's decoder: its last line comes only at a clean end; record says how it ended
grep -q '^gpu_decoder: arm p3' "$A/p3.out" && rc3=0 || rc3=1
grep -q 'exited with status\|died of' "$A/p3.out" && rc3=1
"$SP" report "$A/cmd.sprb" >"$A/cmd.report.txt" 2>&1
"$SP" report --json "$A/cmd.sprb" >"$A/cmd.report.json" 2>>"$A/cmd.report.txt"
grep 'died of' "$A/cmd.report.txt" | tee -a "$S" | grep -q . && rc3=1
sed -i 's/"arm":"before"/"arm":"untraced"/' "$A/rounds.jsonl"
python3 "$TOP/tools/gpu/ab_stats.py" "$A" 2>&1 | sed 's/untraced/before/g' | tee -a "$S"
say "cmd arm's recording: $(grep -v '^libbpf' "$A/p3.out" | grep -m1 'records, .* bytes to')"
sed -n '/^GPU/,/^$/p' "$A/cmd.report.txt" | head -3 | sed 's/^/   report: /' | tee -a "$S"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
g = [x for x in d["graphs"] if x.get("launches")]
print("   graphs launched %d (captured while traced: %d); cycles %d, with GPU figures %d"
      % (len(g), sum(1 for x in g if x.get("captured")), len(d["cycles"]),
         sum(1 for c in d["cycles"] if c.get("gpu"))))' "$A/cmd.report.json" 2>&1 | tee -a "$S"
say "rounds: $rounds_done of $ROUNDS; turns that did not finish: $lost"
say "attaches: $attached of $rounds_done during rounds attached;" \
	"$detached detached (record's exit 0)"
say "stops: $(wc -l <"$A/stops.txt") stated; $(awk '{print $(NF-2)}' "$A/stops.txt" | sort -n |
	awk '{a[NR]=$1} END {if (NR) printf "median %s ms, max %s ms", a[int((NR+1)/2)], a[NR]}')"
segv=$(dmesg 2>/dev/null | grep -c segfault)
say "exits: before's decoder $((rc[0])), during/after's $((rc[1])), cmd's recorder $((rc[2])) and" \
	"its decoder $([ $rc3 = 0 ] && echo 0 || echo 'not clean'); (a): ${fid_rc[*]}"
say "crashes: $(( (rc[0] != 0) + (rc[1] != 0) + rc3 + fid_bad )) decoders;" \
	"kernel log segfaults: $((segv - segv0)) new ($segv in all)"
rm -f "$A/cmd.sprb" "$A/cmd.report.json"
rm -rf "$LIBDIR"
tar -C "$OUT" -czf "$OUT/inject.tar.gz" inject && rm -rf "$W"
[ -n "$own_cache" ] && rm -rf "$own_cache"
say "run_inject.sh: $((SECONDS - started)) s"
