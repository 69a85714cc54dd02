#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Damage one field the readers index by, record after record, and run every reader.

sweep_fields.py SPECPROBE FIELD RECORDING [--positions N] [--keep DIR]

FIELD: tgid (set to a process the recording never saw), tid, seq, cookie, stack
(a stack record's tid), size. For N records spread over the file (all when 0), one
damaged copy each, read by report, report --json, export, dump, dump --json,
top --replay --batch, diff against the original and merge with it. A reader
crashing (a signal, a sanitizer report) is a finding; a one-line error or a
warning is what damage should give. Prints one line per finding and the totals;
exit 1 if any. --keep DIR keeps each input that crashed a reader.
"""
import argparse
import concurrent.futures
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../integration"))
import recfile  # noqa: E402

STACK = 26
# field: (record kinds, offset in the record, struct format, new value from the old)
FIELDS = {
    "tgid": ((recfile.CALL, recfile.RET), 16, "<I", lambda v: v | 0x01000000),
    "tid": ((recfile.CALL, recfile.RET), 20, "<I", lambda v: v ^ 0x00400001),
    "seq": ((recfile.CALL, recfile.RET), 24, "<I", lambda v: v + 0x10000),
    "cookie": ((recfile.CALL, recfile.RET), 4, "<I", lambda v: v + 7),
    "stack": ((STACK,), 8, "<I", lambda v: v ^ 0x00400001),
    "size": ((recfile.CALL, recfile.RET, STACK), 2, "<H", lambda v: v + 8),
}


def readers(path, orig, scratch):
    return [
        ("report", ["report", path]),
        ("report-json", ["report", "--json", path]),
        ("export", ["export", path, "-o", os.path.join(scratch, "t.pftrace"), "--force"]),
        ("dump", ["dump", path]),
        ("dump-json", ["dump", "--json", path]),
        ("top-replay", ["top", "--replay", path, "--batch", "-i", "0.05"]),
        ("diff", ["diff", orig, path]),
        ("merge", ["merge", orig, path, "-o", os.path.join(scratch, "m.sprb"), "--force"]),
    ]


def run_one(binary, orig, data, off, field, keep):
    kinds, at, fmt, change = FIELDS[field]
    buf = bytearray(data)
    old = struct.unpack_from(fmt, buf, off + at)[0]
    struct.pack_into(fmt, buf, off + at, change(old) & ((1 << (8 * struct.calcsize(fmt))) - 1))
    found, errors = [], 0
    with tempfile.TemporaryDirectory(prefix="sweep.") as scratch:
        path = os.path.join(scratch, "in.sprb")
        with open(path, "wb") as f:
            f.write(buf)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:exitcode=99",
                   UBSAN_OPTIONS="halt_on_error=1:exitcode=98:print_stacktrace=1")
        for name, args in readers(path, orig, scratch):
            try:
                p = subprocess.run([binary] + args, env=env, capture_output=True, timeout=120)
            except subprocess.TimeoutExpired:
                found.append((name, "hang"))
                continue
            err = p.stderr.decode(errors="replace")
            what = None
            if "ERROR: AddressSanitizer" in err:
                line = next(l for l in err.splitlines() if "ERROR: AddressSanitizer" in l)
                what = line.split("AddressSanitizer: ")[1].split(" ")[0]
                frame = next((l.strip() for l in err.splitlines() if l.strip().startswith("#0")), "")
                what += " " + frame.split(" in ", 1)[-1]
            elif "runtime error" in err:
                line = next(l for l in err.splitlines() if "runtime error" in l)
                what = "ubsan " + line.strip()
            elif p.returncode < 0 or p.returncode >= 128:
                what = f"signal rc {p.returncode}"
            elif p.returncode != 0:
                errors += 1
            if what:
                found.append((name, what))
        if found and keep:
            os.makedirs(keep, exist_ok=True)
            shutil.copy(path, os.path.join(keep, f"{os.path.basename(orig)}-{field}-{off}.sprb"))
    return off, found, errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("specprobe")
    ap.add_argument("field", choices=FIELDS)
    ap.add_argument("recording")
    ap.add_argument("--positions", type=int, default=60)
    ap.add_argument("--keep")
    ap.add_argument("-j", type=int, default=2)
    a = ap.parse_args()
    data = open(a.recording, "rb").read()
    kinds = FIELDS[a.field][0]
    offs = [off for off, kind, _ in recfile.records(data) if kind in kinds]
    if a.positions and len(offs) > a.positions:
        offs = [offs[i * len(offs) // a.positions] for i in range(a.positions)]
    positions_found = findings = errs = 0
    with concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        jobs = [ex.submit(run_one, a.specprobe, a.recording, data, off, a.field, a.keep)
                for off in offs]
        for j in jobs:
            off, found, errors = j.result()
            errs += errors
            if found:
                positions_found += 1
                findings += len(found)
                for name, what in found:
                    print(f"  byte {off}: {name}: {what}")
    print(f"{os.path.basename(a.recording)} {a.field}: {findings} findings in {positions_found} "
          f"of {len(offs)} positions; {errs} reader runs ended with an error")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
