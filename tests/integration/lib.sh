# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Shared by the integration tests: paths, a scratch folder, pass/fail counting.
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SPECPROBE=$TOP/specprobe
LOOKALIKE=$TOP/.output/lookalike
SCRATCH=$(mktemp -d /tmp/specprobe-test.XXXXXX)
PASSED=0
FAILED=0
trap 'rm -rf "$SCRATCH"' EXIT

pass() { PASSED=$((PASSED + 1)); echo "  ok    $1"; }
fail() { FAILED=$((FAILED + 1)); echo "  FAIL  $1"; }

# Wait until a file exists (up to $2 tenths of a second).
wait_file() {
	local i
	for ((i = 0; i < ${2:-300}; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# Wait until a program has written its "ready" line to $1.
wait_ready() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

finish() {
	echo "$(basename "$0" .sh): $PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
}
