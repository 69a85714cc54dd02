#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Builds the simulated GPU and runs specsim-server for 1 and 4 ranks, checking
# that every ground truth file parses and holds exactly the cuGraphLaunch
# calls and phases the options ask for, plus the nesting and start gate rules;
# then each loop variant, whose cycle_bounds lines check_cycles.py checks, and --torch.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${SPECSIM_OUTPUT:-$TOP/.output}
SERVER=$OUT/specsim/specsim-server
CHECK_CYCLES=$TOP/tools/specsim/check_cycles.py
SCRATCH=$(mktemp -d /tmp/specsim-selftest.XXXXXX)
PASSED=0
FAILED=0
trap 'rm -rf "$SCRATCH"' EXIT

pass() { PASSED=$((PASSED + 1)); echo "  ok    $1"; }
fail() { FAILED=$((FAILED + 1)); echo "  FAIL  $1"; }

echo "== build"
if make -s -C "$TOP" -f tools/specsim/specsim.mk OUTPUT="$OUT" specsim; then
	pass "build (libraries pass check-prologue)"
else
	fail "build"
	exit 1
fi

echo "== simulated GPU semantics"
if "$OUT/specsim/specsim-simtest" 2>/dev/null; then
	pass "blocking rules, capture, events, copies, legacy stream, proc address, NCCL rendezvous"
else
	fail "specsim-simtest"
fi

echo "== libcupti look-alike"
AGENT=$OUT/specsim/specsim-cupti-agent.so
for mode in "" busy nograph drop no-timestamp; do
	what=${mode:-records}
	if [ "$mode" = no-timestamp ]; then
		env CLIENT_NO_TIMESTAMP=1 CUDA_INJECTION64_PATH="$AGENT" \
			"$OUT/specsim/specsim-cupti-client" >"$SCRATCH/cupti.out" 2>&1
	else
		env SPECSIM_CUPTI="$mode" CUDA_INJECTION64_PATH="$AGENT" \
			"$OUT/specsim/specsim-cupti-client" >"$SCRATCH/cupti.out" 2>&1
	fi && rc=0 || rc=$?
	if [ "$rc" -eq 0 ]; then
		pass "cupti $what: $(tail -1 "$SCRATCH/cupti.out")"
	else
		fail "cupti $what"
		sed 's/^/    /' "$SCRATCH/cupti.out"
	fi
done

