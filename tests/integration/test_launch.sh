#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Launch mode and late libraries: -- CMD, dlopen from a path known only at run time,
# a launcher whose workers load CUDA later, a worker in its own mount and pid
# namespaces, -u USER. Every call must be captured: counts equal the truth exactly.
source "$(dirname "$0")/lib.sh"
CHECK=$TOP/tests/integration/check_launch.py
LOADER=$LOOKALIKE/loader

# The library lives where no loader path leads: only the command line names it.
chmod 755 "$SCRATCH"	# -u nobody reads the library and writes its truth
RUNTIME_DIR=$SCRATCH/runtime
mkdir -p "$RUNTIME_DIR"
cp "$LOOKALIKE/libcuda.so.1" "$RUNTIME_DIR/"
RUNTIME_LIB=$RUNTIME_DIR/libcuda.so.1

# check NAME DIR [--ns]: DIR/rec.sprb against DIR/truth.jsonl, zero drops
check() {
	local name=$1 dir=$2
	shift 2
	if ! "$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/dump.jsonl" 2>"$dir/dump.err"; then
		fail "$name: dump: $(cat "$dir/dump.err")"
	elif ! grep -q " 0 dropped" "$dir/rec.err"; then
		fail "$name: $(tail -1 "$dir/rec.err")"
	elif python3 "$CHECK" "$dir/truth.jsonl" "$dir/dump.jsonl" "$@" >"$dir/check.out"; then
		pass "$name: $(tail -1 "$dir/check.out")"
	else
		fail "$name: $(head -3 "$dir/check.out" | tr '\n' ' ') $(tr '\n' ' ' <"$dir/rec.err")"
	fi
}

# -- CMD: the program dlopens the library and calls it at once.
dir=$SCRATCH/dlopen-cmd
mkdir -p "$dir"
"$SPECPROBE" record -o "$dir/rec.sprb" -- "$LOADER" dlopen "$RUNTIME_LIB" 500 "$dir/truth.jsonl" \
	2>"$dir/rec.err"
check "dlopen under -- CMD" "$dir"

# -p on a shell that later execs the program: exec and dlopen are both caught.
dir=$SCRATCH/dlopen-pid
mkdir -p "$dir"
sh -c "while [ ! -e '$dir/go' ]; do sleep 0.05; done; exec '$LOADER' dlopen '$RUNTIME_LIB' 500 '$dir/truth.jsonl'" &
target=$!
"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" 2>"$dir/rec.err" &
rec=$!
wait_file "$dir/rec.sprb" && sleep 0.3
touch "$dir/go"
wait "$target"
wait "$rec"
check "-p, exec then dlopen" "$dir"

# A launcher mapping no libcuda forks 4 workers that load it once the tracer waits for it.
dir=$SCRATCH/launcher-pid
mkdir -p "$dir"
LOADER_GO=$dir/go "$LOADER" launch 4 100 "$RUNTIME_LIB" 300 "$dir/truth.jsonl" &
target=$!
"$SPECPROBE" record -o "$dir/rec.sprb" -p "$target" 2>"$dir/rec.err" &
rec=$!
for _ in $(seq 600); do
	grep -q "waiting for one to be loaded" "$dir/rec.err" && break
	kill -0 $rec 2>/dev/null || break
	sleep 0.05
done
touch "$dir/go"
wait "$target"
wait "$rec"
if grep -q "waiting for one to be loaded" "$dir/rec.err"; then
	check "-p on a launcher, 4 workers load CUDA later" "$dir"
else
	fail "-p on a launcher: no 'waiting' line: $(head -2 "$dir/rec.err" | tr '\n' ' ')"
fi

dir=$SCRATCH/launcher-cmd
mkdir -p "$dir"
"$SPECPROBE" record -o "$dir/rec.sprb" -- "$LOADER" launch 4 200 "$RUNTIME_LIB" 300 \
	"$dir/truth.jsonl" 2>"$dir/rec.err"
check "-- CMD launcher, 4 workers" "$dir"

# One dlopen that brings 70 other new objects and libcuda: the loader hook looks at the
# names of the newest 64, so libcuda the last is found by name, and libcuda the first
# (beyond those 64) stops the process anyway.
libs=$SCRATCH/many-libs
mkdir -p "$libs"
needed=()
for i in $(seq 70); do
	echo "int dummy$i(void) { return $i; }" | cc -shared -fPIC -x c - -o "$libs/libdummy$i.so"
	needed+=("-ldummy$i")
