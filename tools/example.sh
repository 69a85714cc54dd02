#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Trace the bundled look-alike program: start it, attach by pid, record, dump.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/tmp/specprobe-example}
rm -rf "$OUT" && mkdir -p "$OUT"
"$TOP/.output/lookalike/caller" 200 2 "$OUT/go" "$OUT/truth.jsonl" >"$OUT/caller.out" &
pid=$!
sleep 0.2
echo "# specprobe record -o $OUT/run.sprb -p $pid"
"$TOP/specprobe" record -o "$OUT/run.sprb" -p "$pid" &
rec=$!
for _ in $(seq 300); do [ -e "$OUT/run.sprb" ] && break; sleep 0.1; done
touch "$OUT/go"
wait "$pid"
wait "$rec"
echo "# specprobe dump $OUT/run.sprb | head"
"$TOP/specprobe" dump "$OUT/run.sprb" 2>/dev/null | head -12
echo "# calls per entry point (specprobe dump --json)"
"$TOP/specprobe" dump --json "$OUT/run.sprb" | python3 -c '
import collections, json, sys
counts = collections.Counter(json.loads(l)["name"] for l in sys.stdin)
for name, n in counts.most_common():
    print(f"  {n:6d}  {name}")'
