#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Added cost per call on the simulated server, untraced and traced side by side:
# each round runs specsim-server's rate test (N back-to-back calls) once untraced and
# once under specprobe record, for an entry-only kind (cuLaunchKernel) and an
# entry + completion kind (cuStreamQuery). The traced launch rate, with the drops of
# that run, is the sustained call rate.
#   tools/bench/specsim_cost.sh [ROUNDS] [CALLS]      (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-5}
CALLS=${2:-1000000}
SERVER=$TOP/.output/specsim/specsim-server
TMP=$(mktemp -d /tmp/specprobe-simcost.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export SPECSIM_KERNEL_NS=1	# launches cost the host, not the simulated GPU queue

ns_per_call() { sed -n 's/.* \([0-9.]*\) ns per call.*/\1/p' "$1" | tail -1; }

untraced() {	# CALL
	"$SERVER" --cycles 0 --rate-test "$CALLS" --rate-call "$1" >"$TMP/u.out" 2>&1
	ns_per_call "$TMP/u.out"
}

traced() {	# CALL -> "ns drops"
	rm -f "$TMP/ready" "$TMP/go" "$TMP/t.sprb"
	"$SERVER" --cycles 0 --rate-test "$CALLS" --rate-call "$1" --ready-file "$TMP/ready" \
		--go-file "$TMP/go" >"$TMP/t.out" 2>&1 &
	local server=$! rec
	for _ in $(seq 300); do [ -e "$TMP/ready" ] && break; sleep 0.05; done
	"$TOP/specprobe" record -o "$TMP/t.sprb" -p "$(head -1 "$TMP/ready")" 2>"$TMP/rec.err" &
	rec=$!
	for _ in $(seq 300); do [ -e "$TMP/t.sprb" ] && break; sleep 0.05; done
	touch "$TMP/go"
	wait "$server"
	wait "$rec"
	echo "$(ns_per_call "$TMP/t.out") $(grep -o '[0-9]* dropped' "$TMP/rec.err" | cut -d' ' -f1)"
}

for r in $(seq "$ROUNDS"); do
	for call in launch query; do
		echo "$call $(untraced $call) $(traced $call)" >>"$TMP/rows"
	done
done

python3 - "$TMP/rows" "$ROUNDS" "$CALLS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"{sys.argv[2]} interleaved rounds of {sys.argv[3]} calls; median ns per call")
print("| call | untraced | traced | added | traced calls/s | drops per traced run |")
print("|---|---|---|---|---|---|")
for call, label in (("launch", "cuLaunchKernel (entry only)"),
                    ("query", "cuStreamQuery (entry + completion)")):
    mine = [r for r in rows if r[0] == call]
    u = statistics.median(float(r[1]) for r in mine)
    t = statistics.median(float(r[2]) for r in mine)
    drops = ", ".join(r[3] for r in mine)
    print(f"| {label} | {u:.1f} | {t:.1f} | {t - u:+.1f} | {1e9 / t:,.0f} | {drops} |")
PY
