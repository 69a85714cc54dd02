#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# On the GPU machine: roles read from where the program launches, on code written elsewhere.
#  (1) one CUDA-graph decoder (tools/gpu/gpu_decoder.py, cudagraph trees, an extend graph)
#      read two ways: `record -- CMD` from its start, and `record -p --duration` into its
#      running loop (captures, loop start and loop end all unseen), both with --gpu. Both
#      must give the same launches per phase and lead role, and GPU phases within 2 % of the
#      decoder's CUDA events (check_gpu_timeline.py).
#  (2) Hugging Face assisted generation (tools/gpu/hf_assist.py): greedy and sampled, a
#      small assistant and the target as its own, `-p` after warm-up and `-- CMD`; every
#      round's cycles against its get_candidates calls (check_hf.py), and what the first
#      launches' Python frames voted beside the syncs' (role_evidence).
#   tools/gpu/run_roles.sh OUTDIR   (root; specprobe-static built)
# Environment: SPECPROBE (default ./specprobe-static), PARTS (default 1,2).
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: run_roles.sh OUTDIR}
SP=${SPECPROBE:-$TOP/specprobe-static}
PARTS=${PARTS:-1,2}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
W=$OUT/roles
mkdir -p "$W"
S=$OUT/roles-summary.txt
export PYTHONUNBUFFERED=1
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$W/cache}
export TRITON_CACHE_DIR=$TORCHINDUCTOR_CACHE_DIR/triton
started=$SECONDS
say() { echo "$*" | tee -a "$S"; }
: >"$S"
say "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1);" \
	"torch $(python3 -c 'import torch; print(torch.__version__)' 2>&1 | tail -1)"
dmesg -c >/dev/null 2>&1

# wait_ready FILE: until the decoder made it (3 minutes at most)
wait_ready() {
	for _ in $(seq 1 1800); do [ -e "$1" ] && return 0; sleep 0.1; done
	return 1
}

# phases REPORT.json: lead role and rule, cycles, launches a cycle per phase, host ms per phase
phases() {
	python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for lp in d["loops"]:
    ph = lp.get("phases") or {}
    print("lead %s/%s, %d cycles, unresolved extend %s; launches %s; host ms %s" % (
        lp["lead_role"], lp["lead_from"], lp["cycles"], lp["extend_unresolved"],
        " ".join("%s %.2f" % (p, ph[p]["launches"]) for p in ("draft", "verify", "accept", "extend")),
        " ".join("%s %.3f" % (p, ph[p]["span_ns"] / 1e6) for p in ("draft", "verify", "accept", "extend"))))
PY
}

DEC="python3 $TOP/tools/gpu/gpu_decoder.py"
if [[ $PARTS == *1* ]]; then
	say "== (1) gpu_decoder.py (cudagraph trees, an extend graph): -- CMD against -p"
	f=$W/dec-cmd
	timeout 200 "$SP" record --gpu -f -o "$f.sprb" -- $DEC --out "$f.truth.json" --cycles 600 \
		--warmup 10 >"$f.out" 2>&1
	say "   -- CMD: exit $?"
	"$SP" report --json "$f.sprb" >"$f.json" 2>"$f.report.err"
	say "   -- CMD: $(phases "$f.json" 2>&1)"
	f=$W/dec-p
	$DEC --out "$f.truth.json" --cycles 4000 --warmup 10 --ready-file "$f.ready" \
		>"$f.out" 2>&1 &
	dec=$!
	if wait_ready "$f.ready"; then
		sleep 1
		timeout 60 "$SP" record --gpu -f -p $dec --duration 3 -o "$f.sprb" \
			2>"$f.record.err"
		say "   --gpu -p --duration 3: exit $?"
	fi
	wait $dec
	say "   decoder exit $?"
	"$SP" report --json "$f.sprb" >"$f.json" 2>"$f.report.err"
	say "   -p: $(phases "$f.json" 2>&1)"
	for w in cmd p; do
		python3 "$TOP/tools/gpu/check_gpu_timeline.py" "$W/dec-$w.truth.json" \
			"$W/dec-$w.json" >"$W/dec-$w.check" 2>&1
		say "   $w against the CUDA events: exit $?"
		sed 's/^/     /' "$W/dec-$w.check" | tail -6 | tee -a "$S"
	done
fi

if [[ $PARTS == *2* ]]; then
	H="python3 $TOP/tools/gpu/hf_assist.py"
	say "== (2) Hugging Face assisted generation"
	for v in "small-p|--draft small|p" "small-sample-p|--draft small --sample|p" \
		 "same-p|--draft same|p" "small-sample-cmd|--draft small --sample|cmd"; do
		IFS='|' read -r name args how <<<"$v"
		f=$W/hf-$name
		if [ "$how" = p ]; then
			$H --out "$f.truth.json" $args --rounds 2 --warmup 2 --ready-file "$f.ready" \
				--ready-wait 1 >"$f.out" 2>&1 &
			dec=$!
			wait_ready "$f.ready" &&
				timeout 150 "$SP" record -f -p $dec -o "$f.sprb" 2>"$f.record.err"
			wait $dec
		else
			timeout 200 "$SP" record -f -o "$f.sprb" -- $H --out "$f.truth.json" $args \
				--rounds 2 --warmup 1 >"$f.out" 2>&1
		fi
		st=$?
		"$SP" report --json "$f.sprb" >"$f.json" 2>"$f.report.err"
		python3 "$TOP/tools/gpu/check_hf.py" "$f.truth.json" "$f.json" >"$f.check" 2>&1
		say "   hf $name: exit $st; check_hf exit $?: $(tr '\n' ';' <"$f.check" | cut -c1-200)"
		python3 - "$f.json" <<'PY' | tee -a "$S"
import collections, json, sys
d = json.load(open(sys.argv[1]))
for lp in d["loops"]:
    ev = lp["role_evidence"]
    print("     verify_from %s; sync frames %s; launch frames %s" % (
        lp["verify_from"], ev["python_frames"], ev["launch_frames"]))
by = collections.Counter((g["role"], g["role_from"]) for g in d["graphs"]
                         if g.get("eager") and g["launches"])
print("     eager forwards by role and evidence: %s" % dict(sorted(by.items())))
print("     flagged syncs in draft or verify: %d" % sum(
    1 for s in d["syncs"] if s["flagged"] and s["position"] in ("draft-verify", "verify")))
PY
	done
fi
say "   segfaults in the kernel log: $(dmesg 2>/dev/null | grep -c segfault)"
for s in "$W"/*.sprb; do xz -T4 -6 "$s"; done
tar -C "$W" -cf "$OUT/roles-recordings.tar" $(cd "$W" && ls *.sprb.xz *.truth.json 2>/dev/null)
tar -C "$W" -czf "$OUT/roles-logs.tar.gz" $(cd "$W" && ls *.out *.err *.check *.json 2>/dev/null | grep -v truth)
say "run_roles.sh: $((SECONDS - started)) s"
