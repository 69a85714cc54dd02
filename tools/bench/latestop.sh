#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# How long a late library load holds the process: the look-alike loader dlopens
# libcuda under `specprobe record --`; from the recording, the time from the stop
# (SP_REC_LIBMAP) to the process's first call of the library.
#   tools/bench/latestop.sh [RUNS]      (root, after make)
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${1:-10}
TMP=$(mktemp -d /tmp/specprobe-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/lib"
cp "$TOP/.output/lookalike/libcuda.so.1" "$TMP/lib/"
for r in $(seq "$RUNS"); do
	"$TOP/specprobe" record -o "$TMP/$r.sprb" -- "$TOP/.output/lookalike/loader" dlopen \
		"$TMP/lib/libcuda.so.1" 10 "$TMP/truth" >/dev/null 2>&1
done
python3 - "$TMP" "$RUNS" <<'PY'
import statistics, struct, sys
tmp, runs = sys.argv[1], int(sys.argv[2])
held = []
for r in range(1, runs + 1):
    d = open(f"{tmp}/{r}.sprb", "rb").read()
    off = 16 + struct.unpack("<I", d[12:16])[0]
    stop = first = None
    while off < len(d):
        rtype, size = struct.unpack("<HH", d[off:off + 4])
        ts = struct.unpack("<Q", d[off + 8:off + 16])[0]
        if rtype == 4 and stop is None:      # SP_REC_LIBMAP
            stop = ts
        if rtype == 1 and first is None:     # SP_REC_CALL
            first = ts
        off += size
    held.append((first - stop) / 1e6)
print(f"{runs} runs: stop to first call of the library, ms: median {statistics.median(held):.2f},"
      f" min {min(held):.2f}, max {max(held):.2f}")
PY
