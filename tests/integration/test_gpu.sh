#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# --gpu on the simulated server (docs/gpu-timeline.md): the activity agent goes in through
# CUDA_INJECTION64_PATH, specsim's look-alike libcupti reports the simulator's own GPU
# timeline, and every GPU figure of the report (phase start, end and busy per cycle, GPU
# idle per cycle, GPU idle caused per flagged sync, executions matched) equals the truth to
# the nanosecond: graph and eager drafts, --torch, planted syncs, 2 ranks, recorded and
# live. The agent adds no call: the same run traced with and without --gpu makes the same
# calls. Bad input: one line each, a host-only report, the target unharmed.
source "$(dirname "$0")/lib.sh"
CHECK=$TOP/tests/integration/check_gpu.py

if [ ! -e "$TOP/.output/specsim/libcupti.so" ]; then
	echo "test_gpu: specsim has no look-alike libcupti"
	finish
	exit
fi

# agent folders that were there before: another run's, not ours
ls -d /dev/shm/specprobe-gpu.* >"$SCRATCH/shm.start" 2>/dev/null

# calls per process and syncs of a report, the same for the same run with or without --gpu
call_counts() {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sorted(p["calls"] for p in d["processes"]), d["sync_calls"], d["flagged_syncs"])' "$1"
}

# exact NAME ARGS...: record --gpu a whole run, check every GPU figure against the truth
exact() {
	local name=$1 dir="$SCRATCH/$1"
	shift
	mkdir -p "$dir"
	if ! "$SPECPROBE" record --gpu -o "$dir/rec.sprb" -- "$SERVER" -q --ground-truth \
		"$dir/gt" "$@" >"$dir/out" 2>"$dir/rec.err"; then
		fail "$name: record --gpu failed: $(grep -v '^libbpf' "$dir/rec.err" | head -1)"
		return
	fi
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"
	if python3 "$CHECK" "$dir"/gt.rank* "$dir/report.json" >"$dir/check.out" 2>&1; then
		pass "$name: GPU figures equal the truth ($(tail -1 "$dir/check.out" | sed 's/^ *//'))"
	else
		head -20 "$dir/check.out"
		fail "$name: GPU figures differ from the truth ($dir)"
		trap - EXIT
	fi
}

exact graphs --cycles 60 --plant ctx@draft-verify/5 --plant pageable-copy@accept/3
exact eager-drafts --cycles 60 --draft-mode eager --plant ctx@draft-verify/4
exact torch --cycles 60 --torch -k 5 --plant side-stream/2 --plant pageable-copy/3
exact torch-run-order --cycles 60 --torch -k 5 --capture-order run
exact ranks --cycles 60 --ranks 2 --verify-pieces 2
# CUPTI hands a buffer over late (only once all its records are complete, as with work
# always in flight): records come after watermarks past their end, and cycles wait
SPECSIM_CUPTI=late exact late-buffers --cycles 300 --plant ctx@draft-verify/5

# dump_truth NAME DIR [--rotated]: dump --json's GPU executions are the truth's, as many as
# the report read, each kernel named as the truth names it; dump -c counts them alike
dump_truth() {
	local name=$1 dir=$2 counted
	shift 2
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/dump.jsonl" 2>"$dir/dump.err"
	[ -s "$dir/report.json" ] ||
		"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
	counted=$("$SPECPROBE" dump -c "$dir/rec.sprb" 2>/dev/null |
		awk '$2 == "GPU" && $3 != "name" && $3 != "state" { n += $1 } END { print n + 0 }')
	if python3 "$TOP/tests/integration/check_gpu_dump.py" "$@" "$dir/dump.jsonl" \
		"$dir/report.json" "$dir"/gt.rank* >"$dir/dump.check" 2>&1 &&
		[ "$counted" = "$(grep -c '"record":"gpu"' "$dir/dump.jsonl")" ]; then
		pass "$name: dump shows the truth's GPU executions ($(tail -1 "$dir/dump.check" |
			sed 's/^ *//'))"
	else
		head -5 "$dir/dump.check"
		fail "$name: dump's GPU records differ from the truth (dump -c: $counted) ($dir)"
	fi
}
for name in graphs eager-drafts torch ranks; do
	dump_truth "dump $name" "$SCRATCH/$name"
done

