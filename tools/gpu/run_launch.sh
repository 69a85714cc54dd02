#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# On the GPU machine: start ops.py under trace (-- CMD), so every library PyTorch
# dlopens (libcuda through cudart, libnccl from its package directory) must be
# caught before its first call; then the same per-operation checks as run_capture.sh.
#   tools/gpu/run_launch.sh OUTDIR    (root; ./specprobe-static built beforehand)
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?outdir}
W=$(mktemp -d /tmp/specprobe-gpu.XXXXXX)
SP=$TOP/specprobe-static
mkdir -p "$OUT"
# ops.py asks cuGetProcAddress for every catalogued driver name it knows of
"$SP" list --lib "$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')" --probes --no-attach \
	>"$OUT/list.txt" 2>&1
awk '$1 ~ /^cu/ {print $1}' "$OUT/list.txt" | sed -E 's/(_v[0-9])?(_pt[sd][sz])?$//; s/_v[0-9]$//' |
	sort -u >"$W/names"
( for _ in $(seq 1200); do [ -e "$W/ready" ] && break; sleep 0.25; done; mv "$W/names" "$W/go" ) &
SECONDS=0
PYTHONUNBUFFERED=1 "$SP" record -o "$W/rec.sprb" -- python3 "$TOP/tools/gpu/ops.py" \
	"$W/ready" "$W/go" "$OUT/plan.json" >"$OUT/ops.log" 2>"$OUT/record.err"
echo "record exit $? after $SECONDS s" >>"$OUT/record.err"
"$SP" dump --json "$W/rec.sprb" >"$W/calls.jsonl" 2>"$OUT/dump.err"
"$SP" dump -H "$W/rec.sprb" 2>/dev/null | grep '^#' | grep -v '# probe ' >"$OUT/dump-head.txt"
pid=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["pid"])' \
	"$W/calls.jsonl")
python3 "$TOP/tools/gpu/check_ops.py" "$W/calls.jsonl" "$OUT/plan.json" "$pid" | tee "$OUT/check.txt"
python3 - "$W/calls.jsonl" <<'PY' | tee -a "$OUT/check.txt"
import collections, json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
names = collections.Counter(c["name"] for c in calls)
first = {}
for c in calls:
    first.setdefault(c["tid"], c)
ok = True
# cudart's first driver call is cuGetProcAddress; PyTorch's first NCCL call creates the comm
for want in ("cuGetProcAddress", "ncclCommInitRank"):
    alt = [n for n in names if n.startswith(want)]
    good = sum(names[n] for n in alt) > 0
    ok &= good
    print(("ok   " if good else "FAIL ") + f"{want}: {sum(names[n] for n in alt)} calls captured")
early = sorted(calls, key=lambda c: c["ts_entry"])[:5]
print("first calls recorded: " + ", ".join(c["name"] for c in early))
print("ok   launch" if ok else "FAIL launch")
PY
if grep -q "attached [0-9]* probes to .*site-packages/.*libnccl.so" "$OUT/record.err"; then
	attached=$(grep -o 'attached [0-9]* probes to .*' "$OUT/record.err")
	echo "ok   libnccl from the package directory attached when dlopen'ed: $attached"
else
	echo "FAIL libnccl was not attached late"
fi | tee -a "$OUT/check.txt"
python3 -c '
import collections, json, sys
c = collections.Counter(json.loads(l)["name"] for l in open(sys.argv[1]))
for k, v in c.most_common(): print(v, k)' "$W/calls.jsonl" >"$OUT/counts.txt"
