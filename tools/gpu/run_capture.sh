#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# On the GPU machine: record ops.py with the static binary and check the counts.
#   tools/gpu/run_capture.sh OUTDIR    (root; ./specprobe-static built beforehand)
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?outdir}
W=$(mktemp -d /tmp/specprobe-gpu.XXXXXX)
SP=$TOP/specprobe-static
mkdir -p "$OUT"
nvidia-smi -L >"$OUT/gpu.txt" 2>&1
PYTHONUNBUFFERED=1 python3 "$TOP/tools/gpu/ops.py" "$W/ready" "$W/go" "$OUT/plan.json" \
	>"$OUT/ops.log" 2>&1 &
pid=$!
for _ in $(seq 1200); do [ -e "$W/ready" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.25; done
[ -e "$W/ready" ] || { echo "ops.py never became ready"; tail "$OUT/ops.log"; exit 1; }
"$SP" list -p "$pid" --probes >"$OUT/list.txt" 2>&1
"$SP" record -o "$W/rec.sprb" -p "$pid" 2>"$OUT/record.err" &
rec=$!
for _ in $(seq 600); do [ -e "$W/rec.sprb" ] && break; sleep 0.1; done
# the names ops.py asks cuGetProcAddress for: the libcuda probes, variant tags stripped
awk '$1 ~ /^cu/ {print $1}' "$OUT/list.txt" | sed -E 's/(_v[0-9])?(_pt[sd][sz])?$//; s/_v[0-9]$//' |
	sort -u >"$W/names"
mv "$W/names" "$W/go"
wait "$pid"; echo "ops.py exit $?" >>"$OUT/ops.log"
wait "$rec"; echo "record exit $?" >>"$OUT/record.err"
"$SP" dump --json "$W/rec.sprb" >"$W/calls.jsonl" 2>"$OUT/dump.err"
"$SP" dump -H "$W/rec.sprb" 2>/dev/null | head -400 >"$OUT/dump-head.txt"
python3 "$TOP/tools/gpu/check_ops.py" "$W/calls.jsonl" "$OUT/plan.json" "$pid" | tee "$OUT/check.txt"
python3 -c '
import collections, json, sys
c = collections.Counter(json.loads(l)["name"] for l in open(sys.argv[1]))
for k, v in c.most_common(): print(v, k)' "$W/calls.jsonl" >"$OUT/counts.txt"
xz -T4 -c "$W/calls.jsonl" >"$OUT/calls.jsonl.xz" 2>/dev/null || gzip -c "$W/calls.jsonl" >"$OUT/calls.jsonl.gz"
ls -la "$W" >>"$OUT/record.err"
