#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# A target that keeps starting short-lived processes, CUDA ones among them, recorded with
# --max-size 256K: the files never pass the budget, each reads alone, the calls add up to the
# callers' truth; the tracer's memory and its BPF maps do not grow with the processes it saw.
source "$(dirname "$0")/lib.sh"
ROUNDS=${CHURN_ROUNDS:-600}	# each: seven /bin/true and one process that loads libcuda
BUDGET=$((256 * 1024))
SLACK_KB=2048			# later VmRSS may pass the earlier by this, whatever ROUNDS is

dir=$SCRATCH/churn
mkdir -p "$dir"
mkfifo "$dir/fifo"
touch "$dir/go"
# pauses at a quarter and at the end of the rounds, until the test has looked
cat >"$dir/churn.sh" <<'EOF'
dir=$1 n=$2 loader=$3 lib=$4
for ((i = 1; i <= n; i++)); do
	/bin/true; /bin/true; /bin/true; /bin/true; /bin/true; /bin/true; /bin/true
	"$loader" dlopen "$lib" $((i % 5 + 1)) "$dir/truth" >/dev/null
	if [ $i -eq $((n / 4)) ] || [ $i -eq $n ]; then
		: >"$dir/at.$i"
		while [ ! -e "$dir/ack.$i" ]; do read -t 0.05 <>"$dir/fifo" || :; done
	fi
done
EOF

# the set's bytes now: one directory read names the files, each is counted as it stands
set_bytes() {
	local f sum=0 n=0 size
	for f in "$dir"/rec.sprb.[0-9]*; do
		size=$(stat -c %s "$f" 2>/dev/null) || continue
		sum=$((sum + size))
		n=$((n + 1))
	done
	echo "$sum $n"
}

# entries of the recorder's BPF map NAME (found through its file descriptors)
map_entries() {
	local fd id
	for fd in /proc/$rec/fdinfo/*; do
		id=$(sed -n 's/^map_id:\t*//p' "$fd" 2>/dev/null)
		[ -n "$id" ] || continue
		if bpftool map show id "$id" 2>/dev/null | grep -q " name $1 "; then
			bpftool -j map dump id "$id" 2>/dev/null |
				python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'
			return
		fi
	done
	echo missing
}

rss_kb() { sed -n 's/^VmRSS:[^0-9]*\([0-9]*\) kB/\1/p' /proc/$rec/status; }

"$SPECPROBE" record -o "$dir/rec.sprb" --max-size 256K -- bash "$dir/churn.sh" "$dir" "$ROUNDS" \
	"$LOOKALIKE/loader" "$LOOKALIKE/libcuda.so.1" 2>"$dir/rec.err" &
rec=$!
# the budget, sampled all through the run
(
	max=0 most=0
	while kill -0 $rec 2>/dev/null; do
		read -r bytes n < <(set_bytes)
		[ "$bytes" -gt "$max" ] && max=$bytes
		[ "$n" -gt "$most" ] && most=$n
		sleep 0.02
	done
	echo "$max $most" >"$dir/sampled"
) &
sampler=$!
quarter=$((ROUNDS / 4))
wait_file "$dir/at.$quarter" 6000 || fail "churn: never reached round $quarter"
rss_early=$(rss_kb)
touch "$dir/ack.$quarter"
wait_file "$dir/at.$ROUNDS" 18000 || fail "churn: never reached round $ROUNDS"
rss_late=$(rss_kb)
dl_seen=$(map_entries dl_seen)
pinned=$(map_entries pinned)
touch "$dir/ack.$ROUNDS"
wait $rec
rc=$?
wait $sampler
read -r max most <"$dir/sampled"
read -r end n_end < <(set_bytes)
[ $rc -eq 0 ] || fail "churn: record failed ($rc): $(tail -1 "$dir/rec.err")"

if [ "$max" -le $BUDGET ] && [ "$end" -le $BUDGET ] && [ "$most" -le 4 ] && [ "$end" -gt 0 ]; then
	pass "churn: the set never passed 256K ($max bytes at most, $most files; $end at the end)"
else
	fail "churn: the set reached $max bytes in $most files, $end at the end (budget $BUDGET)"
fi

# every call the loaders made is kept or counted as rotated out
made=$(python3 -c 'import json, sys
print(sum(sum(v for k, v in json.loads(l).items() if k != "nspid") for l in open(sys.argv[1])))' \
	"$dir/truth")
"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/calls.jsonl" 2>"$dir/dump.err"
kept=$(wc -l <"$dir/calls.jsonl")
rotated=$(sed -n 's/.*rotated out before segment [0-9]*: \([0-9]*\) calls.*/\1/p' "$dir/dump.err")
rotated=${rotated:-0}
if [ -n "$rotated" ] && [ $((kept + rotated)) -eq "$made" ] && [ "$rotated" -gt 0 ]; then
	pass "churn: $kept calls kept + $rotated rotated out = $made made by $ROUNDS processes"
else
	fail "churn: $kept kept + ${rotated:-?} rotated out, $made made: $(head -2 "$dir/dump.err")"
fi

# each file reads alone, every call named, and together they hold the set's calls
sum=0 unnamed=0 unread=0
for seg in "$dir"/rec.sprb.[0-9]*; do
	"$SPECPROBE" dump --json "$seg" >"$dir/seg.jsonl" 2>"$dir/seg.err" || unread=$((unread + 1))
	grep -qE 'corrupt|does not continue|cut short' "$dir/seg.err" && unread=$((unread + 1))
	sum=$((sum + $(wc -l <"$dir/seg.jsonl")))
	unnamed=$((unnamed + $(grep -c '"name":"?"' "$dir/seg.jsonl")))
done
if [ "$unread" -eq 0 ] && [ "$sum" -eq "$kept" ] && [ "$unnamed" -eq 0 ]; then
	pass "churn: each of the $n_end files reads alone, every call named ($sum calls together)"
else
	fail "churn: files alone: $unread unreadable, $sum calls ($unnamed unnamed), set $kept"
fi

# memory: the same after all rounds as after a quarter of them, give or take the slack
if [ -n "$rss_early" ] && [ -n "$rss_late" ] && [ "$rss_late" -le $((rss_early + SLACK_KB)) ]; then
	pass "churn: tracer VmRSS $rss_early kB after $quarter rounds, $rss_late kB after $ROUNDS"
else
	fail "churn: tracer VmRSS grew from ${rss_early:-?} kB to ${rss_late:-?} kB"
fi
# only the shell running the rounds is alive (and traced) when they end
if [ "$dl_seen" != missing ] && [ "$dl_seen" -le 1 ] && [ "$pinned" != missing ] &&
	[ "$pinned" -le 1 ]; then
	pass "churn: BPF maps hold live processes only (dl_seen $dl_seen, pinned $pinned entries)"
else
	fail "churn: BPF map entries after $((ROUNDS * 8)) processes: dl_seen $dl_seen, pinned $pinned"
fi
finish
