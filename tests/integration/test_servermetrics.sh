#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# --server-metrics on the simulated server (docs/server-metrics.md): specsim serves /metrics
# in vLLM's and in SGLang's format with counters that follow its truth (each cycle's
# accepted tokens drawn and written there); every sample kept in the recording equals the
# truth, and the report's tokens/s and accept length are those samples' deltas over the
# cycles' span. Bad input: one line each, the trace going on without the figures.
source "$(dirname "$0")/lib.sh"
CHECK=$TOP/tests/integration/check_servermetrics.py
PORT=$((20000 + $$ % 20000))

# run NAME FORMAT URL_HOST [SPECSIM_ARGS...]: record a whole run scraping it every 100 ms
# (INTERVAL another; URL_PORT: scrape another port than the one served)
run() {
	local name=$1 format=$2 host=$3 dir="$SCRATCH/$1"
	shift 3
	PORT=$((PORT + 1))
	mkdir -p "$dir"
	"$SPECPROBE" record -o "$dir/rec.sprb" \
		--server-metrics "http://$host:${URL_PORT:-$PORT}/metrics" \
		--server-metrics-interval "${INTERVAL:-100ms}" -- "$SERVER" -q --ground-truth "$dir/gt" \
		--cycles 1200 --serve-metrics "$format" "$PORT" "$@" >"$dir/out" 2>"$dir/rec.err"
	echo $? >"$dir/rc"
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>"$dir/report.err"
	"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>&1
}

# exact NAME FORMAT [CHECK_FLAGS] -- [SPECSIM_ARGS]
exact() {
	local name=$1 format=$2 flags=() dir="$SCRATCH/$1"
	shift 2
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do flags+=("$1"); shift; done
	shift
	run "$name" "$format" 127.0.0.1 "$@"
	if [ "$(cat "$dir/rc")" != 0 ]; then
		fail "$name: record failed: $(grep -v '^libbpf' "$dir/rec.err" | head -1)"
		return
	fi
	if python3 "$CHECK" "$format" "$dir/gt.rank0" "$dir/rec.sprb" "$dir/report.json" \
		"${flags[@]}" >"$dir/check.out" 2>&1; then
		pass "$name: $(tail -1 "$dir/check.out")"
	else
		cat "$dir/check.out"
		fail "$name: server figures differ from the truth ($dir)"
	fi
}

exact vllm vllm --
exact sglang sglang --
exact vllm-k5 vllm -- -k 5
exact reset vllm --reset -- --serve-metrics-fault reset
exact few-drafts vllm --few-drafts -- --serve-metrics-fault few-drafts

# the text report leads with the user's number
lead=$(grep -m1 'tok/s, accept length' "$SCRATCH/vllm/report.txt")
if [[ "$lead" =~ ^[0-9.]+\ tok/s,\ accept\ length\ [0-9.]+\ \(vllm\),\ [0-9.]+\ cycles/s$ ]] &&
	[ "$(grep -n 'tok/s, accept length' "$SCRATCH/vllm/report.txt" | cut -d: -f1)" -lt \
		"$(grep -n '^Flagged syncs' "$SCRATCH/vllm/report.txt" | cut -d: -f1)" ]; then
	pass "text report leads with: $lead"
else
	fail "text report: no tok/s line before the flagged syncs ($lead)"
fi
# its first line gives the tokens/s of the report's JSON (checked against the truth above)
first=$(head -1 "$SCRATCH/vllm/report.txt")
want=$(python3 -c 'import json, sys; print("%.1f" % json.load(open(sys.argv[1]))["server"]
	["tokens_per_s"])' "$SCRATCH/vllm/report.json" 2>/dev/null)
if [[ "$first" =~ ^specprobe\ report:\ [0-9.]+\ cycles/s,\ ([0-9.]+)\ tok/s, ]] &&
	[ "${BASH_REMATCH[1]}" = "$want" ]; then
	pass "the report's first line: $first"
else
	fail "the report's first line: '$first', want $want tok/s"
fi
if grep -q 'accept length [0-9.]* (sglang gauge)' "$SCRATCH/sglang/report.txt"; then
	pass "SGLang's accept length is said to be its gauge"
else
	fail "SGLang's report does not name the gauge"
fi
if grep -q '^  warning: the server counted .* drafts but specprobe .* cycles' \
	"$SCRATCH/few-drafts/report.txt" && ! grep -q 'warning: the server counted' \
	"$SCRATCH/vllm/report.txt"; then
	pass "drafts and cycles that disagree are said in one line, and only then"
else
	fail "no disagreement line for few-drafts, or one for a sound run"
