#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# No path specprobe writes or reads as a recording goes through a link another user planted
# (docs/RELIABILITY.md): a link in a folder of nobody's, in any component of -o (record,
# --max-size, --perfetto, export, merge), of a recording read, of demo --keep, is refused in one
# line naming it, with openat2 and with the component walk that stands in for it; a link
# swapped in while specprobe runs (demo --keep renamed, a --max-size folder swapped back and
# forth, the --gpu folder in /dev/shm renamed) redirects nothing; a segment that is a link, a
# FIFO or a foreign file is named; marks of SIGKILLed tracers are removed by the next run.
source "$(dirname "$0")/lib.sh"
T="timeout -s KILL 120"
AS_NOBODY="setpriv --reuid nobody --regid nogroup --clear-groups"

if [ "$(id -u)" != 0 ]; then
	echo "test_paths: needs root (BPF, chown, setpriv)"
	finish
	exit
fi
chmod 0711 "$SCRATCH"	# nobody reaches its own folders in here, nothing else

# expect_refused NAME PATTERN CMD...: a non-zero exit, one error line matching PATTERN
expect_refused() {
	local name=$1 pattern=$2 out status
	shift 2
	$T "$@" >/dev/null 2>"$SCRATCH/refused.err"
	status=$?
	out=$(grep -v '^specprobe: \(input [0-9]*:\|sources aligned\)' "$SCRATCH/refused.err")
	if [ $status -ne 0 ] && [ $status -ne 137 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
		printf '%s' "$out" | grep -q -- "$pattern"; then
		pass "$name: $out"
	else
		fail "$name: status $status: '$out'"
	fi
}

# the root-only folder a planted link points at: its names, inodes, sizes and contents
root_dir="$SCRATCH/rootonly"
snapshot() {
	(cd "$root_dir" && ls -Ai --full-time | sort && sha256sum -- * 2>/dev/null)
}
root_unchanged() {
	if [ "$(snapshot)" = "$before_root" ]; then
		pass "$1: nothing written, replaced or removed in the root-only folder"
	else
		fail "$1: the root-only folder changed: $(ls -A "$root_dir" | tr '\n' ' ')"
	fi
}

setup() {
	mkdir -p "$root_dir" "$SCRATCH/ud"
	chmod 0700 "$root_dir"
	echo "root's own" >"$root_dir/app.conf"
	# a ring segment, an agent and a lock: names the writers and the --gpu folder use
	echo "root's ring" >"$root_dir/ring.1"
	echo "root's agent" >"$root_dir/libspecprobe-gpu.so"
	echo "root's lock" >"$root_dir/lock"
	chown nobody:nogroup "$SCRATCH/ud"
	# nobody's link, and one root made in nobody's folder: either one nobody can change
	$AS_NOBODY ln -s "$root_dir" "$SCRATCH/ud/sub"
	ln -s "$root_dir" "$SCRATCH/ud/rsub"
	if ! $T "$SPECPROBE" record -o "$SCRATCH/base.sprb" -- "$SERVER" -q --cycles 20 \
		>/dev/null 2>"$SCRATCH/base.err"; then
		fail "setup: no recording: $(grep error "$SCRATCH/base.err")"
		return 1
	fi
	cp "$SCRATCH/base.sprb" "$root_dir/base.sprb"
	before_root=$(snapshot)
}

# every writer and reader, through nobody's link and root's link in nobody's folder
planted() {
	local mode=$1 ud="$SCRATCH/ud" link
	for link in sub rsub; do
		expect_refused "$mode: record -o $link/app.conf --force" \
			"ud/$link: a symbolic link in the path, .*refusing to follow it" \
			"$SPECPROBE" record -o "$ud/$link/app.conf" --force -- "$SERVER" -q --cycles 3
		expect_refused "$mode: record --max-size -o $link/ring" "ud/$link: a symbolic link" \
			"$SPECPROBE" record --max-size 256K -o "$ud/$link/ring" --force -p $idle
		expect_refused "$mode: record --perfetto $link/x.pftrace" "ud/$link: a symbolic link" \
			"$SPECPROBE" record -o "$SCRATCH/p.sprb" --perfetto "$ud/$link/x.pftrace" \
			-p $idle
		expect_refused "$mode: export -o $link/x.pftrace" "ud/$link: a symbolic link" \
			"$SPECPROBE" export "$SCRATCH/base.sprb" -o "$ud/$link/x.pftrace"
		expect_refused "$mode: merge -o $link/m.sprb" "ud/$link: a symbolic link" \
			"$SPECPROBE" merge "$SCRATCH/base.sprb" -o "$ud/$link/m.sprb"
		expect_refused "$mode: demo --keep $link/keep" "ud/$link: a symbolic link" \
			"$SPECPROBE" demo --keep "$ud/$link/keep" --cycles 3
		expect_refused "$mode: report $link/base.sprb" "ud/$link: a symbolic link" \
			"$SPECPROBE" report "$ud/$link/base.sprb"
	done
	root_unchanged "$mode: links planted in nobody's folder"
	# a link of root's in a folder only root can write is root's own word: followed
	ln -s "$root_dir" "$SCRATCH/mine"
	if "$SPECPROBE" report "$SCRATCH/mine/base.sprb" >/dev/null 2>&1 &&
		"$SPECPROBE" export "$SCRATCH/base.sprb" -o "$SCRATCH/mine/ok.pftrace" 2>/dev/null &&
		[ -s "$root_dir/ok.pftrace" ]; then
		pass "$mode: root's link in root's folder is followed (report, export)"
	else
		fail "$mode: root's own link was refused"
	fi
	rm -f "$SCRATCH/mine" "$root_dir/ok.pftrace"
}

# demo --keep: nobody renames the folder and plants a link at its name while the demo runs
demo_swapped() {
	local nob="$SCRATCH/nob" demo status rec
	mkdir -p "$nob"
	chown nobody:nogroup "$nob"
	"$SPECPROBE" demo --keep "$nob/keep" --cycles 400 >"$SCRATCH/demo.out" 2>&1 &
	demo=$!
	# the swap once the recorder runs: the server's truth and the recording are still to come
	for ((i = 0; i < 1200; i++)); do
		rec=$(pgrep -P $demo -f ' record -o demo.sprb')
		[ -n "$rec" ] && break
		sleep 0.1
	done
	$AS_NOBODY sh -c "mv '$nob/keep' '$nob/keep.old' && ln -s '$root_dir' '$nob/keep'"
	status=$?
	wait $demo
	if [ $? -eq 0 ] && [ -n "$rec" ] && [ $status -eq 0 ] && [ -L "$nob/keep" ] &&
		"$SPECPROBE" dump --counts "$nob/keep.old/demo.sprb" >/dev/null 2>&1 &&
		[ -s "$nob/keep.old/truth.rank0" ] && [ -s "$nob/keep.old/record.log" ] &&
		[ -s "$nob/keep.old/server.log" ] &&
		grep -q "keep was moved or replaced" "$SCRATCH/demo.out"; then
		pass "demo --keep renamed mid-run, a link planted at its name: every file in the" \
			"folder it made (demo.sprb reads, truth.rank0, both logs), exit 0, said"
	else
		fail "demo --keep swapped: recorder ${rec:-never seen}, swap $status," \
			"$(ls -A "$nob/keep.old" 2>/dev/null | tr '\n' ' ') $(tail -1 "$SCRATCH/demo.out")"
	fi
	root_unchanged "demo --keep swapped"
}

# --max-size: nobody swaps a folder of the path with a link, back and forth, while it rotates
ring_swapped() {
	local nob="$SCRATCH/nob2" dir rec swaps segs
	mkdir -p "$nob/r"
	chown nobody:nogroup "$nob"
	dir="$SCRATCH/ring-run"
	start_server "$dir" --cycles 1500 || { fail "ring swap: no server"; return; }
	"$SPECPROBE" record -o "$nob/r/ring.sprb" --max-size 256K -p "$target" \
		2>"$dir/rec.err" &
	rec=$!
	wait_file "$nob/r/ring.sprb.0"
	# swaps until the recorder is done (it exits with the server)
	$AS_NOBODY sh -c "n=0; while kill -0 $rec 2>/dev/null || [ -d /proc/$rec ]; do
		mv '$nob/r' '$nob/r.x' && ln -s '$root_dir' '$nob/r' && n=\$((n + 1))
		sleep 0.02; rm -f '$nob/r'; mv '$nob/r.x' '$nob/r'; sleep 0.02; done
		echo \$n >'$nob/swaps'" 2>/dev/null &
	swapper=$!
	touch "$dir/go"
	wait $server_pid
	wait $rec
	status=$?
	wait $swapper
	swaps=$(cat "$nob/swaps" 2>/dev/null)
	segs=$(ls "$nob/r" | grep -c '^ring.sprb.[0-9]*$')
	if [ $status -eq 0 ] && [ "${swaps:-0}" -gt 0 ] && grep -q 'bounded: [1-9]' "$dir/rec.err" &&
		"$SPECPROBE" report "$nob/r/ring.sprb" >/dev/null 2>&1; then
		pass "--max-size folder swapped $swaps times with a link while it rotated: $segs" \
			"segments in the folder it opened, the set reads ($(grep -o 'bounded: [0-9]*' \
			"$dir/rec.err"))"
	else
		fail "--max-size swapped: status $status, $swaps swaps, $segs segments," \
			"$(grep -E 'error|bounded' "$dir/rec.err" | head -2)"
	fi
	root_unchanged "--max-size swapped"
}

# --gpu -u nobody: the agent's folder is nobody's; nobody renames it and plants a link
gpu_swapped() {
	local dir="$SCRATCH/gpu" folder moved rec
	if [ ! -e "$TOP/.output/specsim/libcupti.so" ]; then
		echo "  skip  --gpu folder: specsim has no look-alike libcupti"
		return
	fi
	mkdir -p "$dir"
	chmod 0777 "$dir"
	ls -d /dev/shm/specprobe-gpu.* >"$dir/before" 2>/dev/null
	"$SPECPROBE" record --gpu -u nobody -o "$dir/rec.sprb" -- "$SERVER" -q --cycles 600 \
		--ground-truth "$dir/gt" >/dev/null 2>"$dir/rec.err" &
	rec=$!
	for ((i = 0; i < 1200; i++)); do
		folder=$(ls -d /dev/shm/specprobe-gpu.* 2>/dev/null | grep -vxF -f "$dir/before" |
			while read -r f; do [ "$(stat -c %U "$f")" = nobody ] && echo "$f"; done |
			head -1)
		[ -n "$folder" ] && break
		sleep 0.1
	done
	moved=/dev/shm/test-paths-moved.$$
	$AS_NOBODY sh -c "mv '$folder' '$moved' && ln -s '$root_dir' '$folder'"
	status=$?
	wait $rec
	if [ $? -eq 0 ] && [ -n "$folder" ] && [ $status -eq 0 ] && [ -L "$folder" ] &&
		[ -z "$(ls -A "$moved" 2>/dev/null)" ]; then
		pass "--gpu folder renamed by nobody mid-run, a link planted at its name: the" \
			"recording completes, the folder it made is emptied where it went"
	else
		fail "--gpu swapped: folder '${folder:-none}', swap $status, left" \
			"'$(ls -A "$moved" 2>/dev/null | tr '\n' ' ')': $(grep error "$dir/rec.err")"
	fi
	rm -f "$folder"
	rmdir "$moved" 2>/dev/null
	root_unchanged "--gpu folder swapped"
}

# a link, a FIFO, a foreign file, another set's segment: each named with the set
segments() {
	local dir="$SCRATCH/segs" seg name
	mkdir -p "$dir/other"
	$T "$SPECPROBE" record -o "$dir/ring.sprb" --max-size 256K -- "$SERVER" -q --cycles 300 \
		>/dev/null 2>&1
	$T "$SPECPROBE" record -o "$dir/other/ring.sprb" --max-size 256K -- "$SERVER" -q \
		--cycles 300 >/dev/null 2>&1
	seg=$(ls "$dir" | grep '^ring.sprb.[0-9]*$' | sort -t. -k3 -n | tail -1)
	mv "$dir/$seg" "$dir/kept"
	for name in "symbolic link" FIFO foreign other; do
		rm -f "$dir/$seg"
		case $name in
		"symbolic link") ln -s "$root_dir/base.sprb" "$dir/$seg" ;;
		FIFO) mkfifo "$dir/$seg" ;;
		foreign) echo "not a recording" >"$dir/$seg" ;;
		other) cp "$dir/other/$seg" "$dir/$seg" 2>/dev/null ||
			cp "$(ls "$dir"/other/ring.sprb.* | tail -1)" "$dir/$seg" ;;
		esac
		case $name in
		foreign) pattern="$seg is not a specprobe recording (among the segments of" ;;
		other) pattern="$seg does not continue .*another recording's segment" ;;
		*) pattern="$seg is a $name, not a regular file: refusing to read it (among the" ;;
		esac
		expect_refused "segment $seg a $name: report" "$pattern" \
			"$SPECPROBE" report "$dir/ring.sprb"
		expect_refused "segment $seg a $name: export" "$pattern" \
			"$SPECPROBE" export "$dir/ring.sprb" -o "$dir/x.pftrace"
	done
	rm -f "$dir/$seg"
	mv "$dir/kept" "$dir/$seg"
}

