#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# On the GPU machine: what in `--gpu -p` breaks a process whose CUDA graphs came first.
#  (1) the tool itself: tools/gpu/gpu_decoder.py warmed up (cudagraph trees captured),
#      then `record --gpu -p`: the decoder's exit status and the kernel's segfault lines;
#  (2) tools/gpu/cupti_bisect.py: the agent's CUPTI steps one by one, after the graphs,
#      before them (as -- CMD), and while the graphs replay, each in a process of its own;
#  (3) hf_assist.py and gpu_decoder.py --draft-setup under `record --gpu -- CMD` and
#      `record -p`: recordings with their truth, read again here later.
#   tools/gpu/run_cupti_bisect.sh OUTDIR   (root; specprobe-static and
#                                           .output/gputools/cupti_bisect.so built)
# Environment: SPECPROBE (default ./specprobe-static), PARTS (default 1,2,3).
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: run_cupti_bisect.sh OUTDIR}
SP=${SPECPROBE:-$TOP/specprobe-static}
LIB=${BISECT_LIB:-$TOP/.output/gputools/cupti_bisect.so}
PARTS=${PARTS:-1,2,3}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
W=$OUT/bisect
mkdir -p "$W"
S=$OUT/bisect-summary.txt
export PYTHONUNBUFFERED=1
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$W/cache}
export TRITON_CACHE_DIR=$TORCHINDUCTOR_CACHE_DIR/triton
unset CUDA_INJECTION64_PATH
started=$SECONDS
say() { echo "$*" | tee -a "$S"; }
: >"$S"
say "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1);" \
	"torch $(python3 -c 'import torch; print(torch.__version__)' 2>&1 | tail -1)"
dmesg -c >/dev/null 2>&1
segv() { dmesg -c 2>/dev/null | grep -o 'segfault at [0-9a-f]* ip [0-9a-f]* sp [0-9a-f]* error [0-9]* in [^ ]*' | head -2 | sed 's/^/   /'; }

DEC="python3 $TOP/tools/gpu/gpu_decoder.py"
SMALL="--hidden 1024 --layers 4 --draft-hidden 512 --draft-layers 2 --k 4"
if [[ $PARTS == *1* ]]; then
	f=$W/attach
	$DEC --out "$f.truth.json" $SMALL --cycles 1500 --warmup 10 --ready-file "$f.ready" \
		--ready-wait 2 >"$f.out" 2>&1 &
	dec=$!
	for i in $(seq 1 1800); do [ -e "$f.ready" ] && break; sleep 0.1; done
	timeout 120 "$SP" record --gpu -f -p $dec -o "$f.sprb" 2>"$f.record.err"
	wait $dec
	say "== (1) record --gpu -p on gpu_decoder.py: decoder exit $?"
	grep -i 'gpu agent\|cupti\|died\|exit' "$f.record.err" | head -4 | sed 's/^/   /' | tee -a "$S"
	segv | tee -a "$S"
fi

