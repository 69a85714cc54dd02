#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Sustained call rate with zero drops: PROCS look-alike callers (one per core) make CALLS
# entry-only launches, then CALLS entry + completion queries, back to back, all traced by
# one specprobe record with the default 64 MiB ring. The recording is far larger than the
# ring, so zero drops means the reader kept up.
#   tools/bench/rate.sh [PROCS] [CALLS]      (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
PROCS=${1:-2}
CALLS=${2:-2000000}
TMP=$(mktemp -d /tmp/specprobe-rate.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
pids=
for i in $(seq "$PROCS"); do
	"$TOP/.output/bench/callcost" "$CALLS" "$TMP/go" >"$TMP/out.$i" &
	pids="$pids${pids:+,}$!"
done
sleep 0.3
"$TOP/specprobe" record -o "$TMP/rate.sprb" -p "$pids" 2>"$TMP/rec.err" &
rec=$!
for _ in $(seq 300); do [ -e "$TMP/rate.sprb" ] && break; sleep 0.1; done
start=$(date +%s%N)
touch "$TMP/go"
for p in ${pids//,/ }; do wait "$p"; done
end=$(date +%s%N)
wait "$rec"
python3 - "$TMP" "$PROCS" "$(( (end - start) / 1000000 ))" "$(tail -1 "$TMP/rec.err")" <<'PY'
import json, sys
tmp, procs, ms, summary = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = [json.loads(open(f"{tmp}/out.{i}").read().split("\n")[-2]) for i in range(1, procs + 1)]
launch = sum(1e9 / r["entry_only_ns"] for r in rows)
query = sum(1e9 / r["completion_ns"] for r in rows)
print(f"{procs} traced processes x {rows[0]['calls']} calls per kind, {ms} ms in all")
print(f"entry-only launches: {launch:,.0f} calls/s together ({launch:,.0f} records/s)")
print(f"entry + completion queries: {query:,.0f} calls/s together ({2 * query:,.0f} records/s)")
print(summary)
PY
