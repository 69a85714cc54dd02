#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Recordings made on an H200 with a real torch.compile(mode="reduce-overhead") decoder
# (tools/gpu/gpu_decoder.py under `record --gpu`, docs/results/h200-*), read again by this
# build: the rules that are exact on specsim must stay exact on PyTorch. Split (a stream sync
# between draft and verify) and joined (none): one loop, verify told by its captured kernels,
# the graph after each accept read as extend, every cycle, and the GPU phases within 2 % of
# the decoder's own CUDA events (tools/gpu/check_gpu_timeline.py). torch.profiler started
# after the agent: CUPTI's records stopping is said, and no cycle gets GPU figures. And an
# H100 round without --gpu: its cycles and the syncs it was written to make.
source "$(dirname "$0")/lib.sh"
R=$TOP/docs/results
CHECK_TIMELINE=$TOP/tools/gpu/check_gpu_timeline.py

for mode in split joined; do
	dir=$SCRATCH/$mode
	mkdir -p "$dir"
	xz -dc "$R/h200-$mode.sprb.xz" >"$dir/rec.sprb"
	xz -dc "$R/h200-$mode.truth.json.xz" >"$dir/truth.json"
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"
	read -r cycles loops <<<"$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(len(d["cycles"]), ";".join("%s/%s/%s" % (l["verify_from"], l["lead_role"], l["iterations"])
                                 for l in d["loops"]))' "$dir/report.json" 2>/dev/null)"
	if [ "${cycles:-0}" -eq 1009 ] && [ "$loops" = "captured-kernels/extend/1009" ] &&
		python3 "$CHECK_TIMELINE" "$dir/truth.json" "$dir/report.json" >"$dir/check.txt" 2>&1
	then
		pass "$mode: 1009 cycles, one loop ($loops), GPU phases within 2 % of the events: $(grep -c PASS "$dir/check.txt") phases pass"
	else
		fail "$mode: ${cycles:-no} cycles, loops ${loops:-none}, $(grep -c FAIL "$dir/check.txt") phases failing ($dir)"
		trap - EXIT
	fi
done

# An H100 round of tools/gpu/spec_compile.py (run_spec.sh's clean round, recorded with -p after
# warm-up; docs/results/gpu-spec-check.txt): its 200 cycles, and the extra accept syncs the
# program makes flagged in all but one cycle's at the ends, nothing else
dir=$SCRATCH/h100-clean
mkdir -p "$dir"
xz -dc "$R/h100-spec-replay.sprb.xz" >"$dir/rec.sprb"
"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
got=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(len(d["cycles"]), " ".join("%s@%s:%d" % (s["kind"], s["position"], s["count"])
                                 for s in d["flagged_sites"]))' "$dir/report.json" 2>/dev/null)
if [ "$got" = "200 stream@accept:398" ]; then
	pass "h100-clean: 200 cycles, 398 extra accept syncs flagged (400 less one cycle's at the ends), nothing else"
else
	fail "h100-clean: cycles and flagged sites ${got:-none}, want 200 stream@accept:398"
fi

# Hugging Face assisted generation (eager PyTorch, docs/results/hf-assisted.truth.json): every
# candidate round a cycle, the loop told by the Python frames of its syncs, none of the draft's
# syncs (the assistant's generate(), the candidate generator's reads) nor any in the verify
# flagged, and the loop's own reads that could go flagged: the cache trim's per-layer reads
# (DynamicLayer.crop) in the extend, the compare's second read in the accept
for v in rand:96 same:21; do
	IFS=: read -r name want <<<"$v"
	dir=$SCRATCH/hf-$name
	mkdir -p "$dir"
	xz -dc "$R/hf-assisted-$name.sprb.xz" >"$dir/rec.sprb"
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
	got=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
flagged = [s for s in d["syncs"] if s["flagged"]]
inside = sum(1 for s in flagged if s["position"] in ("draft-verify", "verify"))
crop = all(s["position"] == "extend" for s in flagged if "DynamicLayer.crop" in s["call_site"])
crops = sum(1 for s in flagged if "DynamicLayer.crop" in s["call_site"])
accept = sum(1 for s in flagged if s["position"] == "accept")
print(len(d["cycles"]), ";".join("%s/%s" % (l["verify_from"], l["role_evidence"]["decided_by"])
                                 for l in d["loops"]), inside, accept, crops > 0 and crop)' \
		"$dir/report.json" 2>/dev/null)
	if [ "$got" = "$want python-frames/python-frames 0 $want True" ]; then
		pass "hf-$name: $want cycles as the truth, told by the Python frames; no draft or verify sync flagged, the trim's reads in the extend"
	else
		fail "hf-$name: cycles, loop, flagged draft/verify and accept syncs, trim ${got:-none}; want $want python-frames/python-frames 0 $want True"
	fi
done

# tools/gpu/hf_assist.py on an H100 (docs/results/hf-assist-*: transformers' assisted generation,
# random weights, its truth every get_candidates call with its clock). Three recorded from the
# program's start (`record -- CMD`: the models' load, a warm-up generate(), two timed ones), one
# attached with -p after two warm-up rounds; greedy and sampled (the accept's own reads in
# _speculative_sampling), a small assistant and the target as its own. Each timed round: as
# many cycles as calls, each call lined up with its cycle (tools/gpu/check_hf.py), the loop
# told by the Python frames.
for v in small:96+96 small-sample:40+43 same:38+38 sample-p:43+34; do
	IFS=: read -r name want <<<"$v"
	dir=$SCRATCH/hf-assist-$name
	mkdir -p "$dir"
	xz -dc "$R/hf-assist-$name.sprb.xz" >"$dir/rec.sprb"
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
	loops=$(python3 -c '
import json, sys
print(";".join("%s/%s" % (l["verify_from"], l["role_evidence"]["decided_by"])
               for l in json.load(open(sys.argv[1]))["loops"]))' "$dir/report.json" 2>/dev/null)
	if python3 "$TOP/tools/gpu/check_hf.py" "$R/hf-assist-$name.truth.json" "$dir/report.json" \
		>"$dir/check.txt" 2>&1 && [ "$loops" = "python-frames/python-frames" ]; then
		pass "hf-assist-$name: $want cycles in the timed rounds as the truth, each with its get_candidates call, told by the Python frames"
	else
		fail "hf-assist-$name: loops ${loops:-none}, $(grep -h round "$dir/check.txt" | tr '\n' ' ')(want $want)"
	fi
done

dir=$SCRATCH/profiler-late
mkdir -p "$dir"
xz -dc "$R/h200-profiler-late.sprb.xz" >"$dir/rec.sprb"
"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>/dev/null
read -r stopped with <<<"$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(1 for a in d["gpu"]["agents"] if a["records_stopped"]),
      sum(1 for c in d["cycles"] if c["gpu"]))' "$dir/report.json" 2>/dev/null)"
if [ "${stopped:-0}" -eq 1 ] && [ "${with:-1}" -eq 0 ] &&
	grep -q "CUPTI's records stopped" "$dir/report.txt"; then
	pass "profiler-late: CUPTI's records stopping said, no cycle with GPU figures"
else
	fail "profiler-late: records_stopped ${stopped:-none}, ${with:-?} cycles with GPU figures"
fi
finish