# a bounded recording whose first segments were rotated out still names every kernel: each
# segment repeats the kernel names (and the agent's state) of the processes still alive
dir=$SCRATCH/bounded
mkdir -p "$dir"
"$SPECPROBE" record --gpu -M 256K -o "$dir/rec.sprb" -- "$SERVER" -q --ground-truth "$dir/gt" \
	--cycles 400 --draft-mode eager >/dev/null 2>"$dir/rec.err"
first=$("$SPECPROBE" dump -c "$dir/rec.sprb" 2>&1 >/dev/null |
	sed -n 's/.*rotated out before segment \([0-9]*\):.*/\1/p')
if [ "${first:-0}" -ge 2 ]; then
	dump_truth "bounded, segments 0..$((first - 1)) rotated out" "$dir" --rotated
else
	fail "bounded: no segment rotated out ($(grep -v '^libbpf' "$dir/rec.err" | tail -1))"
fi

# the text report leads with the answer, in GPU time: each phase's median GPU busy and the
# median idle of a cycle, as the cycles' own GPU figures (checked against the truth above)
# give them; its first five lines split the cycle by GPU time
dir=$SCRATCH/graphs
"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>&1
if lead=$(python3 - "$dir/report.txt" "$dir/report.json" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read().split("\n")
cycles = [c["gpu"] for c in json.load(open(sys.argv[2]))["cycles"] if c["gpu"]]
def p50(v):
    v = sorted(v)
    return v[max((len(v) * 50 + 99) // 100 - 1, 0)] / 1e6
want = [p50([g["phases"][p]["busy_ns"] for g in cycles])
        for p in ("draft", "verify", "accept", "extend")] + [p50([g["idle_ns"] for g in cycles])]
lead = [l for l in text if l.startswith("GPU busy a cycle")]
m = lead and re.match(r"GPU busy a cycle, p50 ms of (\d+): draft ([\d.]+), verify ([\d.]+), "
                      r"accept ([\d.]+), extend ([\d.]+); idle ([\d.]+)$", lead[0])
ok = (m and int(m.group(1)) == len(cycles) and
      all(abs(float(m.group(i + 2)) - w) < 0.0005 for i, w in enumerate(want)) and
      text.index(lead[0]) < next(i for i, l in enumerate(text) if l.startswith("Flagged syncs")) and
      re.match(r"  GPU a cycle \(p50 [\d.]+ ms, %d cycles\): draft \d+%%" % len(cycles), text[1]))
print(lead[0] if ok else f"{lead} {text[1]}, want {want}")
sys.exit(0 if ok else 1)
PY
); then
	pass "text report leads with the GPU answer, medians as the cycles give: $lead"
else
	fail "text report: GPU lead line: $lead"
fi

# export: one GPU slice per execution, each graph's flow from its launch call
"$SPECPROBE" export "$dir/rec.sprb" -o "$dir/trace.pftrace" >/dev/null 2>&1
python3 "$TOP/tests/integration/check_perfetto.py" --counts "$dir/trace.pftrace" >"$dir/counts"
decoded=$?
slices=$(awk '/^track kind 0 slice/ { n += $NF } END { print n + 0 }' "$dir/counts")
records=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpu"]["records"])' \
	"$dir/report.json")
if [ "$decoded" = 0 ] && [ "$slices" -gt 0 ] && [ "$slices" = "$records" ]; then
	pass "export: $slices GPU slices, one per execution, flows to their launches"
else
	fail "export: $slices GPU slices for $records executions"
fi

# live: report --gpu -- CMD reads the agents' rings through the same pipeline
dir=$SCRATCH/live
mkdir -p "$dir"
"$SPECPROBE" report --gpu --json -o "$dir/live.sprb" -- "$SERVER" -q --ground-truth "$dir/gt" \
	--cycles 60 \
	--plant ctx@draft-verify/5 >"$dir/report.json" 2>"$dir/report.err"
if python3 "$CHECK" "$dir"/gt.rank* "$dir/report.json" >"$dir/check.out" 2>&1; then
	pass "live report --gpu: GPU figures equal the truth ($(tail -1 "$dir/check.out" |
		sed 's/^ *//'))"
else
	head -20 "$dir/check.out"
	fail "live report --gpu: GPU figures differ from the truth"
fi

