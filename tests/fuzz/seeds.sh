#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Seed corpora for the fuzz harnesses, in DIR/{recording,top,elf,ldcache,pylines,promtext}:
# short recordings of the simulated server and of the look-alike caller (root:
# they are traced), the same cut at several places, ELF files and ld.so.cache;
# for top, recordings followed by fuzz_top's 8 bytes of screen size and keys.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:?usage: seeds.sh DIR}
sim=$top/.output/specsim/specsim-server
look=$top/.output/lookalike
rm -rf "$dir"
mkdir -p "$dir/recording" "$dir/top" "$dir/elf" "$dir/ldcache" "$dir/pylines" "$dir/promtext"
work=$(mktemp -d /tmp/specprobe-seeds.XXXXXX)
trap 'rm -rf "$work"' EXIT

# record NAME CMD...: a recording of CMD started under trace
record() {
	local name=$1
	shift
	"$top/specprobe" record -o "$dir/recording/$name.sprb" -- "$@" >/dev/null 2>"$work/$name.err" ||
		echo "seeds: recording $name failed: $(tail -1 "$work/$name.err")" >&2
}

# cut FILE: FILE cut inside its header, after its first records and one byte short
cut_variants() {
	local f=$1 size
	size=$(stat -c %s "$f")
	for at in 24 200 $((size / 3)) $((size - 1)); do
		[ "$at" -gt 0 ] && [ "$at" -lt "$size" ] && head -c "$at" "$f" >"${f%.sprb}-cut$at.sprb"
	done
}

if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ]; then
	record sim-sync "$sim" -q --cycles 3
	record sim-ranks-deferred "$sim" -q --cycles 2 --ranks 2 --accept-mode deferred
	record sim-torch "$sim" -q --cycles 2 --torch
	record sim-eager-plants "$sim" -q --cycles 3 --draft-mode eager --verify-pieces 2 \
		--plant ctx@draft-verify/2 --plant pageable-copy@accept
	# a second and more of trace: the whole-run analysis (report, export) steps its windows
	record sim-windows "$sim" -q --cycles 10 --host-us 30000
	# --sample: windows of launch probes (SP_REC_SAMPLE), cycles counted only inside them
	"$top/specprobe" record -o "$dir/recording/sim-sampled.sprb" --sample 40ms/80ms \
		-- "$sim" -q --cycles 100 --host-us 500 --eager-loop >/dev/null 2>"$work/sampled.err" ||
		echo "seeds: recording sim-sampled failed: $(tail -1 "$work/sampled.err")" >&2
	port=$((20000 + RANDOM % 20000))
	"$top/specprobe" record -o "$dir/recording/sim-srvmetrics.sprb" \
		--server-metrics "http://127.0.0.1:$port/metrics" --server-metrics-interval 100ms \
		-- "$sim" -q --cycles 12 --host-us 20000 --serve-metrics vllm "$port" \
		>/dev/null 2>"$work/srv.err" ||
		echo "seeds: recording sim-srvmetrics failed: $(tail -1 "$work/srv.err")" >&2
	touch "$work/go"
	record caller "$look/caller" 3 2 "$work/go" "$work/truth" 1
	# call sites: stack and mapping records of version 2
	record sites "$look/sites" 3 2 "$work/go"
	cut_variants "$dir/recording/sim-sync.sprb"
	cut_variants "$dir/recording/sites.sprb"
	cut_variants "$dir/recording/caller.sprb"
else
	echo "seeds: not root or no BTF: the recording harnesses start from a bare magic" >&2
fi
printf 'SPECPRB\n' >"$dir/recording/magic.sprb"

# fuzz_top: lines, cols, sort/rank/help, scroll, window, frame pace (see fuzz_top.c)
for f in "$dir"/recording/*.sprb; do
	name=$(basename "$f" .sprb)
	{ cat "$f"; printf '\027\000\117\000\000\000\004\000'; } >"$dir/top/$name-80x24"
	{ cat "$f"; printf '\000\000\000\000\105\003\000\002'; } >"$dir/top/$name-1x1"
	{ cat "$f"; printf '\376\003\376\007\002\000\073\041'; } >"$dir/top/$name-huge"
done

for f in "$look/libcuda.so.1" "$look/libnccl.so.2" "$look/caller" "$look/loader" "$look/sites"; do
	cp "$f" "$dir/elf/"
	strip -s -o "$dir/elf/$(basename "$f").stripped" "$f"
done
cp /lib64/ld-linux-x86-64.so.2 "$dir/elf/ld.so"
printf '#!/bin/sh -e\n' >"$dir/elf/script-sh"
printf '#!/usr/bin/env python3\n' >"$dir/elf/script-env"
printf '#!  /usr/bin/env\n' >"$dir/elf/script-env-alone"

cp /etc/ld.so.cache "$dir/ldcache/ld.so.cache"
head -c 4096 /etc/ld.so.cache >"$dir/ldcache/ld.so.cache-cut"
# line tables of the CPythons here: a format byte (fuzz_pylines.c), then the table
for py in /root/.pyenv/versions/3.1[0-3].*/bin/python3.1[0-3] python3; do
	command -v "$py" >/dev/null || continue
	"$py" - "$dir/pylines" <<'PY'
import os, sys, sysconfig
minor = sys.version_info.minor
fmt = 0xf9 if minor == 10 else 0xf8 | (minor - 11) << 1
src = open(os.path.join(sysconfig.get_paths()["stdlib"], "argparse.py"), "rb").read()
codes = [compile(src, "argparse.py", "exec")]
codes += [c for c in codes[0].co_consts if hasattr(c, "co_linetable")][:8]
for i, code in enumerate(codes):
    with open(os.path.join(sys.argv[1], f"3.{minor}-{i}"), "wb") as f:
        f.write(bytes([fmt]) + code.co_linetable)
PY
done
# /metrics bodies: vLLM's and SGLang's families, and values no counter holds
printf '%s\n' '# TYPE vllm:generation_tokens_total counter' \
	'vllm:generation_tokens_total{engine="0",model_name="m"} 962.0' \
	'vllm:spec_decode_num_drafts_total{engine="0"} 412.0 1712000000000' \
	'vllm:spec_decode_num_draft_tokens_total 1236' \
	'vllm:spec_decode_num_accepted_tokens_total{a="x\"}"} 530.0' >"$dir/promtext/vllm"
printf '%s\r\n' 'sglang:spec_accept_length{tp_rank="0"} 2.5' 'sglang:spec_accept_rate 0.5' \
	'sglang:generation_tokens_total 1.5e3' 'sglang:gen_throughput NaN' >"$dir/promtext/sglang"
for v in -5 NaN +Inf 1e308 0x10 '1 2 3 4' 9007199254740993; do
	echo "vllm:generation_tokens_total $v" >"$dir/promtext/bad-$(echo "$v" | tr -c 'a-zA-Z0-9\n' _)"
done
echo "seeds: $(find "$dir" -type f | wc -l) files in $dir" >&2
