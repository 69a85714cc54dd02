#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Tracer memory and --max-size under process churn: record a shell loop that runs /bin/true
# EXECS times (--max-size 256K) and read specprobe's VmRSS after a quarter and after all of
# them (the loop waits while it is read), then the set's bytes.
#   tools/bench/churn_rss.sh [EXECS] [SPECPROBE] [OUTDIR]   (root)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
EXECS=${1:-8000}
SPECPROBE=${2:-$TOP/specprobe}
OUT=${3:-$(mktemp -d /tmp/specprobe-churn.XXXXXX)}
mkdir -p "$OUT"
rm -f "$OUT"/r.sprb* "$OUT"/at.* "$OUT"/ack.* "$OUT/fifo"
mkfifo "$OUT/fifo"
cat >"$OUT/loop.sh" <<'LOOP'
dir=$1 n=$2
for ((i = 1; i <= n; i++)); do
	/bin/true
	if [ $i -eq $((n / 4)) ] || [ $i -eq $n ]; then
		: >"$dir/at.$i"
		while [ ! -e "$dir/ack.$i" ]; do read -t 0.05 <>"$dir/fifo" || :; done
	fi
done
LOOP
"$SPECPROBE" record -o "$OUT/r.sprb" --max-size 256K -- bash "$OUT/loop.sh" "$OUT" "$EXECS" \
	2>"$OUT/record.err" &
rec=$!
start=$(date +%s.%N)
echo "execs rss_kib seconds"
for at in $((EXECS / 4)) "$EXECS"; do
	while [ ! -e "$OUT/at.$at" ]; do sleep 0.1; done
	echo "$at $(awk '/^VmRSS/ {print $2}' "/proc/$rec/status") $(echo "$(date +%s.%N) - $start" | bc)"
	touch "$OUT/ack.$at"
done
wait "$rec" || true	# exit 1: /bin/true loads no CUDA library
echo "set bytes: $(cat "$OUT"/r.sprb.* | wc -c) in $(ls "$OUT" | grep -c '^r\.sprb\.') files"