if [[ $PARTS == *2* ]]; then
	B="python3 $TOP/tools/gpu/cupti_bisect.py --lib $LIB"
	toolkit=$(ls /usr/local/cuda/lib64/libcupti.so.1[0-9] /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.1[0-9] 2>/dev/null | head -1)
	# name | arguments
	configs=(
		"agent-after|--graphs trees --when after"
		"agent-before|--graphs trees --when before"
		"agent-racing|--graphs trees --when racing"
		"plain-after|--graphs plain --when after"
		"no-ts|--graphs trees --when after --steps alone"
		"no-alone|--graphs trees --when after --steps ts"
		"bare|--graphs trees --when after --steps none"
		"G|--graphs trees --when after --kinds G"
		"K|--graphs trees --when after --kinds K"
		"C,S,O|--graphs trees --when after --kinds C,S,O"
		"G,C,S,O|--graphs trees --when after --kinds G,C,S,O"
		"K,C,S,O|--graphs trees --when after --kinds K,C,S,O"
		"none|--graphs trees --when after --kinds none"
		"G,K-reverse|--graphs trees --when after --kinds G,K --steps alone,ts,reverse"
		"plain-G|--graphs plain --when after --kinds G"
		"plain-K|--graphs plain --when after --kinds K"
		"plain-C,S,O|--graphs plain --when after --kinds C,S,O"
	)
	[ -n "$toolkit" ] && configs+=("toolkit-cupti|--graphs trees --when after --cupti $toolkit")
	# one first, alone: it fills the compile cache the others read
	$B --graphs trees --when before --kinds none --steps none >"$W/warm.out" 2>&1
	say "== (2) CUPTI steps one by one (warm-up run: exit $?; toolkit CUPTI: ${toolkit:-none})"
	run_config() {
		local name=$1 args=$2 rc
		timeout 180 $B $args >"$W/c.$name.out" 2>&1
		rc=$?
		printf '%-16s exit %-4s %s\n' "$name" "$rc" \
			"$(grep -o '{"ok".*' "$W/c.$name.out" | head -1 | cut -c1-150)" >"$W/c.$name.line"
	}
	n=0
	for c in "${configs[@]}"; do
		run_config "${c%%|*}" "${c#*|}" &
		n=$((n + 1))
		[ $((n % 4)) -eq 0 ] && wait
	done
	wait
	for c in "${configs[@]}"; do cat "$W/c.${c%%|*}.line"; done | tee -a "$S"
	segv | tee -a "$S"
fi

if [[ $PARTS == *3* ]]; then
	say "== (3) recordings"
	f=$W/setup
	timeout 240 "$SP" record --gpu -f -o "$f.sprb" -- $DEC --out "$f.truth.json" $SMALL \
		--cycles 400 --warmup 10 --draft-setup 20000 >"$f.out" 2>&1
	say "   gpu_decoder --draft-setup under --gpu -- CMD: exit $?; $(grep '^gpu_decoder' "$f.out" | head -1 | cut -c1-200)"
	H="python3 $TOP/tools/gpu/hf_assist.py"
	for v in "small|" "small-sample|--sample" "same|--draft same"; do
		name=${v%%|*} args=${v#*|}
		f=$W/hf-$name
		[[ $name == same* ]] || args="$args --draft small"
		timeout 240 "$SP" record -f -o "$f.cmd.sprb" -- $H --out "$f.cmd.truth.json" \
			--rounds 2 --warmup 1 $args >"$f.cmd.out" 2>&1
		say "   hf $name -- CMD: exit $?; $(tail -1 "$f.cmd.out" | cut -c1-160)"
	done
	f=$W/hf-sample-p
	$H --out "$f.truth.json" --draft small --sample --rounds 2 --warmup 2 \
		--ready-file "$f.ready" --ready-wait 1 >"$f.out" 2>&1 &
	dec=$!
	for i in $(seq 1 1800); do [ -e "$f.ready" ] && break; sleep 0.1; done
	timeout 120 "$SP" record -f -p $dec -o "$f.sprb" 2>"$f.record.err"
	wait $dec
	say "   hf small-sample -p: exit $?; $(tail -1 "$f.out" | cut -c1-160)"
	for s in "$W"/*.sprb; do xz -T4 -6 "$s"; done
	tar -C "$W" -cf "$OUT/recordings-hf.tar" $(cd "$W" && ls hf-*.sprb.xz hf-*.truth.json 2>/dev/null)
	tar -C "$W" -cf "$OUT/recordings-dec.tar" $(cd "$W" && ls [!h]*.sprb.xz [!h]*.truth.json 2>/dev/null)
fi
tar -C "$W" -czf "$OUT/bisect-logs.tar.gz" $(cd "$W" && ls *.out *.err *.line 2>/dev/null)
say "run_cupti_bisect.sh: $((SECONDS - started)) s"
