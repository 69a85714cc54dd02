#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The launch stacks the default --stacks takes as role evidence (docs/reference.md): each
# graph's launch at most once a second and at least once a second it is launched in; one
# in eight kernel launches that follow a call that was no kernel launch, 20 ms apart at
# least on a thread, none that follow one; whole stacks, each naming the function that launched; none with --stacks none, every
# launch with --stacks all. Counts from the recording's own calls (dump --json).
source "$(dirname "$0")/lib.sh"

# check DIR STACKS: what dump --json of DIR/rec.sprb shows against the rule for STACKS
check() {
	python3 - "$1/rec.jsonl" "$2" <<'PY'
import collections, json, sys
path, mode = sys.argv[1], sys.argv[2]
calls = [json.loads(l) for l in open(path) if l.startswith("{")]
calls = [c for c in calls if "name" in c]
by_thread = collections.defaultdict(list)
for c in calls:
    by_thread[c["tid"]].append(c)
KERNEL = ("cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel")
leads = lead_stacks = follow_stacks = 0
graph = collections.defaultdict(list)     # exec -> (ts, has stack)
lead_ts = collections.defaultdict(list)   # tid -> entry times of first launches with a stack
unnamed = 0
for tid, cs in by_thread.items():
    cs.sort(key=lambda c: c["seq"])
    prev = None
    for c in cs:
        has = "stack" in c
        if has and not any(f.get("symbol") for f in c["stack"]["native"]) and \
                not c["stack"]["python"]:
            unnamed += 1
        if c["name"] in KERNEL and c["depth"] == 0:
            lead = prev is None or prev not in KERNEL
            leads += lead
            lead_stacks += lead and has
            if lead and has:
                lead_ts[tid].append(c["ts_entry"])
            follow_stacks += (not lead) and has
        if c["name"] == "cuGraphLaunch":
            graph[c["args"]["exec"]].append((c["ts_entry"], has))
        if c["depth"] == 0:
            prev = c["name"]
bad = []
if mode == "none":
    n = sum("stack" in c for c in calls)
    bad += [f"{n} calls with a stack"] if n else []
elif mode == "all":
    n = sum("stack" not in c for c in calls if c["name"] in KERNEL + ("cuGraphLaunch",))
    bad += [f"{n} launches without a stack"] if n else []
else:
    if follow_stacks:
        bad.append(f"{follow_stacks} kernel launches after a kernel launch took a stack")
    if not lead_stacks or lead_stacks * 4 > leads:
        bad.append(f"{lead_stacks} of {leads} first kernel launches took a stack, want some, "
                   f"about 1/8 at most")
    for tid, ts in lead_ts.items():
        gaps = [b - a for a, b in zip(ts, ts[1:])]
        if gaps and min(gaps) < 20e6:
            bad.append(f"thread {tid}: first-launch stacks {min(gaps) / 1e6:.3f} ms apart, "
                       f"want 20 ms at least")
    for x, ls in graph.items():
        taken = [ts for ts, has in ls if has]
        span = (ls[-1][0] - ls[0][0]) / 1e9
        gaps = [b - a for a, b in zip(taken, taken[1:])]
        if not taken or (gaps and min(gaps) < 1e9) or len(taken) < int(span):
            bad.append(f"exec {x}: {len(taken)} stacks over {span:.1f} s of launches, gaps "
                       f"{[round(g / 1e9, 3) for g in gaps[:4]]}")
if unnamed:
    bad.append(f"{unnamed} stacks name no function")
print("; ".join(bad) if bad else
      f"{lead_stacks} of {leads} first kernel launches, {sum(h for l in graph.values() for _, h in l)}"
      f" graph launches of {len(graph)} graphs with a stack")
sys.exit(1 if bad else 0)
PY
}

run_case() {
	local name=$1 stacks=$2 dir=$SCRATCH/$1 out
	shift 2
	mkdir -p "$dir"
	"$SPECPROBE" record --stacks "$stacks" -o "$dir/rec.sprb" -- "$SERVER" -q "$@" \
		>"$dir/server.out" 2>"$dir/record.err"
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/rec.jsonl" 2>/dev/null
	if out=$(check "$dir" "$stacks" 2>&1); then
		pass "$name: $out"
	else
		fail "$name: $out ($dir)"
	fi
}

# eager accept kernels after each graph, 3 s of graph launches
run_case default-graphs syncs --cycles 1200 --eager 3
run_case default-eager syncs --cycles 300 --eager-loop
run_case none-graphs none --cycles 200
run_case all-graphs all --cycles 200
finish
