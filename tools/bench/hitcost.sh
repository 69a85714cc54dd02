#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Where a probe hit's time goes (hitcost.c), side by side in one run. With BASE, the
# BPF programs of that commit are built too and the two builds run in alternation,
# one round each at a time, so before and after share the machine's moods.
#   tools/bench/hitcost.sh [ROUNDS] [CALLS] [BASE]      (root, after make)
#   HITCOST=path/to/hitcost-static tools/bench/hitcost.sh ...   (a GPU host: no build)
#   HITCOST_BASE=path/to/base-hitcost-static ...: BASE's bench already built (made here with
#   STATIC=1 tools/bench/hitcost.sh 1 1 BASE COPY_TO), BASE then only names it
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-5}
CALLS=${2:-100000}
BASE=${3:-}
NEW=${HITCOST:-$TOP/.output/bench/hitcost}
TMP=$(mktemp -d /tmp/specprobe-hitcost.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
ARCH_RAW=$(uname -m)

build_base() {	# the bench against BASE's bpf/ (specprobe.h and specprobe.bpf.c)
	local dir=$TMP/base
	mkdir -p "$dir"
	git -C "$TOP" archive "$BASE" bpf | tar -x -C "$dir"
	clang -g -O2 -Wall -target bpf -D__TARGET_ARCH_x86 -I"$TOP/vmlinux/$ARCH_RAW" \
		-I"$dir/bpf" -c "$dir/bpf/specprobe.bpf.c" -o "$dir/sp.tmp.o"
	bpftool gen object "$dir/specprobe.bpf.o" "$dir/sp.tmp.o"
	bpftool gen skeleton "$dir/specprobe.bpf.o" >"$dir/specprobe.skel.h"
	cc -g -O2 -D_GNU_SOURCE -I"$dir" -I"$TOP/.output/bench" -I"$dir/bpf" \
		-I"$TOP/user/capture" -I"$TOP/user/recording" "$TOP/tools/bench/hitcost.c" \
		"$TOP/.output/user/recording/catalog.o" "$TOP/.output/user/capture/calibrate.o" \
		"$TOP/.output/user/capture/multilink.o" \
		${STATIC:+-static} -lbpf -lelf -lz ${STATIC:+-lzstd} -lpthread -o "$dir/hitcost"
	if [ -n "${4:-}" ]; then cp "$dir/hitcost" "$4"; fi
}

builds="new"
BASE_BIN=$TMP/base/hitcost
if [ -n "${HITCOST_BASE:-}" ]; then
	BASE_BIN=$HITCOST_BASE
	BASE=${BASE:-$(basename "$HITCOST_BASE")}
	builds="base new"
elif [ -n "$BASE" ]; then
	build_base "$@"
	builds="base new"
fi
for r in $(seq "$ROUNDS"); do
	stats=0
	[ "$r" = "$ROUNDS" ] && stats=$CALLS
	for b in $builds; do
		bin=$NEW
		[ "$b" = base ] && bin=$BASE_BIN
		"$bin" 1 "$CALLS" "$stats" | sed "s/^{/{\"build\":\"$b\",\"run\":$r,/" >>"$TMP/rows.jsonl"
	done
done

python3 - "$TMP/rows.jsonl" "$ROUNDS" "$CALLS" "$BASE" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rounds, calls, base = sys.argv[2], sys.argv[3], sys.argv[4]
builds = ["base", "new"] if base else ["new"]
what = {
    "trap": "bare trap (empty program)",
    "count": "bare trap + per-CPU counter (minimal counting tool)",
    "filter": "+ traced-process filter (one hash lookup)",
    "filter_bits": "+ traced-process filter (one bit in an array: specprobe now)",
    "thread_hash": "filter + thread state in a hash (tid)",
    "thread_task": "filter + thread state in task storage",
    "ktime": "filter + timestamp",
    "ring": "filter + 112-byte record reserved, filled, submitted",
    "ring_discard": "filter + a record reserved and discarded",
    "ring_small": "filter + a 16-byte record submitted",
    "ring_line": "filter + a 56-byte record (one cache line with the ring's header)",
    "stack": "filter + one 32-byte user stack read",
    "count+ret_trap": "counter + an empty return probe",
    "sp_launch": "specprobe: cuLaunchKernel (entry only, 3 stack args)",
    "sp_graph": "specprobe: cuGraphLaunch (entry only)",
    "sp_d2d_copy": "specprobe: cuMemcpyDtoDAsync",
    "sp_query_entry": "specprobe: cuEventQuery, entry probe alone",
    "sp_query": "specprobe: cuEventQuery, entry + return",
    "sp_sync": "specprobe: cuStreamSynchronize, entry + return",
    "sp_query_session": "specprobe: cuEventQuery as a uprobe session (prog: a run's mean)",
    "sp_sync_session": "specprobe: cuStreamSynchronize as a uprobe session",
    "sp_sync_stack": "specprobe: cuStreamSynchronize, entry + return + its stack record",
    "sp_sync_stack_deep": "specprobe: the same, called 40 frame-pointer frames deep",
    "sp_sync_stack_nofp": "specprobe: the same, its caller keeping data in rbp",
}
added = {}
for b in builds:
    per_run = {}
    for r in rows:
        if r.get("build") == b and "variant" in r:
            per_run.setdefault(r["run"], {})[r["variant"]] = r["ns"]
    for v in what:
        d = [run[v] - run["none"] for run in per_run.values() if v in run]
        added[b, v] = statistics.median(d) if d else float("nan")
stats = {(r["build"], r["stats"]): r for r in rows if "stats" in r}
print(f"{rounds} rounds of {calls} calls per variant; ns per call added to an unprobed call "
      "(median over rounds); prog: ns inside the BPF programs (kernel statistics pass)")
head = "| variant | what |"
for b in builds:
    head += f" {b}: added | {b}: prog entry / return |"
print(head)
print("|---|---|" + "---|---|" * len(builds))
for v, text in what.items():
    line = f"| {v} | {text} |"
    for b in builds:
        s = stats.get((b, v), {})
        prog = f"{s.get('entry_prog_ns', 0):.0f} / {s.get('return_prog_ns', 0):.0f}" if s else "-"
        line += f" {added[b, v]:.0f} | {prog} |"
    print(line)
for b in builds:
    trap = added[b, "count"]
    print(f"{b}: above the counting trap: launch {added[b, 'sp_launch'] - trap:+.0f} ns, "
          f"graph launch {added[b, 'sp_graph'] - trap:+.0f} ns; return probe adds "
          f"{added[b, 'sp_query'] - added[b, 'sp_query_entry']:.0f} ns (query), "
          f"{added[b, 'count+ret_trap'] - trap:.0f} ns (empty return program)")
PY
