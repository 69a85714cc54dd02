#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# On the GPU machine: spec_compile.py's variants, each round recorded with -p by a tracer
# attached after compile and warm-up, as beside a running server; then report of each.
#   tools/gpu/run_spec.sh OUTDIR VARIANTS [spec_compile.py options]   (root; specprobe-static)
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?outdir}
VARIANTS=${2:-clean,ctx,side,side-pre,pageable}
shift $(($# > 1 ? 2 : 1))
W=$(mktemp -d /tmp/specprobe-spec.XXXXXX)
SP=${SPECPROBE:-$TOP/specprobe-static}
mkdir -p "$OUT/spec"
nvidia-smi -L >"$OUT/spec/gpu.txt" 2>&1
python3 "$TOP/tools/gpu/hostmem.py" >"$OUT/spec/hostmem.txt" 2>&1
PYTHONUNBUFFERED=1 python3 "$TOP/tools/gpu/spec_compile.py" --dir "$W" --variants "$VARIANTS" \
	"$@" >"$OUT/spec/spec.log" 2>&1 &
pid=$!
i=0
for v in ${VARIANTS//,/ }; do
	while [ ! -e "$W/ready-$i" ]; do
		kill -0 $pid 2>/dev/null || { echo "spec_compile.py exited"; tail "$OUT/spec/spec.log"; exit 1; }
		sleep 0.1
	done
	rec="$OUT/spec/$i-$v.sprb"
	"$SP" record -o "$rec" -p "$pid" 2>"$OUT/spec/$i-$v.record.err" &
	tracer=$!
	for _ in $(seq 300); do grep -q "tracing" "$OUT/spec/$i-$v.record.err" 2>/dev/null && break
		sleep 0.1; done
	sleep 0.5
	touch "$W/go-$i"
	while [ ! -e "$W/done-$i" ]; do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
	kill -INT $tracer; wait $tracer; echo "record exit $?" >>"$OUT/spec/$i-$v.record.err"
	cp "$W/truth-$i.json" "$OUT/spec/$i-$v.truth.json" 2>/dev/null
	"$SP" report --json "$rec" >"$OUT/spec/$i-$v.report.json" 2>"$OUT/spec/$i-$v.report.err"
	"$SP" report "$rec" >"$OUT/spec/$i-$v.report.txt" 2>>"$OUT/spec/$i-$v.report.err"
	i=$((i + 1))
done
wait $pid; echo "spec_compile.py exit $?" >>"$OUT/spec/spec.log"
