#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# On the GPU machine: eager_decoder.py (a draft smaller than the target, then the target as
# its own draft), each recorded with -p by a tracer attached after warm-up, as beside a
# running server; report of each checked against the decoder's own rounds.
#   tools/gpu/run_eager.sh OUTDIR [eager_decoder.py options]   (root; specprobe-static)
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?outdir}
shift
SP=${SPECPROBE:-$TOP/specprobe-static}
mkdir -p "$OUT/eager"
nvidia-smi -L >"$OUT/eager/gpu.txt" 2>&1
: >"$OUT/eager/summary.txt"
status=0
for variant in small-draft same-model; do
	W=$(mktemp -d /tmp/specprobe-eager.XXXXXX)
	opts=()
	[ "$variant" = same-model ] && opts=(--same-model)
	PYTHONUNBUFFERED=1 python3 "$TOP/tools/gpu/eager_decoder.py" --dir "$W" "${opts[@]}" \
		"$@" >"$OUT/eager/$variant.log" 2>&1 &
	pid=$!
	while [ ! -e "$W/ready" ]; do
		if ! kill -0 $pid 2>/dev/null; then
			echo "$variant: eager_decoder.py exited: $(tail -1 "$OUT/eager/$variant.log")" |
				tee -a "$OUT/eager/summary.txt"
			status=1
			continue 2
		fi
		sleep 0.1
	done
	rec="$OUT/eager/$variant.sprb"
	"$SP" record --force -o "$rec" -p "$pid" 2>"$OUT/eager/$variant.record.err" &
	tracer=$!
	for _ in $(seq 300); do
		grep -q "tracing" "$OUT/eager/$variant.record.err" 2>/dev/null && break
		sleep 0.1
	done
	# a cycle's draft is known to begin after the mark when it comes later than a draft gap
	sleep 1
	touch "$W/go"
	while [ ! -e "$W/done" ]; do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
	sleep 0.2
	kill -INT $tracer
	wait $tracer
	echo "record exit $?" >>"$OUT/eager/$variant.record.err"
	wait $pid
	cp "$W/truth.json" "$OUT/eager/$variant.truth.json" 2>/dev/null
	"$SP" report --json "$rec" >"$OUT/eager/$variant.report.json" 2>"$OUT/eager/$variant.report.err"
	"$SP" report "$rec" >"$OUT/eager/$variant.report.txt" 2>>"$OUT/eager/$variant.report.err"
	if python3 "$TOP/tools/gpu/check_eager.py" --report "$OUT/eager/$variant.report.json" \
		--truth "$OUT/eager/$variant.truth.json" >"$OUT/eager/$variant.check.txt" 2>&1; then
		verdict=ok
	else
		verdict=FAIL
		status=1
	fi
	printf '%-5s %s: %s\n' "$verdict" "$variant" \
		"$(tail -1 "$OUT/eager/$variant.check.txt" | sed 's/^ *//')" | tee -a "$OUT/eager/summary.txt"
	rm -rf "$W"
done
# what comes back from a GPU machine is a few files: one archive holds the recordings too
tar -C "$OUT" -cJf "$OUT/eager.tar.xz" eager
exit $status