done
cp "$RUNTIME_LIB" "$libs/"
for where in last first; do
	dir=$SCRATCH/many-$where
	mkdir -p "$dir"
	order=("${needed[@]}" -l:libcuda.so.1)
	[ $where = first ] && order=(-l:libcuda.so.1 "${needed[@]}")
	echo "int bundle(void) { return 0; }" | cc -shared -fPIC -x c - \
		-o "$libs/libbundle-$where.so" -L"$libs" -Wl,--no-as-needed "${order[@]}" \
		-Wl,-rpath,"$libs"
	"$SPECPROBE" record -o "$dir/rec.sprb" -- "$LOADER" dlopen "$libs/libbundle-$where.so" \
		200 "$dir/truth.jsonl" 2>"$dir/rec.err"
	check "one dlopen of 72 objects, libcuda the $where" "$dir"
done

# A worker in its own mount and pid namespaces: its library exists only in there.
dir=$SCRATCH/unshare
mkdir -p "$dir" "$dir/private"
"$SPECPROBE" record -o "$dir/rec.sprb" -- unshare --mount --pid --fork --mount-proc \
	sh -c "mount -t tmpfs none '$dir/private' && cp '$RUNTIME_LIB' '$dir/private/' &&
	       '$LOADER' dlopen '$dir/private/libcuda.so.1' 300 '$dir/truth.jsonl'" 2>"$dir/rec.err"
if [ -e "$dir/private/libcuda.so.1" ]; then
	fail "unshare: the library is visible outside its mount namespace"
else
	check "worker in its own mount+pid namespace (pids translated)" "$dir" --ns
fi

# Libraries the loader finds (RUNPATH $ORIGIN) are in the header: probed before exec.
dir=$SCRATCH/loader-path
mkdir -p "$dir"
touch "$dir/go"
"$SPECPROBE" record -o "$dir/rec.sprb" -- "$LOOKALIKE/caller" 100 1 "$dir/go" "$dir/truth.jsonl" \
	>/dev/null 2>"$dir/rec.err"
header=$("$SPECPROBE" dump -H "$dir/rec.sprb" 2>/dev/null | grep '^# lib ')
"$SPECPROBE" dump --json "$dir/rec.sprb" >"$dir/dump.jsonl" 2>/dev/null
# the caller notes its own calls: the library's nested ones (depth 1) are not in its truth
counts=$(python3 -c '
import collections, json, sys
want = collections.Counter(json.loads(l)["name"] for l in open(sys.argv[1]))
got = collections.Counter(c["name"] for c in map(json.loads, open(sys.argv[2]))
                          if c["depth"] == 0 and c["name"] in want)
print("same" if got == want else f"want {dict(want)} got {dict(got)}", sum(want.values()))
' "$dir/truth.jsonl" "$dir/dump.jsonl")
if echo "$header" | grep -q "lib 0: $LOOKALIKE/libcuda.so.1" && [ "${counts%% *}" = same ]; then
	pass "RUNPATH library probed before exec; all ${counts#* } calls"
else
	fail "RUNPATH: header '$header', $counts; $(tail -1 "$dir/rec.err")"
fi

# -u USER: the command runs as that user and keeps the environment.
dir=$SCRATCH/user
mkdir -p "$dir"
chmod 777 "$dir"
if ! runuser -u nobody -- test -x "$LOADER"; then
	# a checkout under a private directory (mktemp -d makes them 0700)
	echo "  skip  -u nobody: nobody cannot reach $LOADER (a directory above it is private)"
else
	LD_LIBRARY_PATH=/opt/specprobe-test "$SPECPROBE" record -o "$dir/rec.sprb" -u nobody -- \
		sh -c "echo \$(id -u) \$LD_LIBRARY_PATH > '$dir/out'; '$LOADER' dlopen '$RUNTIME_LIB' 50 '$dir/truth.jsonl'" \
		2>"$dir/rec.err"
	if [ "$(cat "$dir/out" 2>/dev/null)" = "$(id -u nobody) /opt/specprobe-test" ]; then
		check "-u nobody, environment kept" "$dir"
	else
		fail "-u nobody: ran as '$(cat "$dir/out" 2>/dev/null)'; $(tail -1 "$dir/rec.err")"
	fi
fi

# A command that cannot start: one line, non-zero exit, nothing left behind.
dir=$SCRATCH/missing
mkdir -p "$dir"
if "$SPECPROBE" record -o "$dir/rec.sprb" -- /nonexistent/prog 2>"$dir/rec.err"; then
	fail "missing command: exit status 0"
elif [ "$(wc -l <"$dir/rec.err")" = 1 ] && grep -q "command not found" "$dir/rec.err"; then
	pass "missing command: $(cat "$dir/rec.err")"
else
	fail "missing command: $(cat "$dir/rec.err" | tr '\n' ' ')"
fi

finish
