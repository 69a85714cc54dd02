# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Times cuCtxSynchronize (nothing queued: it returns at once) called through ctypes
from DEPTH Python frames deep, for pystack_cost.sh.
  [PYSTACK_THREADS=N] python pystack_calls.py LIBCUDA CALLS DEPTH OUT [GO_FILE]
Speaks pystack_probe's protocol (ready / a line / done / end of input), or with
GO_FILE waits for that file and exits a second after; writes the mean nanoseconds
per call, best of 5 rounds, to OUT. PYSTACK_THREADS idle Python threads are started
first: their thread states come before the calling thread's in the list searched.
"""
import ctypes
import os
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
CALLS, DEPTH, OUT = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
GO_FILE = sys.argv[5] if len(sys.argv) > 5 else None
sync = lib.cuCtxSynchronize


def setup():
    dev = ctypes.c_int()
    ctx = ctypes.c_void_p()
    if (lib.cuInit(0) or lib.cuDeviceGet(ctypes.byref(dev), 0) or
            lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) or lib.cuCtxSetCurrent(ctx)):
        sys.exit("pystack_calls: the driver did not initialise")


def calls(n):
    start = time.perf_counter_ns()
    for _ in range(n):
        sync()
    return (time.perf_counter_ns() - start) / n


def deep(level):
    if level > 1:
        return deep(level - 1)
    return min(calls(CALLS) for _ in range(5))


setup()
idle = threading.Event()
for _ in range(int(os.environ.get("PYSTACK_THREADS", "0"))):
    threading.Thread(target=idle.wait, daemon=True).start()
print("ready", flush=True)
if GO_FILE:
    while not os.path.exists(GO_FILE):
        time.sleep(0.01)
else:
    sys.stdin.readline()
ns = deep(DEPTH)
with open(OUT, "w") as f:
    f.write(f"{ns:.0f}\n")
print("done", flush=True)
if GO_FILE:
    time.sleep(1)
else:
    sys.stdin.read()
