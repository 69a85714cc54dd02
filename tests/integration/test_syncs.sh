#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Sync classification and self-overhead on the simulated server: every planted sync found
# with its kind, position and verdict, nothing else flagged, starvation bounds only where
# they hold, the tracer's cost equal to its calls times the calibrated cost. Traced from
# cuInit, from the start gate and from the middle of the loop; specsim's loop and PyTorch's
# (--torch).
source "$(dirname "$0")/lib.sh"
CHECK=$TOP/tests/integration/check_syncs.py

if ! "$SERVER" --help | grep -q -- --clean-syncs; then
	echo "test_syncs: the simulated server has no --plant/--clean-syncs"
	finish
	exit
fi

check() {
	local name=$1 dir=$2 widest
	if ! "$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" \
		2>"$dir/report.err"; then
		fail "$name: report failed: $(head -1 "$dir/report.err")"
		return
	fi
	"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>/dev/null
	if python3 "$CHECK" --counts --text "$dir/report.txt" --report "$dir/report.json" \
		"$dir"/gt.rank* >"$dir/check.out"; then
		pass "$name: $(tail -1 "$dir/check.out" | sed 's/^ *//')"
	else
		cat "$dir/check.out"
		fail "$name: sync classification differs from the planted calls ($dir)"
		trap - EXIT
	fi
	widest=$(expand -t8 "$dir/report.txt" |
		awk '{ if (length($0) > w) w = length($0) } END { print w }')
	if grep -q '^Flagged syncs: ' "$dir/report.txt" && grep -q '^Self-overhead: a probe' \
		"$dir/report.txt" && [ "$widest" -le 100 ]; then
		pass "$name: text report with flagged syncs and self-overhead, $widest columns wide"
	else
		fail "$name: text report without its sync or overhead section, or $widest columns"
	fi
}

# from_init|from_gate NAME ARGS...: traced from before cuInit, or from the start gate
traced() {
	local how=$1 name=$2 dir="$SCRATCH/$2" wait_at=()
	shift 2
	[ "$how" = init ] && wait_at=(--wait-at init)
	start_server "$dir" "${wait_at[@]}" "$@" || { fail "$name: no server"; return; }
	record_whole_run "$dir"
	check "$name" "$dir"
}

# attached while the loop runs: the pinned buffers were made before attach
mid_run() {
	local name=$1 dir="$SCRATCH/$1" rec
	shift
	start_server "$dir" "$@" || { fail "$name: no server"; return; }
	touch "$dir/go"
	sleep 0.5
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --ring-mb 256 2>"$dir/rec.err" &
	rec=$!
	# two seconds traced, counted from the attach (the recording appears then), not the start
	wait_file "$dir/rec.sprb"
	sleep 2
	kill -TERM $server_pid
	wait $server_pid
	wait $rec
	check "$name" "$dir"
}

ALL="--plant ctx@draft-verify/5 --plant stream@accept/3 --plant event@after-verify/2
	--plant free@extend/3 --plant poll@draft-verify/4 --plant legacy@extend/2
	--plant alloc@accept/3 --plant sync-copy@after-verify/3 --plant pageable-copy@draft-verify/2
	--plant unknown-host@accept/2 --plant ctx@outside --clean-syncs"
# shellcheck disable=SC2086
traced init all-kinds-from-init --cycles 400 $ALL --plant capture-sync
# shellcheck disable=SC2086
traced gate all-kinds-from-gate --cycles 300 $ALL --plant unknown-host@extend/3 \
	--accept-mode event
traced init deferred-pieces --cycles 150 --accept-mode deferred --verify-pieces 2 \
	--plant stream@after-verify/2 --plant event@accept/3 --plant poll@extend/5 \
	--plant ctx@outside/7 --clean-syncs
traced init two-ranks --cycles 150 --ranks 2 --plant ctx@draft-verify/4 \
	--plant stream@draft-verify/3 --plant free@accept/5 --plant legacy@after-verify/2 \
	--clean-syncs
traced init eager-draft --cycles 150 --draft-mode eager --plant event@draft-verify/2 \
	--plant sync-copy@extend/3 --clean-syncs
# no graph: each draft token's sync is the loop's own (verdict step), the plants are flagged
traced init eager-loop --cycles 150 --eager-loop --draft-k 6 --plant ctx@after-verify/3 \
	--plant stream@accept/4 --plant free@extend/5 --plant event@draft-verify/2 \
	--plant sync-copy@after-verify/7 --clean-syncs
