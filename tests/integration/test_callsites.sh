#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Call sites: syncs made from known functions are named by them, with the counts made;
# launches record no stack by default; --stacks none gives a version 1 recording; after an
# execve (a program exec'ing itself, ranks a launcher fork+execs) the new image names the frames.
source "$(dirname "$0")/lib.sh"

ALPHA=${ALPHA:-37}
BETA=${BETA:-23}

# record_sites NAME [RECORD ARGS]: trace the sites program into $SCRATCH/NAME/rec.sprb
record_sites() {
	local dir="$SCRATCH/$1" pid rec
	shift
	mkdir -p "$dir"
	"$LOOKALIKE/sites" "${SITES_ALPHA:-$ALPHA}" "${SITES_BETA:-$BETA}" "$dir/go" \
		"${SITES_GAMMA:-0}" >"$dir/sites.out" &
	pid=$!
	wait_ready "$dir/sites.out"
	"$SPECPROBE" record -o "$dir/rec.sprb" -p $pid "$@" 2>"$dir/record.err" &
	rec=$!
	wait_file "$dir/rec.sprb" 600
	touch "$dir/go"
	wait $pid
	wait $rec
}

record_sites default
dir=$SCRATCH/default
"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"
"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>&1
if python3 - "$dir/calls.jsonl" "$dir/report.json" "$ALPHA" "$BETA" <<'PY'
import collections, json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
report = json.load(open(sys.argv[2]))
alpha, beta = int(sys.argv[3]), int(sys.argv[4])
bad = []
syncs = [c for c in calls if c["name"] == "cuStreamSynchronize"]
launches = [c for c in calls if c["name"] == "cuLaunchKernel"]
if len(syncs) != alpha + beta or len(launches) != alpha + beta:
    bad.append(f"{len(syncs)} syncs, {len(launches)} launches")
# launches take a stack by default only now and then (one in eight after a sync, at random)
if sum("stack" in c for c in launches) * 2 > len(launches):
    bad.append(f"{sum('stack' in c for c in launches)} of {len(launches)} launches have a stack")
callers = collections.Counter()
for c in syncs:
    nat = c.get("stack", {}).get("native", [])
    if not nat or nat[0]["symbol"] is None or not nat[0]["object"].endswith("/sites"):
        bad.append(f"sync seq {c['seq']}: innermost frame {nat[:1]}")
        continue
    callers[nat[0]["symbol"]] += 1
    names = [f["symbol"] for f in nat]
    if nat[0]["symbol"] == "site_beta" and names[1:3] != ["site_beta_outer", "main"]:
        bad.append(f"site_beta's callers: {names}")
    if nat[0]["symbol"] == "site_alpha" and names[1:2] != ["main"]:
        bad.append(f"site_alpha's callers: {names}")
if callers != {"site_alpha": alpha, "site_beta": beta}:
    bad.append(f"dump: {dict(callers)}")
sites = {s["native"]["symbol"]: s["count"] for s in report["call_sites"] if s["native"]}
if sites != {"site_alpha": alpha, "site_beta": beta} or report["syncs_with_stack"] != alpha + beta:
    bad.append(f"report call_sites: {sites}")
for line in bad:
    print("   ", line)
sys.exit(1 if bad else 0)
PY
then
	pass "dump and report --json: site_alpha x$ALPHA, site_beta x$BETA; launches have none"
else
	fail "call sites differ ($dir)"
fi
# none flagged: each site's row is among the syncs not flagged, none a FLAGGED row
if grep -Eq "^ +$ALPHA +[0-9.]+  other +site_alpha\+0x[0-9a-f]+ \(sites\)$" "$dir/report.txt" &&
	grep -Eq "^ +$BETA +[0-9.]+  other +site_beta\+0x[0-9a-f]+ \(sites\)$" "$dir/report.txt" &&
	! grep -q "FLAGGED  site_" "$dir/report.txt"; then
	pass "report's text names both call sites with their counts, as not flagged"
else
	fail "report text: $(grep -A3 'Call sites' "$dir/report.txt")"
fi
if head -c 12 "$dir/rec.sprb" | tail -c 4 | od -An -tu4 | grep -qw 2; then
	pass "a recording with stacks is version 2"
else
	fail "version of a recording with stacks"
fi

"$SPECPROBE" export "$dir/rec.sprb" -o "$dir/t.pftrace" 2>"$dir/export.err"
python3 "$TOP/tests/integration/check_perfetto.py" "$dir/t.pftrace" --call-sites >"$dir/sites.txt"
if [ "$(grep -vc '^cuLaunchKernel ' "$dir/sites.txt")" = 2 ] &&
	grep -Eq "^cuStreamSynchronize site_alpha\+0x[0-9a-f]+ \(sites\): $ALPHA$" \
		"$dir/sites.txt" &&
	grep -Eq "^cuStreamSynchronize site_beta\+0x[0-9a-f]+ \(sites\): $BETA$" \
		"$dir/sites.txt"; then
	pass "Perfetto: sync slices carry call_site and stack annotations"
