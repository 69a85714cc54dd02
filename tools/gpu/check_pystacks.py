#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""On the GPU machine: PyTorch's .item() and torch.cuda.synchronize() call sites, by
file and line, from a specprobe recording (root).

  /opt/torch/.venv/bin/python3 tools/gpu/check_pystacks.py OUTDIR [--specprobe PATH]
      [--items N] [--syncs M]

Runs this file as a PyTorch workload (--workload) that makes N .item() and M
torch.cuda.synchronize() calls from lines marked "at:NAME", records it with
`specprobe record -p PID`, dumps the recording as JSON and checks: the driver
call an .item() blocks in (cuStreamSynchronize, or the copy itself) is recorded
exactly N times with the .item() line's file, function and line as its innermost
frame in this file and the calling loop's line next, cuCtxSynchronize exactly M
times with the synchronize() line's; no sync with a Python stack in this file names
another line. Prints one line per check and
"check_pystacks: P passed, F failed"; exits 1 on any failure. OUTDIR keeps the files.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def read_scalar(x):
    return x.sum().item()  # at:item


def sync_all():
    import torch
    torch.cuda.synchronize()  # at:sync


def workload(ready, go, items, syncs):
    import torch
    x = torch.ones(1024, device="cuda")
    read_scalar(x)
    sync_all()
    with open(ready, "w") as f:
        f.write(f"{os.getpid()}\n")
    while not os.path.exists(go):
        time.sleep(0.01)
    for _ in range(items):
        read_scalar(x)  # at:loop_item
    for _ in range(syncs):
        sync_all()  # at:loop_sync
    # the tracer names code objects from this process's memory: let it drain first
    time.sleep(2)


def markers():
    lines = {}
    with open(HERE, encoding="utf-8") as f:
        for no, text in enumerate(f, 1):
            m = re.search(r"# at:(\w+)$", text.rstrip())
            if m:
                lines[m.group(1)] = no
    return lines


def wait_for(path, proc, seconds):
    for _ in range(int(seconds * 10)):
        if os.path.exists(path):
            return True
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.1)
    return False


def record(args):
    out = args.outdir
    os.makedirs(out, exist_ok=True)
    ready, go, rec = (os.path.join(out, n) for n in ("ready", "go", "rec.sprb"))
    for path in (ready, go, rec):
        if os.path.exists(path):
            os.unlink(path)
    log = open(os.path.join(out, "workload.log"), "w")
    work = subprocess.Popen([sys.executable, HERE, "--workload", ready, go,
                             str(args.items), str(args.syncs)], stdout=log, stderr=log)
    if not wait_for(ready, work, 300):
        sys.exit(f"check_pystacks: the workload never became ready (see {out}/workload.log)")
    err = open(os.path.join(out, "record.err"), "w")
    tracer = subprocess.Popen([args.specprobe, "record", "-o", rec, "-p", str(work.pid)],
                              stderr=err)
    if not wait_for(rec, tracer, 60):
        work.kill()
        sys.exit(f"check_pystacks: specprobe record did not start (see {out}/record.err)")
    open(go, "w").close()
    work.wait()
    tracer.wait()
    calls = os.path.join(out, "calls.jsonl")
    with open(calls, "w") as f:
        subprocess.run([args.specprobe, "dump", "--json", rec], stdout=f, check=True)
    return calls, work.pid


def innermost_here(call):
    """Index of the innermost Python frame in this file, or None."""
    frames = call.get("stack", {}).get("python", [])
    for i, frame in enumerate(frames):
        if frame.get("file") == HERE:
            return i
    return None


def base_name(name):
    """cuStreamSynchronize for cuStreamSynchronize_ptsz and the like."""
    return re.sub(r"(_v\d)?(_pt[sd][sz])?$", "", name)


# Driver calls an .item() may block in: the copy itself or the sync after it.
ITEM_NAMES = ("cuStreamSynchronize", "cuMemcpyDtoHAsync", "cuMemcpyDtoH")


def check(calls_path, pid, items, syncs):
    at = markers()
    calls = [json.loads(l) for l in open(calls_path)]
    sites = collections.Counter()
    stray = collections.Counter()
    with_py = 0
    for call in calls:
        i = innermost_here(call)
        if i is None:
            continue
        with_py += 1
        frames = call["stack"]["python"]
        caller = frames[i + 1] if i + 1 < len(frames) else {}
        key = (base_name(call["name"]), frames[i]["function"], frames[i]["line"],
               caller.get("function"), caller.get("line"))
        if frames[i]["line"] in (at["item"], at["sync"]):
            sites[key] += 1
        else:
            stray[key] += 1
    item = {n: sites[(n, "read_scalar", at["item"], "workload", at["loop_item"])]
            for n in ITEM_NAMES}
    sync = sites[("cuCtxSynchronize", "sync_all", at["sync"], "workload", at["loop_sync"])]
    results = [
        (with_py > 0, f"{with_py} calls with a Python frame in {HERE}"),
        (items in item.values(), f".item() at read_scalar:{at['item']} from workload:"
         f"{at['loop_item']}: {items} made, recorded per driver call {item}"),
        (sync == syncs, f"cuCtxSynchronize at sync_all:{at['sync']} from workload:"
         f"{at['loop_sync']}: {sync} recorded, {syncs} made"),
        (not stray, f"no sync names another line of this file: {dict(stray)}"),
    ]
    print("calls at the marked lines:",
          json.dumps({" ".join(map(str, k)): v for k, v in sites.items()}))
    return results


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--workload":
        workload(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    default = os.path.join(TOP, "specprobe-static")
    parser.add_argument("--specprobe", default=default if os.path.exists(default)
                        else os.path.join(TOP, "specprobe"))
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--syncs", type=int, default=30)
    args = parser.parse_args()
    calls, pid = record(args)
    results = check(calls, pid, args.items, args.syncs)
    for ok, text in results:
        print(f"  {'ok  ' if ok else 'FAIL'}  {text}")
    failed = sum(1 for ok, _ in results if not ok)
    print(f"check_pystacks: {len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