traced gate eager-same-ranks --cycles 100 --eager-loop --eager-same --ranks 2 \
	--plant legacy@after-verify/2 --plant pageable-copy@accept/3 --plant poll@extend/4
# draft = target with at most two tokens: the call sites tell the token reads from the accept
traced init eager-same-k2 --cycles 150 --eager-loop --eager-same --draft-k 2 \
	--plant ctx@after-verify/3 --plant stream@accept/4 --plant event@draft-verify/2 \
	--plant free@extend/5 --clean-syncs
traced init eager-same-k2-ranks --cycles 100 --eager-loop --eager-same --draft-k 2 --ranks 2 \
	--plant legacy@after-verify/2 --plant pageable-copy@accept/3 --plant poll@extend/4
# as PyTorch runs it eagerly: all on the legacy stream, tolist() into pageable memory. A read
# after the verify is the accept's own there (the first one on the verify's stream), so the
# extra reads are planted before the verify
traced init eager-torch --cycles 150 --eager-loop --torch --draft-k 6 --plant ctx@after-verify/3 \
	--plant stream@accept/4 --plant event@draft-verify/2 --plant sync-copy@draft-verify/7 \
	--plant free@after-verify/5 --clean-syncs
traced gate eager-torch-same-ranks --cycles 100 --eager-loop --torch --eager-same --ranks 2 \
	--plant pageable-copy@accept/3 --plant poll@draft-verify/4
mid_run mid-run-eager-torch --cycles 3000 --eager-loop --torch --eager-same \
	--plant pageable-copy@accept/3 --plant ctx@after-verify/4
# graph drafts, the verify eager: its accept sync is the loop's own, the plants are flagged
if "$SERVER" --help | grep -q -- --verify-mode; then
	traced init eager-verify --cycles 150 --verify-mode eager --draft-k 4 \
		--plant ctx@after-verify/3 --plant stream@accept/4 --plant free@extend/5 \
		--plant event@draft-verify/2 --plant sync-copy@after-verify/7 \
		--plant pageable-copy@draft-verify/3 --clean-syncs
	traced init eager-verify-ranks --cycles 100 --verify-mode eager --draft-k 3 --ranks 2 \
		--plant legacy@after-verify/2 --plant pageable-copy@accept/3 --plant poll@extend/4 \
		--plant ctx@draft-verify/5
fi
# PyTorch's loop (--torch): the legacy stream only, pinned buffers and a malloc'd scalar made
# before the gate. Under the tracer a call can outlast a 50 us copy, so the scalar's staged H2D
# and .item()'s kernels last longer here: their syncs then still find work (the truth's
# stream_busy says whether they did).
TORCH="--torch --draft-k 5 --accept-us 800"
torch_traced() {
	SPECSIM_STAGED_LATENCY_NS=400000 traced "$@"
}
# Every replay asks cuStreamIsCapturing first, as PyTorch's does; it is not probed (a quarter
# of the loop's calls, answered by the capture's begin and end), the replays all are.
unprobed_queries() {
	local name=$1 dir=$SCRATCH/$1 asked replays queries
	asked=$(cat "$dir"/gt.rank* | grep -c '"name":"cuStreamIsCapturing"')
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>/dev/null
	replays=$(grep -c '"name":"cuGraphLaunch"' "$dir/calls.jsonl")
	queries=$(grep -c '"name":"cuStreamIsCapturing"' "$dir/calls.jsonl")
	if [ "$asked" -gt 0 ] && [ "$replays" = "$asked" ] && [ "$queries" = 0 ]; then
		pass "$name: $asked capture-status queries not probed, all $replays replays recorded"
	else
		fail "$name: $asked queries asked, $queries recorded; $replays replays recorded"
	fi
}
# shellcheck disable=SC2086
torch_traced gate torch-clean --cycles 200 $TORCH --clean-syncs
unprobed_queries torch-clean
# shellcheck disable=SC2086
torch_traced gate torch-plants --cycles 200 $TORCH --plant ctx@draft-verify/3 \
	--plant event@after-verify/4 --plant stream@accept/5 --plant unknown-host@accept/2 \
	--plant legacy@after-verify/3 --plant poll@draft-verify/7 --plant ctx@outside
# shellcheck disable=SC2086
torch_traced gate torch-side-streams --cycles 200 $TORCH --plant side-stream/2 \
	--plant side-stream-pre@after-verify/3
# shellcheck disable=SC2086
torch_traced gate torch-pageable --cycles 200 $TORCH --plant pageable-copy@draft-verify/2
# shellcheck disable=SC2086
torch_traced init torch-from-init --cycles 200 $TORCH --plant side-stream/3 \
	--plant side-stream-pre@after-verify/2 --plant pageable-copy@draft-verify/4 \
	--plant capture-sync --clean-syncs