else
	fail "Perfetto call sites: $(tr '\n' ';' <"$dir/sites.txt")"
fi

record_sites all --stacks all
n=$("$SPECPROBE" dump --json "$SCRATCH/all/rec.sprb" 2>/dev/null |
	python3 -c 'import json,sys; print(sum(1 for l in sys.stdin if "stack" in json.loads(l)))')
if [ "$n" = $((2 * (ALPHA + BETA))) ]; then
	pass "--stacks all: every call, launches too, has a stack ($n)"
else
	fail "--stacks all: $n calls with a stack"
fi

# A caller keeping data in rbp (no frame pointers): the walk stops there, so a repeated
# site is still known by its first frames, not by data that changes with every call.
GAMMA=50
SITES_ALPHA=0 SITES_BETA=0 SITES_GAMMA=$GAMMA record_sites gamma
dir=$SCRATCH/gamma
"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
if PYTHONPATH=$TOP/tests/integration python3 - "$dir/rec.sprb" "$dir/calls.jsonl" $GAMMA \
	>"$dir/check.out" <<'PY'
import json, struct, sys
from recfile import records
data, gamma = open(sys.argv[1], "rb").read(), int(sys.argv[3])
# SP_REC_STACK (26); its flags at byte 20, SP_STACK_SAME = 1
flags = [struct.unpack_from("<I", data, off + 20)[0] for off, kind, _ in records(data) if kind == 26]
same = sum(1 for f in flags if f & 1)
whole = len(flags) - same
syncs = [json.loads(l) for l in open(sys.argv[2])]
syncs = [c for c in syncs if c["name"] == "cuStreamSynchronize"]
named = sum(1 for c in syncs
            if [f["symbol"] for f in c.get("stack", {}).get("native", [])[:2]] ==
            ["site_gamma", "call_with_data_rbp"])
print(f"{len(syncs)} syncs, {named} named site_gamma under call_with_data_rbp, "
      f"{whole} whole stacks, {same} repeated")
sys.exit(0 if len(syncs) == named == gamma and whole >= 1 and same >= gamma - 2 else 1)
PY
then
	pass "data in rbp: $(cat "$dir/check.out")"
else
	fail "data in rbp: $(cat "$dir/check.out") ($dir)"
fi

# a process that execs itself: the new image's syncs are named by the new image's mappings,
# never left as bare addresses or named by the old image's
SITES_EXEC=1 record_sites exec
edir=$SCRATCH/exec
"$SPECPROBE" dump --json "$edir/rec.sprb" >"$edir/calls.jsonl" 2>"$edir/dump.err"
"$SPECPROBE" report --json "$edir/rec.sprb" >"$edir/report.json" 2>"$edir/report.err"
if grep -q "ran execve" "$edir/record.err" &&
	python3 - "$edir/calls.jsonl" "$edir/report.json" "$ALPHA" "$BETA" >"$edir/check.out" <<'PY'
import collections, json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
report = json.load(open(sys.argv[2]))
alpha, beta = int(sys.argv[3]), int(sys.argv[4])
callers = collections.Counter()
for c in calls:
    if c["name"] == "cuStreamSynchronize":
        nat = c.get("stack", {}).get("native", [])
        ok = nat and nat[0]["symbol"] and nat[0]["object"].endswith("/sites")
        callers[nat[0]["symbol"] if ok else repr(nat[:1])] += 1
sites = {s["label"].split("+")[0]: s["count"] for s in report["call_sites"]}
want = {"site_alpha": 2 * alpha, "site_beta": 2 * beta}
print(f"dump {dict(callers)}, report {sites}")
sys.exit(0 if callers == want and sites == want else 1)
PY
then
	pass "exec'd into itself: both images' syncs named, $(cat "$edir/check.out")"
else
	fail "exec'd into itself: $(cat "$edir/check.out") ($edir)"
fi

record_sites none --stacks none
n=$("$SPECPROBE" dump --json "$SCRATCH/none/rec.sprb" 2>/dev/null | grep -c '"stack"')
if [ "$n" = 0 ] && head -c 12 "$SCRATCH/none/rec.sprb" | tail -c 4 | od -An -tu4 | grep -qw 1; then
	pass "--stacks none: no stacks, a version 1 recording"
else
	fail "--stacks none: $n stacks"
fi

# the simulated server: planted syncs are flagged at the server's function that plants them
CYCLES=300 EVERY=5
sim=$SCRATCH/sim
if start_server "$sim" -n $CYCLES --plant stream@draft-verify/$EVERY &&
	record_whole_run "$sim"; then
	"$SPECPROBE" report --json "$sim/rec.sprb" >"$sim/report.json" 2>"$sim/report.err"
	if python3 - "$sim/report.json" $((CYCLES / EVERY)) <<'PY'