# no call added: the same run recorded without --gpu makes the same calls and syncs
dir=$SCRATCH/plain
mkdir -p "$dir"
"$SPECPROBE" record -o "$dir/rec.sprb" -- "$SERVER" -q --cycles 60 --plant ctx@draft-verify/5 \
	--plant pageable-copy@accept/3 >/dev/null 2>&1
"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
with=$(call_counts "$SCRATCH/graphs/report.json")
without=$(call_counts "$dir/report.json")
if [ -n "$with" ] && [ "$with" = "$without" ]; then
	pass "--gpu adds no call: calls, syncs and flagged syncs $with with and without it"
else
	fail "--gpu changed the calls: $with with it, $without without"
fi
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["gpu"] is not None or
	d["summary"]["gpu"] is not None or any(c["gpu"] is not None for c in d["cycles"]))' \
	"$dir/report.json" && ! "$SPECPROBE" report "$dir/rec.sprb" 2>&1 | grep -q '^GPU'; then
	pass "without --gpu: no GPU figures, no GPU line"
else
	fail "without --gpu: GPU figures or a GPU line appeared"
fi

# bad_input NAME WANT_LINE ENV... -- SPECPROBE_OPTS...: one line, a host-only report, exit 0
bad_input() {
	local name=$1 want=$2 dir="$SCRATCH/bad-$1" envs=() opts=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	opts=("$@")
	mkdir -p "$dir"
	env "${envs[@]}" "$SPECPROBE" record --gpu "${opts[@]}" -o "$dir/rec.sprb" -- "$SERVER" -q \
		--ground-truth "$dir/gt" --cycles 30 >/dev/null 2>"$dir/rec.err"
	local rc=$? lines
	lines=$(grep -c -- "$want" "$dir/rec.err")
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
	if [ $rc -eq 0 ] && [ "$lines" -eq 1 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
cycles = [c for c in d["cycles"] if c["pid"]]
sys.exit(len(cycles) != 30 or any(c["gpu"] is not None for c in cycles))' "$dir/report.json" &&
		grep -q '"summary"' "$dir/gt.rank0"; then
		pass "$name: one line ($(grep -- "$want" "$dir/rec.err" | head -1 | cut -c1-90)...),"\
" 30 host-only cycles, the target ran to its end"
	else
		fail "$name: exit $rc, $lines line(s) with '$want', or the report or target differ:"\
" $(grep -v '^libbpf' "$dir/rec.err" | tail -2)"
	fi
}

bad_input in-use "another CUPTI client" SPECSIM_CUPTI=busy --
bad_input no-graph-trace "no graph-level records" SPECSIM_CUPTI=nograph --
# (no libcupti anywhere: tests/unit/test_gpuagent.c; here a library that is none)
bad_input not-cupti "no cuptiGetVersion in" -- --cupti /lib/x86_64-linux-gnu/libz.so.1

# CUPTI's drops are counted and shown; no cycle is given wrong GPU figures for them
dir=$SCRATCH/drop
mkdir -p "$dir"
SPECSIM_CUPTI=drop "$SPECPROBE" record --gpu -o "$dir/rec.sprb" -- "$SERVER" -q --ground-truth \
	"$dir/gt" --cycles 30 >/dev/null 2>"$dir/rec.err"
"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
dropped=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(sum(a["cupti_dropped"] for a in d["gpu"]["agents"]))' "$dir/report.json" 2>/dev/null)
if [ "${dropped:-0}" -gt 0 ] && grep -q "GPU records lost: $dropped dropped by CUPTI" \
	"$dir/rec.err" && python3 "$CHECK" --allow-null "$dir"/gt.rank* "$dir/report.json" \
	>"$dir/check.out" 2>&1; then
	pass "CUPTI drops: $dropped counted in the report and the recorder's line, no wrong figure"
else
	fail "CUPTI drops: ${dropped:-none} counted, line: $(grep -c 'GPU records lost' \
		"$dir/rec.err"), check: $(tail -1 "$dir/check.out")"
fi

# a later CUPTI client takes CUPTI's buffers (torch.profiler started after the agent): the
# report says the records stopped; the cycles before keep exact figures, none after gets any
dir=$SCRATCH/taken
mkdir -p "$dir"
SPECSIM_CUPTI=taken "$SPECPROBE" record --gpu -o "$dir/rec.sprb" -- "$SERVER" -q --ground-truth \
	"$dir/gt" --cycles 120 >/dev/null 2>"$dir/rec.err"
rc=$?
"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>/dev/null
taken=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
a = d["gpu"]["agents"][0]
with_gpu = [c["index"] for c in d["cycles"] if c["gpu"]]
# figures stop for good: no cycle with figures after the first without
first_null = next((c["index"] for c in d["cycles"] if not c["gpu"]), None)
assert a["records_stopped"] and with_gpu and first_null is not None
assert all(i < first_null for i in with_gpu), "figures after the stop"
print(len(with_gpu), len(d["cycles"]), a["unmatched_after_last_match"])' "$dir/report.json" 2>&1)
if [ $rc -eq 0 ] && grep -q "CUPTI's records stopped" "$dir/report.txt" &&
	python3 "$CHECK" --allow-null "$dir"/gt.rank* "$dir/report.json" >"$dir/check.out" 2>&1 &&
	[ "$(echo "$taken" | wc -w)" -eq 3 ]; then
	set -- $taken
	pass "CUPTI taken by a later client: records stopped said, $1 of $2 cycles with exact figures, $3 launches after"
else
	fail "CUPTI taken by a later client: rc $rc, $taken, $(tail -1 "$dir/check.out")"
fi

# another tool's agent in the environment: --gpu refused, the command not run
dir=$SCRATCH/injected
mkdir -p "$dir"
CUDA_INJECTION64_PATH=/nonexistent/agent.so "$SPECPROBE" record --gpu -o "$dir/rec.sprb" -- \
	touch "$dir/ran" 2>"$dir/rec.err"
rc=$?
if [ $rc -ne 0 ] && [ ! -e "$dir/ran" ] && [ "$(grep -c 'CUDA_INJECTION64_PATH' \
	"$dir/rec.err")" -eq 1 ]; then
	pass "CUDA_INJECTION64_PATH set already: refused in one line, exit $rc"
else
	fail "CUDA_INJECTION64_PATH set already: exit $rc, $(head -1 "$dir/rec.err")"
fi

# nothing left in /dev/shm
left=$(ls -d /dev/shm/specprobe-gpu.* 2>/dev/null | grep -vxF -f "$SCRATCH/shm.start")
if [ -z "$left" ]; then
	pass "no agent folder left in /dev/shm"
else
	fail "agent folders left: $left"
fi
# the tracer killed mid-run: the agent's process runs on to its end, unharmed
dir=$SCRATCH/killed
mkdir -p "$dir"
ls -d /dev/shm/specprobe-gpu.* >"$dir/shm.before" 2>/dev/null
"$SPECPROBE" record --gpu -o "$dir/rec.sprb" -- "$SERVER" -q --ground-truth "$dir/gt" \
	--ready-file "$dir/ready" --cycles 1500 >"$dir/server.out" 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/ready"
sleep 0.5
{ kill -KILL $rec && wait $rec; } 2>/dev/null
server=$(head -1 "$dir/ready")
while kill -0 "$server" 2>/dev/null; do sleep 0.1; done
if grep -q '"summary"' "$dir/gt.rank0" 2>/dev/null && grep -q '"cycles_run":1500' "$dir/gt.rank0"; then
	pass "tracer killed mid-run: the server ran its 1500 cycles to the end"
else
	fail "tracer killed mid-run: the server did not finish ($(tail -1 "$dir/server.out"))"
fi
# a killed tracer cannot remove its folder: that one alone is left, and the next --gpu
# -- CMD clears it (its lock died with the tracer)
ls -d /dev/shm/specprobe-gpu.* 2>/dev/null | grep -vxF -f "$dir/shm.before" >"$dir/shm.left"
"$SPECPROBE" record --gpu -o "$dir/next.sprb" -- "$SERVER" -q --cycles 10 >/dev/null \
	2>"$dir/next.err"
still=$(xargs -r ls -d <"$dir/shm.left" 2>/dev/null)
if [ "$(wc -l <"$dir/shm.left")" -eq 1 ] && [ -z "$still" ]; then
	pass "killed tracer: its one folder left, cleared by the next --gpu"
else
	fail "killed tracer: $(wc -l <"$dir/shm.left") folders left, still there: ${still:-none}"
fi

finish