# check TRUTH_PREFIX RANKS CYCLES DRAFT_GRAPHS EXTRA_LAUNCHES [PLANTED] [FREES]
check() {
	python3 - "$@" <<'EOF'
import collections, json, sys

prefix, ranks, cycles, draft_graphs, extra = sys.argv[1], *map(int, sys.argv[2:6])
planted = int(sys.argv[6]) if len(sys.argv) > 6 else 0
frees = int(sys.argv[7]) if len(sys.argv) > 7 else 0
errors = []

def expect(cond, what):
    if not cond:
        errors.append(what)

for rank in range(ranks):
    path = f"{prefix}.rank{rank}"
    with open(path) as f:
        lines = [json.loads(l) for l in f]          # every line must parse
    calls = [l for l in lines if "name" in l]
    phases = [l for l in lines if "phase" in l and "start" in l]
    top = [c for c in calls if c["depth"] == 0]
    launches = [c for c in top if c["name"] == "cuGraphLaunch"]
    want = cycles * (draft_graphs + 2) + extra
    expect(len(launches) == want, f"{path}: {len(launches)} cuGraphLaunch, want {want}")
    expect(len(phases) == 4 * cycles, f"{path}: {len(phases)} phases, want {4 * cycles}")
    for c in calls:
        expect(c["before"] <= c["after"], f"{path}: {c['name']} ends before it starts")
        expect(c["rank"] == rank, f"{path}: {c['name']} has rank {c['rank']}")
    # phases tile each cycle in order, and every loop call lies in its phase
    order = ["draft", "verify", "accept", "extend"]
    span = {}
    for i, p in enumerate(phases):
        expect(p["phase"] == order[i % 4] and p["cycle"] == i // 4, f"{path}: phase {i} is {p}")
        if i:
            expect(phases[i - 1]["end"] == p["start"], f"{path}: gap before phase {i}")
        span[(p["cycle"], p["phase"])] = p
    for c in top:
        p = span.get((c["cycle"], c["phase"]))
        if c["cycle"] >= 0 and p:
            expect(p["start"] <= c["before"] and c["after"] <= p["end"],
                   f"{path}: {c['name']} outside its {c['phase']} phase")
    per_cycle = collections.Counter((c["cycle"], c["phase"]) for c in launches if c["cycle"] >= 0)
    for i in range(cycles):
        expect(per_cycle[(i, "draft")] == draft_graphs, f"{path}: cycle {i} draft launches")
        expect(per_cycle[(i, "verify")] == 1 and per_cycle[(i, "extend")] == 1,
               f"{path}: cycle {i} verify/extend launches")
    # nested calls sit inside an NCCL call of the same thread
    nccl = [c for c in top if c["name"].startswith("nccl")]
    for c in (c for c in calls if c["depth"] == 1):
        inside = [p for p in nccl if p["name"] == c["parent"] and p["tid"] == c["tid"]
                  and p["before"] <= c["before"] and c["after"] <= p["after"]]
        expect(len(inside) == 1, f"{path}: nested {c['name']} not inside one {c['parent']}")
    captured = sum(1 for c in top if c["name"] == "ncclAllReduce" and c["phase"] == "capture")
    execs = [l for l in lines if "exec" in l and "role" in l]
    colls = sum(e["collectives"] for e in execs)
    expect(captured == colls, f"{path}: {captured} captured all-reduces, exec lines say {colls}")
    tags = collections.Counter(c.get("tag") for c in top)
    expect(tags["planted-sync"] == planted, f"{path}: {tags['planted-sync']} planted syncs")
    expect(tags["free-in-loop"] == 2 * frees, f"{path}: {tags['free-in-loop']} free-in-loop calls")
    summary = [l for l in lines if l.get("summary")]
    expect(len(summary) == 1 and summary[0]["cycles_run"] == cycles, f"{path}: summary")

for e in errors[:20]:
    print("    " + e)
sys.exit(1 if errors else 0)
EOF
}

echo "== one rank: per-step drafts, planted sync, free in loop, every entry point"
T1=$SCRATCH/one
if "$SERVER" -q --cycles 7 --draft-k 3 --plant-sync 3 --free-in-loop=2 --exercise --gpu-log \
	--ground-truth "$T1" && check "$T1" 1 7 3 2 2 3; then
	pass "1 rank: 7 cycles x (3 + 2) + 2 cuGraphLaunch, 28 phases, 2 planted syncs"
else
	fail "1 rank ground truth"
fi
if n=$(python3 - "$T1.rank0" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
names = {l["name"] for l in lines if "name" in l}
need = """cuLaunchKernel cuLaunchKernelEx cuLaunchCooperativeKernel cuLaunchHostFunc cuGraphLaunch
cuStreamBeginCapture cuStreamBeginCapture_v2 cuStreamBeginCaptureToGraph cuStreamEndCapture
cuGraphInstantiate cuGraphInstantiate_v2 cuGraphInstantiateWithFlags cuGraphInstantiateWithParams
cuGraphExecDestroy cuGraphExecUpdate cuGraphExecUpdate_v2 cuStreamGetCaptureInfo
cuStreamGetCaptureInfo_v2 cuStreamGetCaptureInfo_v3 cuStreamIsCapturing cuCtxSynchronize
cuCtxSynchronize_v2 cuStreamSynchronize cuEventSynchronize cuStreamQuery cuEventQuery cuMemcpy
cuMemcpyAsync cuMemcpyHtoD_v2 cuMemcpyDtoH_v2 cuMemcpyDtoD_v2 cuMemcpyHtoDAsync_v2
cuMemcpyDtoHAsync_v2 cuMemcpyDtoDAsync_v2 cuMemsetD8_v2 cuMemsetD32_v2 cuMemsetD8Async
cuMemsetD32Async cuMemHostAlloc cuMemAllocHost_v2 cuMemHostRegister_v2 cuMemHostUnregister
cuMemFreeHost cuMemAlloc_v2 cuMemFree_v2 cuMemAllocAsync cuMemFreeAsync cuModuleLoad
cuModuleLoadData cuLibraryLoadData cuEventRecord cuEventRecordWithFlags cuStreamWaitEvent
cuEventCreate cuEventDestroy_v2 cuModuleGetFunction cuLibraryGetKernel cuKernelGetFunction cuInit
cuDeviceGet cuDevicePrimaryCtxRetain cuCtxSetCurrent cuCtxPushCurrent_v2 cuStreamCreate
cuStreamCreateWithPriority cuStreamDestroy_v2 cuGetProcAddress_v2 ncclAllReduce ncclAllGather
ncclReduceScatter ncclBroadcast ncclReduce ncclAlltoAll ncclGather ncclScatter ncclSend ncclRecv
cuMemcpyPeer cuMemcpyPeerAsync cuMemsetD16_v2 cuMemsetD16Async cuMemsetD2D8_v2 cuMemsetD2D16_v2
cuMemsetD2D32_v2 cuMemsetD2D8Async cuMemsetD2D16Async cuMemsetD2D32Async cuMemAllocFromPoolAsync
cuMemAllocManaged cuMemAllocPitch_v2 cuModuleLoadDataEx cuModuleLoadFatBinary cuLibraryLoadFromFile
ncclCommInitRankScalable
ncclGroupStart ncclGroupEnd ncclGetUniqueId ncclCommInitRank ncclCommInitRankConfig
ncclCommInitAll ncclCommSplit ncclCommDestroy ncclCommAbort ncclCommFinalize ncclCommCount
ncclCommUserRank""".split()
missing = [n for n in need if n not in names]
bad = [l for l in lines if "name" in l and l["result"] and l.get("tag") != "expected-error"
       and l["name"] not in ("cuEventQuery", "cuStreamQuery")]
gpu = [l for l in lines if "gpu" in l]
if missing or bad or not gpu:
    print("    missing:", missing, "failed:", [(l["name"], l["result"]) for l in bad],
          "gpu lines:", len(gpu), file=sys.stderr)
    sys.exit(1)
print(len(need))
EOF
); then
	pass "--exercise calls all $n listed entry points, only expected failures"
else
	fail "--exercise coverage"
fi

echo "== four ranks: one-graph drafts, pageable copies, deferred accept, start gate"
T4=$SCRATCH/four
"$SERVER" -q --ranks 4 --cycles 5 --draft-mode one-graph --pageable-copies \
	--accept-mode deferred --batch-sizes 1,4 --batch 4 --layers 2 --ground-truth "$T4" \
	--ready-file "$SCRATCH/ready" --go-file "$SCRATCH/go" &
pid=$!
for _ in $(seq 300); do [ -e "$SCRATCH/ready" ] && break; sleep 0.1; done
if [ -e "$SCRATCH/ready" ] && [ "$(wc -l <"$SCRATCH/ready")" -eq 5 ] && [ ! -e "$T4.rank0" ]; then
	pass "ready file lists launcher + 4 ranks; nothing ran before the go file"
else
	fail "ready file"
fi
touch "$SCRATCH/go"
if wait "$pid" && check "$T4" 4 5 1 0; then
	pass "4 ranks: 5 cycles x (1 + 2) cuGraphLaunch each, 20 phases each"
else
	fail "4 ranks ground truth"
fi
if python3 - "$T4" <<'EOF'; then
import json, sys
for r in range(4):
    lines = [json.loads(l) for l in open(f"{sys.argv[1]}.rank{r}")]
    calls = [l for l in lines if "name" in l]
    # 2 layers x 2 batch sizes captured, each with its nested launch, no replay-time calls
    ar = [c for c in calls if c["name"] == "ncclAllReduce"]
    nested = [c for c in calls if c.get("parent") == "ncclAllReduce"]
    copies = [c for c in calls
              if c["name"] == "cuMemcpyDtoHAsync_v2" and c.get("tag") == "pageable-copy"]
    deferred = [c for c in calls if c.get("tag") == "deferred"]
    if len(ar) != 4 or len(nested) != 4 or any(c["phase"] != "capture" for c in ar) \
            or len(copies) != 5 or len(deferred) != 5:
        print(f"    rank {r}: {len(ar)} all-reduces, {len(nested)} nested, "
              f"{len(copies)} pageable copies, {len(deferred)} deferred syncs")
        sys.exit(1)
EOF
	pass "4 ranks: captured all-reduces nest one cuLaunchKernelEx each"
else
	fail "4 ranks nesting"
fi

echo "== cycle bounds: REFs are call lines, ordered, counts derived again"
if python3 "$CHECK_CYCLES" "$T1.rank0" && python3 "$CHECK_CYCLES" "$T4".rank*; then
	pass "per-step + stream sync, one-graph + deferred on 4 ranks: one cycle_bounds per cycle"
else
	fail "cycle bounds of the first runs"
fi

# variant NAME CHECK_ARGS... -- SERVER_ARGS...: run, then check_cycles.py on every rank
variant() {
	local name=$1 checks=()
	shift
	while [ "$1" != "--" ]; do checks+=("$1"); shift; done
	shift
	rm -f "$SCRATCH/$name".rank*
	"$SERVER" -q --ground-truth "$SCRATCH/$name" "$@" &&
		python3 "$CHECK_CYCLES" "${checks[@]}" "$SCRATCH/$name".rank*
}

# 9 cycles, an extra step in cycles 1, 3, 5, 7: 4 x 3 kernels tagged extra-draft
if variant eager --expect-tag extra-draft=12 -- --cycles 9 --draft-mode eager --draft-k 2 \
	--draft-kernels 3 --extra-draft-every 2 --accept-mode event &&
	python3 - "$SCRATCH/eager.rank0" <<'EOF'; then
import collections, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
calls = [l for l in lines if "name" in l and l["depth"] == 0 and l["cycle"] >= 0]
per = collections.Counter((c["cycle"], c["name"]) for c in calls if c["phase"] == "draft")
drafts = [l for l in lines if l.get("role") == "draft"]
bad = [i for i in range(9) if per[(i, "cuLaunchKernel")] != (2 + (i % 2)) * 3
       or per[(i, "cuGraphLaunch")]]
if bad or drafts:
    print(f"    eager: cycles {bad} wrong, {len(drafts)} draft graphs captured")
    sys.exit(1)
EOF
	pass "eager drafts: k x 3 cuLaunchKernel per cycle, k + 1 steps every 2nd, no draft graph"
else
	fail "eager drafts"
fi

if variant extra --expect-tag extra-draft=2 -- --cycles 7 --draft-k 4 --extra-draft-every 3 &&
	variant extra1 --expect-tag extra-draft=3 -- --cycles 6 --draft-mode one-graph \
		--extra-draft-every 2 --accept-mode deferred; then
	pass "extra draft launch: per-step k + 1 every 3rd cycle, one-graph 2 every 2nd (deferred)"
else
	fail "extra draft launch"
fi

# 5 layers in 3 pieces: layers 0 | 1-2 | 3-4, the side-stream fork in piece 0
if variant pieces -- --ranks 2 --cycles 8 --verify-pieces 3 --layers 5 --batch-sizes 1,2,4 \
	--batch-schedule 1,4,4,2 --accept-mode deferred &&
	python3 - "$SCRATCH/pieces" <<'EOF'; then
import collections, json, sys
for r in range(2):
    lines = [json.loads(l) for l in open(f"{sys.argv[1]}.rank{r}")]
    verify = [l for l in lines if l.get("role") == "verify"]
    shape = sorted((v["batch"], v["piece"], v["collectives"], v["side_kernels"]) for v in verify)
    want = sorted((b, j, n, int(j == 0)) for b in (1, 2, 4) for j, n in enumerate((1, 2, 2)))
    execs = {l["exec"]: l for l in lines if "role" in l}
    used = collections.Counter(execs[c["args"]["exec"]]["batch"] for c in lines
                               if c.get("name") == "cuGraphLaunch" and c["phase"] == "verify")
    if shape != want or used != {1: 6, 4: 12, 2: 6}:
        print(f"    rank {r}: verify graphs {shape}, verify launches per batch {dict(used)}")
        sys.exit(1)
EOF
	pass "piecewise verify on 2 ranks: 3 pieces per batch size, schedule 1,4,4,2 replayed"
else
	fail "piecewise verify / batch schedule"
fi

# no gate: the loop runs untraced from the start; a tracer may attach at any time
TM=$SCRATCH/midrun
"$SERVER" -q --ranks 2 --cycles 100000000 --accept-mode deferred --ground-truth "$TM" \
	--ready-file "$SCRATCH/ready2" &
pid=$!
for _ in $(seq 300); do [ -e "$SCRATCH/ready2" ] && break; sleep 0.1; done
sleep 0.5
kill -TERM "$pid"
if wait "$pid" && grep -q '"stopped":true' "$TM.rank0" &&
	python3 "$CHECK_CYCLES" --min-cycles 20 "$TM".rank*; then
	pass "no start gate, stopped by SIGTERM: cycle_bounds for every cycle run, the last one too"
else
	fail "mid-run attach run"
fi

echo "== sync plants: every kind at every position, counted and placed"
# 12 cycles; /N plants fall in cycles where (i+1) % N == 0
TP=$SCRATCH/plants
if variant plants --expect-plant ctx@draft-verify=4 --expect-plant poll@after-verify=6 \
	--expect-plant stream@after-verify=3 --expect-plant stream@outside=1 \
	--expect-plant event@accept=3 --expect-plant sync-copy@extend=2 \
	--expect-plant pageable-copy@outside=2 --expect-plant unknown-host@draft-verify=6 \
	--expect-plant free@accept=4 --expect-plant alloc@extend=3 \
	--expect-plant legacy@after-verify=12 --expect-plant poll@draft-verify=3 \
	--expect-plant capture-sync@outside=1 --expect-tag companion:event=3 \
	--expect-tag companion:free=4 --expect-tag companion:alloc=3 \
	--expect-tag clean:event=12 --expect-tag clean:stream=12 -- \
	--cycles 12 --plant ctx@draft-verify/3 --plant poll@after-verify/2 \
	--plant stream@after-verify/4 --plant event@accept/4 --plant sync-copy@extend/6 \
	--plant pageable-copy@outside/5 --plant unknown-host/2 --plant free@accept/3 \
	--plant alloc@extend/4 --plant legacy@after-verify --plant poll@draft-verify/4 \
	--plant capture-sync --plant stream@outside --clean-syncs &&
	python3 - "$TP.rank0" <<'EOF'; then
import collections, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
calls = [l for l in lines if "name" in l and l["depth"] == 0]
wait = [l for l in lines if l.get("stage") == "wait"][0]
errors = []
# the unknown-host buffer is pinned before the start gate, so an attached tracer never sees it
alloc = [c for c in calls if c.get("tag") == "companion:unknown-host"]
if len(alloc) != 1 or alloc[0]["name"] != "cuMemHostAlloc" or alloc[0]["after"] > wait["start"]:
    errors.append(f"unknown-host allocation {alloc}")
cap = [(c["name"], c["result"]) for c in calls if c.get("tag", "").endswith("capture-sync")]
want = [("cuStreamBeginCapture_v2", 0), ("cuStreamSynchronize", 900), ("cuStreamEndCapture", 901)]
if cap != want:
    errors.append(f"capture-sync calls {cap}")
# right after the verify launch the stream is busy: each spin there queries more than once
spins = collections.Counter(c["cycle"] for c in calls
                            if c.get("tag") == "planted:poll" and c["position"] == "after-verify")
if len(spins) != 6 or min(spins.values()) < 2:
    errors.append(f"poll spins after verify {dict(spins)}")
for e in errors:
    print("    " + e)
sys.exit(1 if errors else 0)
EOF
	pass "11 kinds at 5 positions, companions and clean syncs: counts, places, syncs per cycle"
else
	fail "sync plants"
fi

if variant plants2 --expect-plant pageable-copy@accept=8 --expect-plant free@after-verify=2 \
	--expect-plant ctx@extend=2 --expect-plant event@outside=4 \
	--expect-plant legacy@outside=1 --expect-plant poll@draft-verify=4 -- \
	--ranks 2 --cycles 8 --accept-mode deferred --draft-mode eager --verify-pieces 2 \
	--plant pageable-copy@accept --plant free@after-verify/3 --plant ctx@extend/4 \
	--plant event@outside/2 --plant legacy@outside --plant poll/2 --clean-syncs; then
	pass "plants on 2 ranks with eager drafts, verify pieces and a deferred accept"
else
	fail "plants with the other loop variants"
fi

echo "== --torch: the legacy stream, one graph per draft step, PyTorch's copies and syncs"
# torch_calls TRUTH K: each cycle's calls, from its first draft launch to the next, exactly
torch_calls() {
	python3 - "$@" <<'EOF'
import json, sys
path, k = sys.argv[1], int(sys.argv[2])
lines = [json.loads(l) for l in open(path)]
bounds = [l for l in lines if "cycle_bounds" in l]
tid = bounds[0]["tid"]
calls = [l for l in lines if "name" in l and l["depth"] == 0 and l["tid"] == tid]
execs = {l["exec"]: l for l in lines if "role" in l}
wait = next(l for l in lines if l.get("stage") == "wait")
Q = "cuStreamIsCapturing"
K, G, DD, DH, HD, S = ("cuLaunchKernel", "cuGraphLaunch", "cuMemcpyDtoDAsync_v2",
                       "cuMemcpyDtoHAsync_v2", "cuMemcpyHtoDAsync_v2", "cuStreamSynchronize")
prologue = [HD, S, K, DD, DD, Q]	# the draft's setup: the cycle starts with its upload
errors = []
starts = [b["start"]["before"] for b in bounds]
before = [c["name"] for c in calls if c["phase"] == "draft" and c["cycle"] == -1]
if before != prologue[:-1]:	# cycle 0 asks its first replay itself
    errors.append(f"before the loop: {before}")
for i, t0 in enumerate(starts):
    last = i + 1 == len(starts)
    t1 = bounds[i]["end"]["after"] if last else starts[i + 1]
    got = [c for c in calls if t0 <= c["before"] and c["before"] < t1]
    want = list(prologue)
    for j in range(k):
        want += ([K, DD, DD, Q] if j else []) + [G]
    want += [K, DD, DD, Q, G, K, K, DH, S, K, K, DH, S, DD, "cuMemsetD8Async", DH]
    if [c["name"] for c in got] != want:
        errors.append(f"cycle {i}: {[c['name'] for c in got]}")
    if any(c["args"].get("stream") != 0 for c in got):
        errors.append(f"cycle {i}: a call off the legacy stream")
    graphs = [execs[c["args"]["exec"]] for c in got if c["name"] == G]
    if [(g["role"], g["step"]) for g in graphs] != [("draft", j) for j in range(k)] + [("verify", -1)]:
        errors.append(f"cycle {i}: graphs {[(g['role'], g['step']) for g in graphs]}")
    if len({g["exec"] for g in graphs}) != k + 1:
        errors.append(f"cycle {i}: execs launched twice")
sizes = next(l for l in lines if l.get("summary"))["batch_sizes"]
ends = [c for c in lines if c.get("name") == "cuStreamEndCapture"]
if len(ends) != (k + 1) * len(sizes) or any(c["after"] > wait["start"] for c in ends) or \
        any(l.get("role") == "extend" for l in lines):
    errors.append("graphs not all captured before the start gate, or an extend graph")
for e in errors[:10]:
    print("    " + e)
sys.exit(1 if errors else 0)
EOF
}

if variant torch --expect-tag clean:staged-h2d=8 --expect-plant stream@accept=15 \
	--expect-plant stream@outside=1 --expect-tag clean:pinned-copy=16 -- \
	--torch --draft-k 5 --cycles 8 && torch_calls "$SCRATCH/torch.rank0" 5; then
	pass "8 cycles of 43 calls, each from its draft's setup, in PyTorch's order, k + 1 execs launched once each"
else
	fail "--torch call sequence"
fi

# the pinned buffers show as the driver's do in the maps a tracer reads at attach
TT=$SCRATCH/torchmaps
"$SERVER" -q --torch --cycles 4 --plant unknown-host@accept/2 --plant pageable-copy/2 \
	--ground-truth "$TT" --ready-file "$SCRATCH/ready3" --go-file "$SCRATCH/go3" &
pid=$!
for _ in $(seq 300); do [ -e "$SCRATCH/ready3" ] && break; sleep 0.1; done
cp "/proc/$(head -1 "$SCRATCH/ready3")/maps" "$SCRATCH/maps3"
touch "$SCRATCH/go3"
if wait "$pid" && python3 - "$TT.rank0" "$SCRATCH/maps3" <<'EOF'; then
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
maps = []
for l in open(sys.argv[2]):
    f = l.split(maxsplit=5)
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    maps.append((lo, hi, f[1], f[5].strip() if len(f) > 5 else ""))
def where(p):
    return next(((perms, path) for lo, hi, perms, path in maps if lo <= p < hi), None)
pinned, heap = ("rw-s", "/dev/zero (deleted)"), ("rw-p", "[heap]")
want = {"clean:pinned-copy": pinned, "planted:unknown-host": pinned, None: pinned,
        "clean:staged-h2d": heap, "planted:pageable-copy": heap}
errors = []
for c in lines:
    if c.get("phase") not in ("draft", "verify", "accept"):
        continue
    host = c.get("args", {}).get("dst_host", c.get("args", {}).get("src_host"))
    if host is not None and where(host) != want[c.get("tag")]:
        errors.append(f"{c['name']} {c.get('tag')}: {where(host)}")
allocs = [c for c in lines if c.get("name") in ("cuMemHostAlloc", "cuMemAllocHost_v2")]
errors += [f"{c['name']}: {where(c['args']['ptr'])}" for c in allocs
           if where(c["args"]["ptr"]) != pinned]
for e in errors[:10]:
    print("    " + e)
sys.exit(1 if errors or not allocs else 0)
EOF
	pass "pinned buffers are rw-s /dev/zero (deleted) at the gate, the scalar and pageable copy [heap]"
else
	fail "--torch host memory in /proc/PID/maps"
fi

# side streams: blocking, one made after the gate, one before; 2 ranks replay on stream 0
if variant torchside --expect-plant legacy@draft-verify=3 --expect-tag unknown:legacy=2 \
	--expect-tag companion:side-stream=11 --expect-tag companion:side-stream-pre=8 \
	--expect-plant pageable-copy@draft-verify=6 -- --torch --ranks 2 --cycles 6 \
	--plant side-stream/2 --plant side-stream-pre@after-verify/3 --plant pageable-copy \
	--clean-syncs &&
	python3 - "$SCRATCH/torchside" <<'EOF'; then
import json, sys
for r in range(2):
    lines = [json.loads(l) for l in open(f"{sys.argv[1]}.rank{r}")]
    made = {c["args"]["stream"]: c for c in lines if c.get("name") == "cuStreamCreate"
            and c.get("tag", "").startswith("companion:side-stream")}
    errors = [f"{c['name']} {c['tag']}" for c in lines
              if c.get("tag") in ("planted:legacy", "unknown:legacy")
              and (c["args"]["stream"] != 0 or c.get("serialises_with") not in made)]
    pre = [c for c in made.values() if c["tag"].endswith("-pre")]
    wait = next(l for l in lines if l.get("stage") == "wait")
    if len(made) != 2 or pre[0]["after"] > wait["start"] or \
            any(c["args"]["flags"] for c in made.values()):
        errors.append(f"side streams {list(made.values())}")
    busy = [c["stream_busy"] for c in lines if c.get("tag") == "planted:pageable-copy"]
    if len(busy) != 6 or not all(busy):
        errors.append(f"pageable copies after the draft found the stream busy: {busy}")
    for e in errors[:10]:
        print(f"    rank {r}: {e}")
    if errors:
        sys.exit(1)
EOF
	pass "side-stream plants: legacy call behind each side launch, serialises_with its stream"
else
	fail "--torch side-stream plants"
fi

echo "== rate test, SIGUSR1 start"
TR=$SCRATCH/rate
"$SERVER" -q --cycles 0 --rate-test 20000 --wait-signal --ready-file "$SCRATCH/ready1" \
	--ground-truth "$TR" &
pid=$!
for _ in $(seq 300); do [ -e "$SCRATCH/ready1" ] && break; sleep 0.1; done
kill -USR1 "$(head -1 "$SCRATCH/ready1")"
if wait "$pid" && grep -q '"rate_test":"launch","n":20000' "$TR.rank0"; then
	pass "rate test of 20000 launches, started by SIGUSR1"
else
	fail "rate test"
fi

if ls /dev/shm/specsim-nccl.* >/dev/null 2>&1; then
	fail "shared memory segments left in /dev/shm"
else
	pass "no NCCL segments left in /dev/shm"
fi

echo "specsim selftest: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
