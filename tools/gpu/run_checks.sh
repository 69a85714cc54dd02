#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# On the GPU machine, the reliability and first-screen rules against real PyTorch:
#  1. spec_compile.py's rounds traced with -p after warm-up (run_spec.sh), checked against the
#     program's truth (check_spec.py); the reading counters of each report (no duplicate,
#     out-of-order or unknown-cookie record) and flagged sites costliest first;
#  2. a PyTorch program started with -- CMD: every stop the tracer makes for a library load
#     (libcuda, libnccl) is continued by the tracer, none by the watchdog, and how long each
#     took;
#  3. top --replay --batch of a real recording: blocks as many as its span takes.
#   tools/gpu/run_checks.sh OUTDIR   (root; specprobe-static built)
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?outdir}
SP=${SPECPROBE:-$TOP/specprobe-static}
mkdir -p "$OUT"
SPECPROBE=$SP "$TOP/tools/gpu/run_spec.sh" "$OUT" clean,ctx,pageable --cycles 200 \
	>"$OUT/run_spec.log" 2>&1
SPECPROBE=$SP python3 "$TOP/tools/gpu/check_spec.py" "$OUT/spec" >"$OUT/check_spec.txt" 2>&1
python3 "$TOP/tools/gpu/check_rules.py" reports "$OUT/spec" >"$OUT/check_rules.txt" 2>&1

# -- CMD: the loads of libcuda and libnccl stop the program until their probes are in place
cat >"$OUT/cmd_prog.py" <<'EOF'
import torch
import torch.distributed as dist
x = torch.ones(1024, 1024, device="cuda")
for _ in range(200):
    x = x @ x / 1024.0
    x.sum().item()
print("done", flush=True)
EOF
"$SP" record -v -o "$OUT/cmd.sprb" -- python3 "$OUT/cmd_prog.py" \
	>"$OUT/cmd.out" 2>"$OUT/cmd.record.err"
echo "record exit $?" >>"$OUT/cmd.record.err"
grep -v '^libbpf' "$OUT/cmd.record.err" | grep -i 'continue\|stop\|watchdog\|attached' \
	>"$OUT/cmd.stops.txt"
"$SP" report "$OUT/cmd.sprb" >"$OUT/cmd.report.txt" 2>&1
python3 "$TOP/tools/gpu/check_rules.py" stops "$OUT/cmd.record.err" "$OUT/cmd.out" \
	>>"$OUT/check_rules.txt" 2>&1

# top --replay of a real recording with call sites: blocks = span / interval
rec=$(ls "$OUT"/spec/0-*.sprb | head -1)
"$SP" top --replay "$rec" --batch --speed 0 -i 500ms >"$OUT/replay.txt" 2>"$OUT/replay.err"
python3 "$TOP/tests/integration/check_top.py" frames "$OUT/replay.txt" "$rec" 0.5 \
	>>"$OUT/check_rules.txt" 2>&1 && echo "ok   replay: blocks as the span takes" \
	>>"$OUT/check_rules.txt" || echo "FAIL replay" >>"$OUT/check_rules.txt"
xz -T4 -k -c "$rec" >"$OUT/real-replay.sprb.xz"
cat "$OUT/check_rules.txt"
