#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# tools/bench/onoff under record on the simulated server: with the traced bit clear nothing
# is recorded, with it set every call is, by the server's ground truth between the flips.
# docs/PERFORMANCE.md's within-round figures rest on this.
source "$(dirname "$0")/lib.sh"
ONOFF=$TOP/.output/bench/onoff
dir=$SCRATCH/onoff

if [ ! -x "$ONOFF" ]; then
	fail "no $ONOFF: make builds it"
	finish
	exit
fi
start_server "$dir" --cycles 1000000 || { fail "no server"; finish; exit; }
touch "$dir/go"
"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" 2>"$dir/rec.err" &
rec=$!
for _ in $(seq 1200); do grep -q tracing "$dir/rec.err" && break; sleep 0.1; done
# this recorder's own .bss, not the newest on the machine: another tracer may run beside it
bss=
for id in $(sed -n 's/^map_id:[[:space:]]*//p' /proc/$rec/fdinfo/* 2>/dev/null | sort -u); do
	bpftool map show id "$id" 2>/dev/null | grep -q 'specprob\.bss' && bss=$id
done
"$ONOFF" -p "$target" -t 100 -d 2 ${bss:+-m "$bss"} >"$dir/flips" 2>"$dir/onoff.err"
onoff_rc=$?
kill -INT $rec
wait $rec
kill -TERM $server_pid
wait $server_pid
"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.json" 2>"$dir/dump.err"

if [ $onoff_rc -eq 0 ] && [ "$(grep -c '^o' "$dir/flips")" -ge 19 ]; then
	pass "onoff: 2 s of flips every 100 ms, exit 0"
else
	fail "onoff: exit $onoff_rc, $(grep -c '^o' "$dir/flips") flips: $(head -1 "$dir/onoff.err")"
fi
# Calls made well inside a stretch (1 ms from its flips): all recorded when on, none when off.
if python3 - "$dir" <<'EOF'
import json, sys

d = sys.argv[1]
flips = [(s, int(t)) for s, t in (line.split() for line in open(f"{d}/flips"))]
calls = [json.loads(line) for line in open(f"{d}/calls.json")]
names = {c["name"] for c in calls}
truth = [json.loads(line) for line in open(f"{d}/gt.rank0")]
truth = [c for c in truth if "before" in c and c.get("base") in names]
margin, bad, on_seen, off_seen = 1_000_000, [], 0, 0
for (state, t0), (_, t1) in zip(flips, flips[1:]):
    lo, hi = t0 + margin, t1 - margin
    made = sum(1 for c in truth if lo <= c["before"] and c["after"] <= hi)
    got = sum(1 for c in calls if lo <= c["ts_entry"] <= hi)
    want = made if state == "on" else 0
    if state == "on":
        on_seen += made
    else:
        off_seen += made
    if got != want and not (state == "on" and made <= got <= made + 2):
        bad.append(f"{state} [{t0}, {t1}]: {got} recorded, {want} wanted")
print(f"  calls made while on: {on_seen}, while off: {off_seen}; stretches wrong: {len(bad)}")
for b in bad[:5]:
    print("   ", b)
sys.exit(1 if bad or not on_seen or not off_seen else 0)
EOF
then
	pass "onoff: every call made while on is recorded, none made while off"
else
	fail "onoff: recorded calls and the flips disagree ($dir)"
	trap - EXIT
fi
finish
