#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Files are never lost or corrupted, and root's files are safe: outputs never alias an input,
# a failed merge or export leaves the old output whole, --force replaces by rename (a file
# planted by another user stays theirs, untouched), FIFOs never hang, demo writes through no
# link planted in its folder.
source "$(dirname "$0")/lib.sh"
T="timeout -s KILL 60"	# a hang is a failure (exit 137), never a stuck test

# expect_refused NAME PATTERN CMD...: exit 1 with one error line matching PATTERN, before the
# timeout (merge's lines on its inputs come first: they are information, not the error)
expect_refused() {
	local name=$1 pattern=$2 out status
	shift 2
	$T "$@" >/dev/null 2>"$SCRATCH/refused.err"
	status=$?
	out=$(grep -v '^specprobe: \(input [0-9]*:\|sources aligned\|no libcuda\)' \
		"$SCRATCH/refused.err")
	if [ $status -eq 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
		printf '%s' "$out" | grep -q -- "$pattern"; then
		pass "$name: one line: $out"
	else
		fail "$name: status $status: '$out'"
	fi
}

# the names in a folder with their sizes and inodes: any change, a temp file left, shows
listing() {
	(cd "$1" && ls -Ai --full-time | sort)
}

sums() {
	sha256sum "$@" | cut -d' ' -f1 | tr '\n' ' '
}

# two ranks recorded apart, the whole run as a ring, and a recording --force'd over a file
# that nobody planted in nobody's folder
setup() {
	local dir="$SCRATCH/rec" a b r p
	own="$SCRATCH/nobody"
	mkdir -p "$own"
	echo "nobody's own" >"$own/rec.sprb"
	ln "$own/rec.sprb" "$own/kept"	# the planted inode stays findable after the rename
	chown -R nobody:nogroup "$own"
	chmod 0755 "$own"
	planted_ino=$(stat -c %i "$own/kept")
	start_server "$dir" --wait-at init -r 2 -n 300 || { fail "setup: no server"; return 1; }
	local pids=($(cat "$dir/ready"))
	"$SPECPROBE" record -o "$dir/a.sprb" -p "${pids[1]}" 2>"$dir/a.err" &
	a=$!
	"$SPECPROBE" record -o "$dir/b.sprb" -p "${pids[2]}" 2>"$dir/b.err" &
	b=$!
	"$SPECPROBE" record -o "$dir/ring.sprb" --max-size 256K -p "${pids[0]}" 2>"$dir/r.err" &
	r=$!
	"$SPECPROBE" record -o "$own/rec.sprb" --force -p "${pids[1]}" 2>"$dir/p.err" &
	p=$!
	wait_file "$dir/a.sprb" 300 && wait_file "$dir/b.sprb" 300 &&
		wait_file "$dir/ring.sprb.0" 300
	for ((i = 0; i < 300; i++)); do
		[ "$(stat -c %i "$own/rec.sprb")" != "$planted_ino" ] && break
		sleep 0.1
	done
	sleep 0.5
	touch "$dir/go"
	wait $server_pid
	wait $a && wait $b && wait $r && wait $p ||
		{ fail "setup: a recording failed: $(cat "$dir"/*.err | grep error)"; return 1; }
	rec=$dir
}

# --force over another user's file in their folder: a new file of root's, 0600; theirs untouched
force_planted() {
	local st kept
	st=$(stat -c '%i %U %a' "$own/rec.sprb")
	kept=$(stat -c '%i %U' "$own/kept")
	if [ "$(cat "$own/kept")" = "nobody's own" ] && [ "$kept" = "$planted_ino nobody" ] &&
		[ "${st%% *}" != "$planted_ino" ] && [ "${st#* }" = "root 600" ] &&
		"$SPECPROBE" dump --counts "$own/rec.sprb" >/dev/null 2>&1; then
		pass "--force over nobody's file: theirs untouched (inode $planted_ino)," \
			"the recording root's 0600, inode ${st%% *}"
	else
		fail "--force over nobody's file: now '$st', kept '$(cat "$own/kept")' $kept"
	fi
	if [ "$(ls -A "$own" | wc -l)" -eq 2 ]; then
		pass "--force over nobody's file: no temporary file left"
	else
		fail "--force over nobody's file: left $(ls -A "$own" | tr '\n' ' ')"
	fi
}

# merge and export onto an input, by its path, a hard link, a ring segment: refused, untouched
aliases() {
	local before seg=$(cd "$rec" && ls ring.sprb.[0-9]* | head -1) listed
	ln "$rec/a.sprb" "$rec/hard.sprb"
	before=$(sums "$rec"/a.sprb "$rec"/b.sprb "$rec"/ring.sprb.*)
	listed=$(listing "$rec")
	expect_refused "merge onto an input by path" "is the input" \
		sh -c "cd '$rec' && '$SPECPROBE' merge a.sprb b.sprb -o ./a.sprb --force"
	expect_refused "merge onto an input by hard link" "is the input" \
		"$SPECPROBE" merge "$rec/a.sprb" "$rec/b.sprb" -o "$rec/hard.sprb" --force
	expect_refused "merge onto a ring segment" "is the input" \
		"$SPECPROBE" merge "$rec/ring.sprb" "$rec/b.sprb" -o "$rec/$seg" --force
	expect_refused "export onto its recording by hard link" "is the recording itself" \
		"$SPECPROBE" export "$rec/a.sprb" -o "$rec/hard.sprb" --force
	expect_refused "export onto a ring segment" "is the recording itself" \
		"$SPECPROBE" export "$rec/ring.sprb" -o "$rec/$seg" --force
	expect_refused "record --perfetto onto a ring segment" "is the recording itself" \
		"$SPECPROBE" record -o "$rec/ring.sprb" --max-size 256K --perfetto "$rec/$seg" \
		--force -p $$
	if [ "$(sums "$rec"/a.sprb "$rec"/b.sprb "$rec"/ring.sprb.*)" = "$before" ] &&
		[ "$(listing "$rec")" = "$listed" ]; then
		pass "aliases refused: every input byte-identical (sha256), no file added or removed"
	else
		fail "aliases: the inputs or the folder changed"
	fi
	rm -f "$rec/hard.sprb"
}

# a merge or export that fails midway: the old output whole, no temporary file left
failed_midway() {
	local dir="$SCRATCH/midway" body old listed
	mkdir -p "$dir/fs"
	cp "$rec/a.sprb" "$rec/b.sprb" "$dir/"
	"$SPECPROBE" merge "$dir/a.sprb" "$dir/b.sprb" -o "$dir/m.sprb" 2>/dev/null
	"$SPECPROBE" export "$dir/a.sprb" -o "$dir/t.pftrace" 2>/dev/null
	body=$(od -An -tu4 -j12 -N4 "$dir/b.sprb" | tr -d ' ')
	cp "$dir/b.sprb" "$dir/bad.sprb"
	# the first record's size made impossible: the merge fails after its header is written
	printf '\xff\xff\xff\xff' | dd of="$dir/bad.sprb" bs=1 seek=$((16 + body)) \
		conv=notrunc 2>/dev/null
	old=$(sums "$dir/m.sprb" "$dir/t.pftrace")
	listed=$(listing "$dir")
	expect_refused "merge with a corrupt second input over an old output" "corrupt record" \
		"$SPECPROBE" merge "$dir/a.sprb" "$dir/bad.sprb" -o "$dir/m.sprb" --force
	expect_refused "export of a corrupt recording over an old trace" "corrupt record" \
		"$SPECPROBE" export "$dir/bad.sprb" -o "$dir/t.pftrace" --force
	if [ -s "$dir/m.sprb" ] && [ "$(sums "$dir/m.sprb" "$dir/t.pftrace")" = "$old" ] &&
		[ "$(listing "$dir")" = "$listed" ]; then
		pass "failed merge and export: the old outputs whole (sha256), no temporary file left"
	else
		fail "failed merge and export: the old outputs changed or a file was left"
	fi
	if ! mount -t tmpfs -o size=64k tmpfs "$dir/fs" 2>/dev/null; then
		echo "  skip  full disk: cannot mount a small tmpfs here"
		return
	fi
	echo "the old merge" >"$dir/fs/m.sprb"
	echo "the old trace" >"$dir/fs/t.pftrace"
	expect_refused "merge onto a full disk" "No space left on device" \
		"$SPECPROBE" merge "$dir/a.sprb" "$dir/b.sprb" -o "$dir/fs/m.sprb" --force
	expect_refused "export onto a full disk" "No space left on device" \
		"$SPECPROBE" export "$dir/a.sprb" -o "$dir/fs/t.pftrace" --force
	if [ "$(cat "$dir/fs/m.sprb")" = "the old merge" ] &&
		[ "$(cat "$dir/fs/t.pftrace")" = "the old trace" ] &&
		[ "$(ls -A "$dir/fs" | wc -l)" = 2 ]; then
		pass "full disk: the old merge and trace whole, no temporary file left"
	else
		fail "full disk: left $(ls -A "$dir/fs" | tr '\n' ' ')"
	fi
	umount "$dir/fs"
}

# a FIFO where a file is named: one line at once, never a hang
fifos() {
	local dir="$SCRATCH/fifo" force
	mkdir -p "$dir"
	mkfifo "$dir/out" "$dir/lib.so" "$dir/cmd" "$dir/ring.sprb.1"
	chmod +x "$dir/cmd"
	for force in "" --force; do
		expect_refused "record -o FIFO ${force:-without --force}" "not a regular file" \
			"$SPECPROBE" record -o "$dir/out" $force -p $$
		expect_refused "export -o FIFO ${force:-without --force}" "not a regular file" \
			"$SPECPROBE" export "$rec/a.sprb" -o "$dir/out" $force
		expect_refused "merge -o FIFO ${force:-without --force}" "not a regular file" \
			"$SPECPROBE" merge "$rec/a.sprb" -o "$dir/out" $force
		expect_refused "record --perfetto FIFO ${force:-without --force}" "not a regular file" \
			"$SPECPROBE" record -o "$dir/x.sprb" --perfetto "$dir/out" $force -p $$
	done
	expect_refused "record --max-size --force over a FIFO segment" "not a regular file" \
		"$SPECPROBE" record -o "$dir/ring.sprb" --max-size 256K --force -p $$
	expect_refused "--lib FIFO" "not a regular file" \
		"$SPECPROBE" record -o "$dir/y.sprb" --lib "$dir/lib.so" -p $$
	expect_refused "-- CMD a FIFO" "not a regular file" \
		"$SPECPROBE" record -o "$dir/z.sprb" -- "$dir/cmd"
	if [ -p "$dir/out" ] && [ -p "$dir/ring.sprb.1" ] && [ "$(ls -A "$dir" | wc -l)" = 4 ]; then
		pass "FIFOs: left as they were, no output made"
	else
		fail "FIFOs: $(ls -A "$dir" | tr '\n' ' ')"
	fi
}

# demo --keep into nobody's folder with links to a root-only file: refused; the file unchanged
demo_links() {
	local dir="$SCRATCH/demo-theirs" secret="$SCRATCH/secret" sim="$SCRATCH/sim" name
	echo "root only" >"$secret"
	chmod 0600 "$secret"
	mkdir -p "$dir"
	for name in server.log record.log truth.rank0 demo.sprb ready.tmp go; do
		ln -s "$secret" "$dir/$name"
	done
	chown -h -R nobody:nogroup "$dir"
	chmod 0755 "$dir"
	expect_refused "demo --keep a folder of nobody's" "not a folder of this user's alone" \
		"$SPECPROBE" demo --keep "$dir" --cycles 5
	chown root:root "$dir"
	chmod 0777 "$dir"
	expect_refused "demo --keep a folder others can write" "not a folder of this user's alone" \
		"$SPECPROBE" demo --keep "$dir" --cycles 5
	# the simulator alone: its truth and ready files through links are refused too
	mkdir -p "$sim"
	ln -s "$secret" "$sim/gt.rank0"
	ln -s "$secret" "$sim/ready.tmp"
	$T "$SERVER" -q --cycles 3 --ground-truth "$sim/gt" >"$sim/out" 2>&1
	$T "$SERVER" -q --cycles 3 --ready-file "$sim/ready" >>"$sim/out" 2>&1
	if [ "$(cat "$secret")" = "root only" ] && [ "$(stat -c %a "$secret")" = 600 ] &&
		[ "$(grep -c 'symbolic link: not followed' "$sim/out")" = 2 ]; then
		pass "links planted for demo and specsim: the root-only file unchanged, each refused"
	else
		fail "links: secret now '$(cat "$secret")', specsim said: $(cat "$sim/out")"
	fi
	$T "$SPECPROBE" demo --keep "$SCRATCH/demo-new" --cycles 5 >"$SCRATCH/demo.out" 2>&1
	if [ $? -eq 0 ] && [ "$(stat -c %a "$SCRATCH/demo-new")" = 700 ]; then
		pass "demo --keep a new folder: made 0700, the demo runs"
	else
		fail "demo --keep a new folder: $(tail -1 "$SCRATCH/demo.out")"
	fi
}

if [ "$(id -u)" != 0 ]; then
	echo "test_files: needs root (BPF, chown, mount)"
	finish
	exit
fi
if setup; then
	force_planted
	aliases
	failed_midway
	fifos
fi
demo_links
finish