fi
if grep -q 'counter drop(s): the server restarted' "$SCRATCH/reset/report.txt"; then
	pass "a counter reset is said and counted from 0"
else
	fail "reset: no line about the restart"
fi

# export: counter tracks of the server's figures between each two scrapes, equal to the samples
for name in vllm sglang reset; do
	dir="$SCRATCH/$name"
	if "$SPECPROBE" export "$dir/rec.sprb" -o "$dir/t.pftrace" 2>"$dir/export.err" &&
		python3 "$TOP/tests/integration/check_perfetto.py" "$dir/t.pftrace" \
			--server "$dir/rec.sprb" >"$dir/perfetto.out" 2>&1; then
		pass "export $name: $(tail -1 "$dir/perfetto.out")"
	else
		cat "$dir/export.err" "$dir/perfetto.out"
		fail "export $name: the server's counter tracks differ from the samples"
	fi
done

# record --metrics: the server's figures served beside ours, under the server's pid
for format in vllm sglang; do
	dir="$SCRATCH/metrics-$format"
	mkdir -p "$dir"
	PORT=$((PORT + 2))
	"$SPECPROBE" record -o "$dir/rec.sprb" --server-metrics "http://127.0.0.1:$PORT/metrics" \
		--server-metrics-interval 100ms --metrics "127.0.0.1:$((PORT + 1))" \
		--metrics-linger 60 -- "$SERVER" -q --cycles 1200 --serve-metrics "$format" "$PORT" \
		>/dev/null 2>"$dir/rec.err" &
	rec=$!
	if python3 "$CHECK" metrics "127.0.0.1:$((PORT + 1))" "$dir/rec.sprb" >"$dir/check.out" 2>&1
	then
		pass "--metrics $format: $(tail -1 "$dir/check.out")"
	else
		cat "$dir/check.out"
		fail "--metrics $format: the server's series differ from the recording ($dir)"
	fi
	kill -TERM $rec 2>/dev/null
	wait $rec
done

# diff: the server's tokens/s, accept length and tokens per cycle of k = 3 against k = 5, each
# its report's (those equal the truth above)
"$SPECPROBE" diff --json "$SCRATCH/vllm/rec.sprb" "$SCRATCH/vllm-k5/rec.sprb" \
	>"$SCRATCH/diff.json" 2>"$SCRATCH/diff.err"
"$SPECPROBE" diff "$SCRATCH/vllm/rec.sprb" "$SCRATCH/vllm-k5/rec.sprb" >"$SCRATCH/diff.txt" 2>&1
if out=$(python3 - "$SCRATCH/diff.json" "$SCRATCH/vllm/report.json" \
	"$SCRATCH/vllm-k5/report.json" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))["server"]
a, b = (json.load(open(p))["server"] for p in sys.argv[2:4])
for key in ("tokens_per_s", "accept_length", "tokens_per_cycle"):
    assert d[key]["a"] == a[key] and d[key]["b"] == b[key], f"{key}: {d[key]}, {a[key]} {b[key]}"
    assert d[key]["change"] == b[key] - a[key], f"{key} change"
print(f"tok/s {a['tokens_per_s']:.1f} -> {b['tokens_per_s']:.1f}, accept length "
      f"{a['accept_length']:.3f} -> {b['accept_length']:.3f}")
EOF
) && grep -q '^  tokens/s  ' "$SCRATCH/diff.txt" &&
	grep -q '^  accept length  ' "$SCRATCH/diff.txt"; then
	pass "diff k=3 against k=5, each side its report's: $out"
else
	fail "diff: server rows differ from the reports: $out $(cat "$SCRATCH/diff.err")"
fi

