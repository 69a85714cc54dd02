#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Tracer memory over a long recording: record the simulated server for SECONDS and
# sample specprobe's RSS every 10 s.   tools/bench/rss.sh [SECONDS] [OUTDIR]   (root)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SECONDS_TOTAL=${1:-600}
OUT=${2:-$(mktemp -d /tmp/specprobe-rss.XXXXXX)}
mkdir -p "$OUT"
# enough cycles to outlast the recording; each cycle is a few ms
"$TOP/.output/specsim/specsim-server" -q --cycles 100000000 --ready-file "$OUT/ready" \
	--go-file "$OUT/go" >"$OUT/server.log" 2>&1 &
server=$!
for _ in $(seq 300); do [ -e "$OUT/ready" ] && break; sleep 0.1; done
"$TOP/specprobe" record -o "$OUT/rss.sprb" --force -p "$(head -1 "$OUT/ready")" \
	--duration "$SECONDS_TOTAL" 2>"$OUT/record.err" &
rec=$!
for _ in $(seq 300); do [ -e "$OUT/rss.sprb" ] && break; sleep 0.1; done
touch "$OUT/go"
echo "seconds rss_kib recording_bytes"
start=$(date +%s)
while kill -0 "$rec" 2>/dev/null; do
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$rec/status" 2>/dev/null || echo 0)
	echo "$(($(date +%s) - start)) ${rss:-0} $(stat -c %s "$OUT/rss.sprb")"
	sleep 10
done
wait "$rec" || true
kill "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
tail -1 "$OUT/record.err"
rm -f "$OUT/rss.sprb"