# a tracer killed leaves its mark; the next tracer to run removes it, and no live one's
marks() {
	local dir="$SCRATCH/marks" t1 s1 t2 s2 rec live left
	start_server "$dir/a" --cycles 1000000 || { fail "marks: no server"; return; }
	t1=$target s1=$server_pid
	start_server "$dir/b" --cycles 1000000 || { fail "marks: no server"; return; }
	t2=$target s2=$server_pid
	"$SPECPROBE" record -o "$dir/a.sprb" -p "$t1" 2>/dev/null &
	rec=$!
	wait_file "$dir/a.sprb" && wait_file "/run/specprobe/pid.$t1" 100
	kill -KILL $rec
	wait $rec 2>/dev/null
	[ -e "/run/specprobe/pid.$t1" ] && left=yes || left=no
	# the next run: a tracer of another process, left running
	"$SPECPROBE" record -o "$dir/b.sprb" -p "$t2" 2>/dev/null &
	live=$!
	wait_file "$dir/b.sprb"
	if [ $left = yes ] && [ ! -e "/run/specprobe/pid.$t1" ] &&
		[ -e "/run/specprobe/pid.$t2" ]; then
		pass "a SIGKILLed tracer's mark pid.$t1 is removed by the next run (of pid $t2)"
	else
		fail "marks: the killed one's left: $left, now: $(ls /run/specprobe | tr '\n' ' ')"
	fi
	# a run after it leaves the live tracer's mark, and takes its own away
	$T "$SPECPROBE" record -o "$dir/c.sprb" -p "$t1" --duration 1 >/dev/null 2>&1
	ls /run/specprobe >"$dir/listed"
	kill -INT $live
	wait $live
	kill $s1 $s2
	wait $s1 $s2 2>/dev/null
	if [ ! -e "/run/specprobe/pid.$t2" ] && grep -qx "pid.$t2" "$dir/listed" &&
		! grep -qx "pid.$t1" "$dir/listed"; then
		pass "a live tracer's mark pid.$t2 kept by a run beside it, gone as it stopped;" \
			"that run's own pid.$t1 gone with it"
	else
		fail "marks: after the run beside it: $(tr '\n' ' ' <"$dir/listed"), now:" \
			"$(ls /run/specprobe | tr '\n' ' ')"
	fi
}

# a process to name with -p where nothing should be traced at all
sleep 600 &
idle=$!
if setup; then
	planted openat2
	export SPECPROBE_NO_OPENAT2=1
	planted "component walk"
	unset SPECPROBE_NO_OPENAT2
	demo_swapped
	ring_swapped
	gpu_swapped
	segments
fi
marks
kill $idle
finish
