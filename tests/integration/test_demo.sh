#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# specprobe demo: traces the simulated server and reports exact counts.
source "$(dirname "$0")/lib.sh"

dir="$SCRATCH/demo"
if ! "$SPECPROBE" demo --keep "$dir" --cycles 50 --verbose >"$SCRATCH/demo.out" 2>&1; then
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
# the first lines answer: what the server planted (its truth) and what was flagged of it.
# A planted sync that came back at once (the draft already done: a loaded machine) waited for
# nothing and is rightly not flagged; each one that blocked 100 us or more must be.
dir="$SCRATCH/demo-first"
"$SPECPROBE" demo --keep "$dir" --cycles 60 --ranks 2 >"$SCRATCH/first.out" 2>&1
if python3 - "$SCRATCH/first.out" "$dir"/truth.rank* >"$SCRATCH/first.check" <<'PY'
import json, re, sys
out = open(sys.argv[1]).read()
head = out.split("\nspecprobe report ")[0]
planted = [json.loads(l) for f in sys.argv[2:] for l in open(f) if '"planted-sync"' in l]
waited = sum(1 for c in planted if c["after"] - c["before"] >= 100000)
said = re.search(r"^ +(\d+) in 60 cycles of 2 rank", head, re.M)
found = re.search(r"^Found: +(\d+) of them flagged between draft and verify, [\d.]+ ms blocked "
                  r"a cycle\n +called at [a-z_]+", head, re.M)
ok = (said and int(said.group(1)) == len(planted) > 0 and found and
      waited <= int(found.group(1)) <= len(planted) and "no other sync flagged" in head and
      "one decode cycle" not in out)
print(f"{len(planted)} planted (truth), {waited} of them blocked, "
      f"{found.group(1) if found else '?'} found, at a named site" if ok else head[-600:])
sys.exit(0 if ok else 1)
PY
then
	pass "demo: its first lines say $(cat "$SCRATCH/first.check")"
else
	fail "demo's first lines: $(tr '\n' '|' <"$SCRATCH/first.check")"
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
	"$dest/usr/bin/specprobe" demo --cycles 20 >"$SCRATCH/installed.out" 2>&1 &&
	grep -q "over 20 cycles of 1 loop" "$SCRATCH/installed.out" &&
	[ -s "$dest/usr/share/man/man1/specprobe.1" ]; then
	pass "make install: the installed demo reports 20 of 20 cycles; man page installed"
else
	fail "make install: $(tail -2 "$SCRATCH/install.log" "$SCRATCH/installed.out" | tr '\n' ' ')"
fi
# without --keep, the demo's /tmp folder (named in its record line) is gone at the end
tmpdir=$(sed -n 's|^specprobe record -o \(/tmp/specprobe-demo\.[^/]*\)/demo\.sprb .*|\1|p' \
	"$SCRATCH/installed.out")
if [ -n "$tmpdir" ] && [ ! -e "$tmpdir" ] &&
	grep -q '^the recording and ground truth are removed: --keep DIR keeps them$' \
		"$SCRATCH/installed.out"; then
	pass "demo without --keep: $tmpdir removed, and said"
else
	fail "demo without --keep: folder '${tmpdir:-none named}' left, or not said"
	[ -n "$tmpdir" ] && rm -rf "$tmpdir"
fi
finish