# site_order NAME ARGS...: two plants of different cost, the dearer one rarer; report --json,
# the text report and top's end block list them by blocked ms per cycle, costliest first
site_order() {
	local name=$1 dir="$SCRATCH/$1"
	shift
	start_server "$dir" --wait-at init "$@" || { fail "$name: no server"; return; }
	record_whole_run "$dir"
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"
	"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>>"$dir/report.err"
	"$SPECPROBE" top --batch --replay "$dir/rec.sprb" --speed 0 >"$dir/top.txt" \
		2>>"$dir/report.err"
	if python3 "$TOP/tests/integration/check_top.py" siteorder "$dir/report.json" \
		"$dir/report.txt" "$dir/top.txt" >"$dir/order.out"; then
		pass "$name: $(cat "$dir/order.out")"
	else
		fail "$name: $(cat "$dir/order.out") ($dir)"
	fi
}
site_order site-order --cycles 300 --plant ctx@extend/2 --plant pageable-copy@draft-verify/3

# uncaptured graphs take their roles from behaviour: no copies to the host after a draft
mid_run mid-run --cycles 1000000 --plant unknown-host@accept/2 \
	--plant pageable-copy@accept/3 --plant alloc@after-verify/4 --plant ctx@accept/5 \
	--plant event@after-verify/3 --plant legacy@extend/2 --clean-syncs
# Hugging Face's assisted generation as a Python program runs it (tools/specsim/hf_assisted.py on
# specsim's libcuda): the assistant's generate() nested in the target's, reads inside and
# between forwards, the cache trim's per-layer reads, draft lengths that vary, a prefill of
# both models, the last round drafting nothing. Every round a cycle, told by the Python frames
# of the syncs, and no sync in a draft or a verify flagged.
HF_PY=$(ls -d "${PYTHONS:-/root/.pyenv/versions}"/3.1[0-3].*/bin/python3.1[0-3] 2>/dev/null |
	sort -V | tail -1)
hf_assisted() {
	local name=$1 dir="$SCRATCH/$1" got
	shift
	mkdir -p "$dir"
	"$SPECPROBE" record -o "$dir/rec.sprb" -- "$HF_PY" "$TOP/tools/specsim/hf_assisted.py" \
		"$TOP/.output/specsim/libcuda.so.1" "$dir/truth.json" "$@" >"$dir/run.out" \
		2>"$dir/record.err"
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"
	got=$(python3 -c '
import json, sys
d, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
inside = sum(1 for s in d["syncs"] if s["flagged"] and s["position"] in ("draft-verify", "verify"))
loops = ";".join(l["verify_from"] for l in d["loops"])
ok = len(d["cycles"]) == t["rounds"] and loops == "python-frames" and not inside
print("ok" if ok else "bad", len(d["cycles"]), t["rounds"], loops, inside, t["drafted"][-1])' \
		"$dir/report.json" "$dir/truth.json" 2>&1)
	case $got in
	ok*) read -r _ cycles rounds _ _ last <<<"$got"
	     pass "$name: $cycles cycles for $rounds rounds (last drafted $last), told by the Python frames, no draft or verify sync flagged" ;;
	*) fail "$name: cycles, rounds, loops, flagged inside, last draft: ${got:-none} ($dir)" ;;
	esac
}
if [ -n "$HF_PY" ]; then
	hf_assisted hf-assisted
	hf_assisted hf-assisted-same --same
	hf_assisted hf-assisted-draftless --seed 11 --new-tokens 30
	# recorded from the program's start (the models' load, a warm-up generate() first) and
	# sampled (the accept's reads under one statement): both generate()s' rounds each a cycle
	hf_assisted hf-assisted-warm-sample --warmup --sample
	hf_assisted hf-assisted-warm-sample-same --warmup --sample --same
	hf_assisted hf-assisted-warm-sample-draftless --warmup --sample --seed 11 --new-tokens 30
	# every forward reads its attention mask from the same model code, the draft's nested
	# in the generation and the target's in the loop: their repeated stacks share their
	# innermost frames and are told apart by how deep they run
	hf_assisted hf-assisted-mask --mask-check
	hf_assisted hf-assisted-mask-same --mask-check --same
	hf_assisted hf-assisted-warm-sample-mask --warmup --sample --mask-check
else
	echo "test_syncs: no CPython 3.10-3.13 under ${PYTHONS:-/root/.pyenv/versions}: hf-assisted not run"
fi
finish
