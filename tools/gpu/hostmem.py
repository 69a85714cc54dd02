#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""How host memory of each kind shows in /proc/PID/maps and smaps, on a real driver.

  hostmem.py            prints one block per allocation: kind, address, size, the
                        mapping that holds it (maps line) and that mapping's smaps fields

Kinds: cudaHostAlloc (small and large), cudaMallocHost, torch pin_memory(), malloc
memory before and after cudaHostRegister, numpy arrays, pageable torch CPU tensors.
specprobe decides pinned against pageable for memory it did not see allocated from
what this shows.
"""
import ctypes
import json
import sys


def cudart_path():
    for line in open("/proc/self/maps"):
        if "libcudart.so" in line:
            return line.split(None, 5)[5].strip()
    return None


def mapping_of(addr):
    """The maps line and smaps fields of the mapping that holds addr."""
    cur, fields = None, {}
    for line in open("/proc/self/smaps"):
        head = line.split()
        if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
            if cur:
                break
            lo, hi = (int(x, 16) for x in head[0].split("-"))
            if lo <= addr < hi:
                cur = line.rstrip()
            continue
        if cur:
            key, _, val = line.partition(":")
            fields[key.strip()] = val.strip()
    return cur, fields


def main():
    import numpy as np
    import torch

    torch.zeros(1, device="cuda")  # the context, and libcudart mapped
    rt = ctypes.CDLL(cudart_path())
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    rt.cudaHostRegister.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
    out = []

    def host_alloc(size, flags=0):
        p = ctypes.c_void_p()
        err = rt.cudaHostAlloc(ctypes.byref(p), ctypes.c_size_t(size), ctypes.c_uint(flags))
        return p.value, err

    def malloc_host(size):
        p = ctypes.c_void_p()
        err = rt.cudaMallocHost(ctypes.byref(p), ctypes.c_size_t(size))
        return p.value, err

    def note(kind, addr, size, err=0):
        line, fields = mapping_of(addr)
        out.append({"kind": kind, "addr": hex(addr), "size": size, "err": err, "maps": line,
                    "smaps": fields})

    for size in (4096, 1 << 20, 64 << 20):
        addr, err = host_alloc(size)
        note(f"cudaHostAlloc {size}", addr, size, err)
    addr, err = host_alloc(1 << 20, 0x02)  # cudaHostAllocMapped
    note("cudaHostAlloc mapped 1MiB", addr, 1 << 20, err)
    addr, err = malloc_host(1 << 20)
    note("cudaMallocHost 1MiB", addr, 1 << 20, err)
    for n in (8, 1 << 18, 1 << 24):
        t = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        note(f"torch pin_memory {n}", t.data_ptr(), n)
        out[-1]["keep"] = t
    for size in (4096, 16 << 20):
        p = libc.malloc(size)
        note(f"malloc {size}", p, size)
        err = rt.cudaHostRegister(p, size, 0)
        note(f"malloc {size} after cudaHostRegister", p, size, err)
    a = np.empty(1 << 20, dtype=np.uint8)
    note("numpy 1MiB", a.ctypes.data, a.nbytes)
    for n in (8, 1 << 22):
        t = torch.empty(n, dtype=torch.uint8)
        note(f"torch cpu {n}", t.data_ptr(), n)
        out[-1]["keep"] = t
    x = torch.arange(4, device="cuda")
    note("torch .item() destination (a fresh CPU scalar)", torch.empty(1).data_ptr(), 4)
    print(f"pid {__import__('os').getpid()} torch {torch.__version__}")
    for o in out:
        o.pop("keep", None)
        print(json.dumps(o))
    del x
    print("-- device-file and unnamed shared mappings of this process")
    for line in open("/proc/self/maps"):
        f = line.split()
        if len(f) >= 6 and f[5].startswith("/dev/") or len(f) == 5 and f[1][3] == "s":
            print(line.rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