import json, sys
rep, planted = json.load(open(sys.argv[1])), int(sys.argv[2])
top = rep["call_sites"][0]
ok = (rep["flagged_syncs"] == planted and top["flagged"] == planted and
      top["native"]["symbol"] == "plant_calls" and
      sum(s["flagged"] for s in rep["call_sites"]) == planted)
if not ok:
    print("   ", rep["flagged_syncs"], [(s["label"], s["flagged"]) for s in rep["call_sites"]])
sys.exit(0 if ok else 1)
PY
	then
		pass "specsim: all $((CYCLES / EVERY)) flagged syncs at one call site, plant_calls"
	else
		fail "specsim: flagged syncs by call site ($sim)"
	fi
	"$SPECPROBE" top --batch --replay "$sim/rec.sprb" --speed 0 >"$sim/top.txt" 2>&1
	# the site in the flagged sync's row, its last column, and in the header's answer
	if grep -A2 '^SYNCS flagged' "$sim/top.txt" | tail -1 |
		grep -Eq '^ +[-0-9]+ .* plant_calls\+0x[0-9a-f]+ \(specsim-server\)$' &&
		grep -Eq '^top flagged: cuStreamSynchronize .* at plant_calls\+0x[0-9a-f]+' \
			"$sim/top.txt"; then
		pass "top: the sync panel and the header name the flagged sync's call site"
	else
		fail "top: $(grep -A2 '^SYNCS flagged' "$sim/top.txt" | tail -1)"
	fi
else
	fail "specsim: no server or no recording"
fi

# -- CMD on 2 ranks the launcher starts by fork and exec: every site named, and the flagged
# ones as -p on the same server names them
launched=$SCRATCH/sim-launched attached=$SCRATCH/sim-attached
mkdir -p "$launched"
sim_args=(--ranks 2 -n $CYCLES --plant ctx@draft-verify/$EVERY)
"$SPECPROBE" record -o "$launched/rec.sprb" -- "$SERVER" -q --ground-truth "$launched/gt" \
	"${sim_args[@]}" 2>"$launched/rec.err" >/dev/null
if start_server "$attached" "${sim_args[@]}" && record_whole_run "$attached"; then
	for d in "$launched" "$attached"; do
		"$SPECPROBE" report --json "$d/rec.sprb" >"$d/report.json" 2>"$d/report.err"
	done
	if python3 - "$launched" "$attached" >"$launched/check.out" <<'PY'
import glob, json, sys
bad, flagged = [], []
for d in sys.argv[1:]:
    rep = json.load(open(f"{d}/report.json"))
    planted = sum(l.count('"tag":"planted:ctx"') for f in glob.glob(f"{d}/gt.rank*")
                  for l in open(f))
    bare = [s["label"] for s in rep["call_sites"] if not (s["native"] or {}).get("symbol")]
    if bare or rep["flagged_syncs"] != planted or not planted:
        bad.append(f"{d}: bare {bare}, {rep['flagged_syncs']} flagged of {planted} planted")
    flagged.append({s["label"]: s["flagged"] for s in rep["call_sites"] if s["flagged"]})
if flagged[0] != flagged[1]:
    bad.append(f"-- CMD {flagged[0]}, -p {flagged[1]}")
print("; ".join(bad) if bad else f"flagged at {flagged[0]} in both")
sys.exit(1 if bad else 0)
PY
	then
		pass "-- CMD, 2 exec'd ranks: $(cat "$launched/check.out")"
	else
		fail "-- CMD, 2 exec'd ranks: $(cat "$launched/check.out")"
	fi
else
	fail "-- CMD, 2 exec'd ranks: no server for -p ($attached)"
fi

# bad input: a stack record whose frame count disagrees with its size is corruption
python3 - "$dir/rec.sprb" "$SCRATCH/bad.sprb" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
off = 16 + struct.unpack_from("<I", data, 12)[0]
while off + 4 <= len(data):
    kind, size = struct.unpack_from("<HH", data, off)
    if kind == 26:
        struct.pack_into("<H", data, off + 16, 31)   # nr_native
        break
    off += size
open(sys.argv[2], "wb").write(data)
PY
if "$SPECPROBE" dump --json "$SCRATCH/bad.sprb" >/dev/null 2>"$SCRATCH/bad.err"; then
	fail "corrupt stack record: dump exited 0"
elif grep -q "corrupt call-site record at byte" "$SCRATCH/bad.err"; then
	pass "corrupt stack record: '$(grep -o 'corrupt call-site record at byte [0-9]*' \
		"$SCRATCH/bad.err")'"
else
	fail "corrupt stack record: $(head -1 "$SCRATCH/bad.err")"
fi
finish