# dump: every sample once, a line each and a JSON object each, with the recorded values; the
# calls are as many as without them
dump_check() {
	local dir="$SCRATCH/$1"
	"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/dump.jsonl" 2>/dev/null
	"$SPECPROBE" dump "$dir/rec.sprb" >"$dir/dump.txt" 2>"$dir/dump.err"
	PYTHONPATH=$TOP/tests/integration python3 - "$dir/rec.sprb" "$dir/dump.jsonl" \
		"$dir/dump.txt" "$dir/dump.err" <<'EOF'
import json, re, struct, sys
import recfile
data = open(sys.argv[1], "rb").read()
fams = [None, "drafts", "draft_tokens", "accepted_tokens", "generated_tokens", "accept_length",
        "accept_rate"]
stats = ["ok", "down", "slow", "not_text", "too_big", "http", "no_family"]
want = []
for off, kind, size in recfile.records(data):
    if kind == 68:
        _, _, pid, ts, value, scrape, rank, fam, _, status, series = \
            struct.unpack_from("<HHIQdIiHBBI", data, off)
        ok = status == 0 and fam
        want.append((pid, ts, scrape, stats[status], fams[fam] if ok else None,
                     value if ok else None))
lines = [json.loads(l) for l in open(sys.argv[2])]
got = [(j["pid"], j["ts"], j["scrape"], j["status"], j["family"], j["value"])
       for j in lines if j.get("record") == "server_metric"]
assert got == want, f"{len(got)} samples in dump --json, {len(want)} recorded"
for j, nxt in zip(lines, lines[1:]):
    assert j.get("record") != "server_metric" or nxt.get("ts", nxt.get("ts_entry")) >= j["ts"], \
        f"sample of scrape {j['scrape']} after a call entered after it"
calls = len(lines) - len(got)
text = open(sys.argv[3]).read().splitlines()
assert sum("server-metrics scrape" in l for l in text) == len(want), "text lines"
total = int(re.search(r"specprobe: (\d+) calls", open(sys.argv[4]).read()).group(1))
assert calls == total == len(text) - len(want), f"{calls} calls, {total} counted"
print(f"{len(want)} samples and {calls} calls")
EOF
}
for name in vllm sglang; do
	if out=$(dump_check $name 2>&1); then
		pass "dump $name: $out, each sample once, before the calls after it"
	else
		fail "dump $name: $out"
	fi
done

# top --replay fills TOK/S and ACC from the recording's samples; without them they stay -.
# A window whose scrapes fall after the loop's last cycle has none to show: any block will do
rows=$("$SPECPROBE" top --replay "$SCRATCH/vllm/rec.sprb" --batch --speed 100 2>/dev/null |
	awk '/^LOOPS/ { getline; getline; print }')
row=$(echo "$rows" | awk '$5 ~ /^[0-9]+\.[0-9]$/ && $NF ~ /^[0-9]\.[0-9][0-9]$/' | tail -1)
if [ -n "$row" ]; then
	pass "top --replay: tok/s $(echo "$row" | awk '{ print $5 }'), acc $(echo "$row" |
		awk '{ print $NF }')"
else
	fail "top --replay: no tok/s or acc in any block: '$(echo "$rows" | tail -3)'"
fi

# bad NAME MESSAGE FORMAT HOST [SPECSIM_ARGS]: one line saying MESSAGE, cycles still found
bad() {
	local name=$1 msg=$2 dir="$SCRATCH/$1"
	shift 2
	run "$name" "$@"
	local lines cycles
	lines=$(grep -c -- "$msg" "$dir/rec.err")
	cycles=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["cycles"])' \
		"$dir/report.json" 2>/dev/null)
	if [ "$(cat "$dir/rc")" = 0 ] && [ "$lines" = 1 ] && [ "${cycles:-0}" -gt 1000 ]; then
		pass "$name: one line ($(grep -- "$msg" "$dir/rec.err" | cut -c1-90)...), $cycles cycles"
	else
		grep -v '^libbpf' "$dir/rec.err" | head -5
		fail "$name: rc $(cat "$dir/rc"), $lines lines saying '$msg', ${cycles:-no} cycles"
	fi
}

# down: nobody listens on the port scraped (specsim serves another): said at the first
# scrape, while the trace goes on, not once it has ended
URL_PORT=1 bad down "no connection at scrape 1 " vllm 127.0.0.1
said=$(grep -n -m1 'no connection at scrape' "$SCRATCH/down/rec.err" | cut -d: -f1)
ended=$(grep -n -m1 ' records, .* bytes to ' "$SCRATCH/down/rec.err" | cut -d: -f1)
if [ -n "$said" ] && [ -n "$ended" ] && [ "$said" -lt "$ended" ]; then
	pass "down: said while tracing (stderr line $said; the totals at line $ended)"
else
	fail "down: not said before the totals (line ${said:-none}, totals ${ended:-none})"
fi
bad slow "no whole answer within the timeout" vllm 127.0.0.1 --serve-metrics-fault slow
bad html "not the Prometheus text format" sglang 127.0.0.1 --serve-metrics-fault html
# a whole second to read it in: the cap, not the timeout, is what stops it
INTERVAL=1 bad huge "the answer is over 8 MiB" vllm 127.0.0.1 --serve-metrics-fault huge
rows=$("$SPECPROBE" top --replay "$SCRATCH/down/rec.sprb" --batch --speed 100 2>/dev/null |
	awk '/^LOOPS/ { getline; getline; last = $0 } END { print last }')
