#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Runs every integration test; they need root and kernel BTF, and skip without them.
cd "$(dirname "$0")" || exit 1
if [ "$(id -u)" != 0 ]; then
	echo "integration tests skipped: they need root (BPF, uprobes)"
	exit 0
fi
if [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "integration tests skipped: no kernel BTF at /sys/kernel/btf/vmlinux"
	exit 0
fi
passed=0 failed=0
# the failures again at the end, where a log's tail shows them
failures=$(mktemp)
trap 'rm -f "$failures"' EXIT
for t in test_*.sh; do
	echo "== $t"
	log=$(mktemp)
	bash "$t" >"$log" 2>&1
	cat "$log"
	out=$(tail -1 "$log")
	sed -n "s/^  FAIL  /  FAIL  ${t%.sh}: /p" "$log" >>"$failures"
	rm -f "$log"
	p=$(echo "$out" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed/\1/p')
	f=$(echo "$out" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed/\2/p')
	if [ -z "$p" ]; then
		echo "  FAIL  ${t%.sh}: no summary line (last line: $out)" >>"$failures"
		failed=$((failed + 1))
	else
		passed=$((passed + p)) failed=$((failed + f))
	fi
done
cat "$failures"
echo "integration: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
