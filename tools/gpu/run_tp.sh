#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# On the GPU machine: tp_spec.py's launcher traced with -p (its ranks load CUDA later),
# then the report and the checks against the ranks' truth.
#   tools/gpu/run_tp.sh OUTDIR [RANKS] [tp_spec.py options]   (root; ./specprobe-static built)
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?outdir}
RANKS=${2:-1}
shift $(($# > 1 ? 2 : 1))
W=$(mktemp -d /tmp/specprobe-tp.XXXXXX)
SP=$TOP/specprobe-static
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
python3 "$TOP/tools/gpu/tp_spec.py" --ranks "$RANKS" --cycles 300 --truth "$W/truth" \
	--go "$W/go" "$@" >"$OUT/tp.log" 2>&1 &
launcher=$!
"$SP" record -o "$W/rec.sprb" -p "$launcher" 2>"$OUT/record.err" &
rec=$!
for _ in $(seq 100); do [ -e "$W/rec.sprb" ] && break; sleep 0.1; done
touch "$W/go"
wait "$launcher"; echo "launcher exit $?" >>"$OUT/tp.log"
wait "$rec"; echo "record exit $?" >>"$OUT/record.err"
"$SP" dump --json "$W/rec.sprb" >"$W/calls.jsonl" 2>"$OUT/dump.err"
"$SP" report --json "$W/rec.sprb" >"$OUT/report.json" 2>"$OUT/report.err"
"$SP" report "$W/rec.sprb" >"$OUT/report.txt" 2>>"$OUT/report.err"
cp -r "$W/truth" "$OUT/truth"
cp "$W/rec.sprb" "$OUT/rec.sprb"
xz -T4 -c "$W/calls.jsonl" >"$OUT/calls.jsonl.xz" 2>/dev/null ||
	gzip -c "$W/calls.jsonl" >"$OUT/calls.jsonl.gz"
python3 "$TOP/tools/gpu/check_tp.py" "$W/truth" "$W/calls.jsonl" "$OUT/report.json" |
	tee "$OUT/check.txt"