if [ "$(echo "$rows" | awk '{ print $5, $NF }')" = "- -" ]; then
	pass "down: top's tok/s and acc stay -"
else
	fail "down: top shows server figures it cannot have: $rows"
fi
"$SPECPROBE" diff --json "$SCRATCH/vllm/rec.sprb" "$SCRATCH/down/rec.sprb" \
	>"$SCRATCH/diff-down.json" 2>/dev/null
"$SPECPROBE" diff "$SCRATCH/vllm/rec.sprb" "$SCRATCH/down/rec.sprb" >"$SCRATCH/diff-down.txt" 2>&1
if python3 -c 'import json,sys; sys.exit("server" in json.load(open(sys.argv[1])))' \
	"$SCRATCH/diff-down.json" && grep -q '^Setup' "$SCRATCH/diff-down.txt" &&
	! grep -q '^Server' "$SCRATCH/diff-down.txt"; then
	pass "diff: no server rows when one side has no figures"
else
	fail "diff: server rows, or no diff, with one side down"
fi
for name in down slow html huge; do
	have=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["server"]["have"])' \
		"$SCRATCH/$name/report.json" 2>/dev/null)
	[ "$have" = False ] || fail "$name: the report has server figures ($have)"
done

# hostile answers (hostile_metrics.py): negative, NaN, infinite and huge counters, 0x10 and
# extra fields, a Content-Length of -1, closed connections, 100 MB bodies declared and not, a
# chunked body, no family: each scrape recorded under its own cause, none of their numbers kept, the report's
# figures those of the good answers between them, one line per cause naming it
hostile() {
	local dir="$SCRATCH/hostile" hport=$((PORT + 7)) hsrv rec out
	mkdir -p "$dir"
	python3 "$TOP/tests/integration/hostile_metrics.py" "$hport" "$dir/served.jsonl" &
	hsrv=$!
	if ! wait_file "$dir/served.jsonl.ready" || ! start_server "$dir/sim" --cycles 100000000
	then
		fail "hostile: the endpoint or specsim did not start"
		kill $hsrv
		return
	fi
	"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" --server-metrics-interval 300ms \
		--server-metrics "http://127.0.0.1:$hport/metrics" 2>"$dir/rec.err" &
	rec=$!
	wait_file "$dir/rec.sprb"
	touch "$dir/sim/go"
	wait_file "$dir/served.jsonl.done"
	kill -INT $rec
	wait $rec
	kill $server_pid $hsrv
	wait $server_pid $hsrv 2>/dev/null
	"$SPECPROBE" report --json "$dir/rec.sprb" >"$dir/report.json" 2>/dev/null
	"$SPECPROBE" report "$dir/rec.sprb" >"$dir/report.txt" 2>&1
	if out=$(cd "$TOP/tests/integration" && python3 "$CHECK" hostile "$dir/served.jsonl" \
		"$dir/rec.sprb" "$dir/report.json" "$dir/report.txt" "$dir/rec.err" 2>&1); then
		pass "hostile: $out"
	else
		grep -- --server-metrics "$dir/rec.err"
		fail "hostile: $out"
	fi
}
hostile

# a host that is not loopback: used as given, with one warning
addr=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -m1 -E '^[0-9]+\.[0-9.]+$' | grep -v '^127\.')
if [ -n "$addr" ]; then
	bad remote "is not a loopback address" vllm "$addr"
	python3 "$CHECK" vllm "$SCRATCH/remote/gt.rank0" "$SCRATCH/remote/rec.sprb" \
		"$SCRATCH/remote/report.json" >/dev/null 2>&1 && pass "remote: figures equal the truth" ||
		fail "remote: figures differ from the truth"
else
	echo "  skip  non-loopback: this host has no other IPv4 address"
fi

# refused outright, in one line, before tracing anything
for url in https://127.0.0.1:1/metrics ftp://x 127.0.0.1:8000 http://:80/ 'http://h:99999/' \
	http://example.invalid:8000/metrics \
	'http://h/a b'; do
	out=$("$SPECPROBE" record --server-metrics "$url" -- true 2>&1)
	rc=$?
	if [ "$rc" != 0 ] && [ "$(echo "$out" | grep -c 'server-metrics')" -ge 1 ] &&
		! echo "$out" | grep -q 'tracing'; then
		:
	else
		fail "--server-metrics '$url' was not refused (rc $rc: $out)"
	fi
done
pass "URLs other than http://HOST[:PORT][/PATH] are refused"
if "$SPECPROBE" record --server-metrics-interval 2 -- true >/dev/null 2>&1; then
	fail "--server-metrics-interval without --server-metrics was taken"
fi

finish
