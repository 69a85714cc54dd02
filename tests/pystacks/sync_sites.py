# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Calls a look-alike libcuda's blocking syncs through ctypes from known lines.

Each call site carries a marker comment "at:NAME"; check_sites.py finds the
lines by those markers and knows how many times each site runs:
  python sync_sites.py LIBCUDA [COUNT [GO_FILE]]
Prints "ready" once the library is loaded, waits for a line on stdin (or for
GO_FILE to exist), makes its calls, prints "done" and waits for end of input (or
a second): the tracer reads the code objects of the recorded stacks while the
process still runs.
"""
import os
import time
import ctypes
import sys
import threading

lib = ctypes.CDLL(sys.argv[1])
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 3
GO_FILE = sys.argv[3] if len(sys.argv) > 3 else None


def setup():
    dev = ctypes.c_int()
    ctx = ctypes.c_void_p()
    if (lib.cuInit(0) or lib.cuDeviceGet(ctypes.byref(dev), 0) or
            lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) or lib.cuCtxSetCurrent(ctx)):
        sys.exit("sync_sites: the driver did not initialise")


def inner():
    lib.cuStreamSynchronize(None)  # at:inner


def outer(n):
    for _ in range(n):
        inner()  # at:outer


class Model:
    def step(self):
        return lib.cuCtxSynchronize()  # at:step


def gen(n):
    for _ in range(n):
        yield lib.cuStreamSynchronize(None)  # at:gen


def größe():
    lib.cuCtxSynchronize()  # at:latin


def 同步():
    lib.cuCtxSynchronize()  # at:cjk


def sync_helper():
    lib.cuCtxSynchronize()  # at:helper


def in_thread(n):
    for _ in range(n):
        Model().step()  # at:thread


def main():
    outer(COUNT)  # at:main_outer
    model = Model()
    for _ in range(COUNT + 1):
        model.step()  # at:main_step
    for _ in gen(COUNT + 2):  # at:main_gen
        pass
    for _ in range(COUNT):  # one helper from two lines, in turn: told apart by their callers
        sync_helper()  # at:alt_a
        sync_helper()  # at:alt_b
    größe()  # at:main_latin
    同步()  # at:main_cjk
    worker = threading.Thread(target=in_thread, args=(COUNT,))
    worker.start()
    worker.join()


def wait_go():
    if not GO_FILE:
        sys.stdin.readline()
        return
    while not os.path.exists(GO_FILE):
        time.sleep(0.01)


setup()
print("ready", flush=True)
wait_go()
main()  # at:module
print("done", flush=True)
if GO_FILE:
    time.sleep(1)
else:
    sys.stdin.read()
