#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Compares pylines (specprobe's line table decoder) with this CPython's co_lines().

  PYTHON check_lines.py PYLINES [MAX_FILES]
Compiles the standard library's top-level modules, takes every code object in
them, and checks that the decoder gives each bytecode offset the line co_lines()
gives it (None as -1). Prints a summary; exits 1 on any difference.
"""
import glob
import os
import subprocess
import sys
import sysconfig


def code_objects(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_lines"):
            yield from code_objects(const)


def truth(code):
    lines = {}
    for start, end, line in code.co_lines():
        for off in range(start, end, 2):
            lines[off] = -1 if line is None else line
    return lines


def decoded_line(entries, off):
    line = -1
    for instr, l in entries:
        if instr > off:
            break
        line = l
    return line


def main():
    pylines, max_files = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 400
    minor = sys.version_info.minor
    files = sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "*.py")))[:max_files]
    codes = []
    for path in files:
        try:
            with open(path, "rb") as f:
                codes.extend(code_objects(compile(f.read(), path, "exec")))
        except (SyntaxError, ValueError):
            continue
    feed = "".join(f"{minor} {c.co_firstlineno} {c.co_linetable.hex()}\n" for c in codes)
    out = subprocess.run([pylines], input=feed, capture_output=True, text=True, check=True)
    results = out.stdout.splitlines()
    bad = 0
    for code, result in zip(codes, results):
        entries = [tuple(map(int, e.split(":"))) for e in result.split()] \
            if not result.startswith("error") else None
        want = truth(code)
        if entries is None or any(decoded_line(entries, off) != line
                                  for off, line in want.items()):
            bad += 1
            if bad <= 5:
                print(f"FAIL: {code.co_filename}:{code.co_firstlineno} {code.co_name}: "
                      f"decoded {result[:200]}")
    if len(results) != len(codes):
        print(f"FAIL: {len(codes)} tables given, {len(results)} answers")
        bad += 1
    print(f"3.{minor}: {len(codes)} code objects from {len(files)} files, {bad} differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
