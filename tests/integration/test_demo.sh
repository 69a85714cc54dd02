#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# specprobe demo: traces the simulated server and reports exact counts.
source "$(dirname "$0")/lib.sh"

dir="$SCRATCH/demo"
if ! "$SPECPROBE" demo --keep "$dir" --cycles 50 >"$SCRATCH/demo.out" 2>&1; then
	fail "demo exited non-zero: $(tail -1 "$SCRATCH/demo.out")"
else
	# per-step drafts, k = 3: three draft graphs, verify and draft-extend per cycle
	if grep -qE '^ +250  cuGraphLaunch$' "$SCRATCH/demo.out" &&
		grep -qE '^ +50  cuMemcpyDtoHAsync$' "$SCRATCH/demo.out" &&
		grep -q ' 0 dropped records' "$SCRATCH/demo.out"; then
		pass "demo: 250 graph launches and 50 accept copies for 50 cycles, no drops"
	else
		fail "demo counts: $(grep -E 'cuGraphLaunch|cuMemcpyDtoHAsync|dropped' "$SCRATCH/demo.out" | tr '\n' ' ')"
	fi
	if grep -q 'one decode cycle' "$SCRATCH/demo.out" && [ -s "$dir/demo.sprb" ] &&
		"$SPECPROBE" dump --counts "$dir/demo.sprb" >/dev/null 2>&1; then
		pass "demo: shows a cycle and leaves a readable recording in $dir"
	else
		fail "demo: no cycle shown or no recording"
	fi
fi
SPECPROBE_SPECSIM=/nonexistent "$SPECPROBE" demo >/dev/null 2>"$SCRATCH/err.txt"
if [ $? -ne 0 ] && grep -q "no specsim-server found" "$SCRATCH/err.txt"; then
	pass "demo without its simulator: $(cat "$SCRATCH/err.txt")"
else
	fail "demo without its simulator: $(cat "$SCRATCH/err.txt")"
fi

# make install: the installed binary finds the simulator in ../lib/specprobe
dest=$SCRATCH/install
if make -s -C "$TOP" install DESTDIR="$dest" PREFIX=/usr >"$SCRATCH/install.log" 2>&1 &&
	"$dest/usr/bin/specprobe" demo --cycles 20 --output "$SCRATCH/installed" \
		>"$SCRATCH/installed.out" 2>&1 &&
	grep -q "over 20 cycles of 1 loop" "$SCRATCH/installed.out" &&
	[ -s "$dest/usr/share/man/man1/specprobe.1" ]; then
	pass "make install: the installed demo reports 20 of 20 cycles; man page installed"
else
	fail "make install: $(tail -2 "$SCRATCH/install.log" "$SCRATCH/installed.out" | tr '\n' ' ')"
fi
finish
