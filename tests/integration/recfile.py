# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A recording's records as docs/recording-format.md lays them out, for tests that look at bytes."""
import struct

CALL, RET = 1, 2


def records(data):
    """(offset, type, size) of each record after the header, up to a cut or a zero size."""
    off = 16 + struct.unpack_from("<I", data, 12)[0]
    while off + 4 <= len(data):
        kind, size = struct.unpack_from("<HH", data, off)
        if size < 4:
            return
        yield off, kind, size
        off += size


def call_fields(data, off):
    """probe, ts, tgid, tid, seq of an entry or a completion (they share the layout)."""
    return struct.unpack_from("<IQIII", data, off + 4)


def calls(data):
    """(offset, size, probe, ts, tgid, tid, seq) of each entry record."""
    return [(off, size) + call_fields(data, off)
            for off, kind, size in records(data) if kind == CALL]


def returns(data):
    """{(tgid, tid, seq): offset} of each completion record that names its entry."""
    out = {}
    for off, kind, _ in records(data):
        if kind == RET:
            _, _, tgid, tid, seq = call_fields(data, off)
            if seq:
                out[(tgid, tid, seq)] = off
    return out


SAMPLE, SAMPLE_OPEN = 72, 1


def sample_duty(path):
    """(on_ms, every_ms, windows opened) of a recording's --sample records (SP_REC_SAMPLE)."""
    data = open(path, "rb").read()
    on = every = None
    opens = 0
    for off, kind, size in records(data):
        if kind == SAMPLE and size >= 40:
            flags, _, _, on, every = struct.unpack_from("<IQQII", data, off + 4)
            opens += flags & SAMPLE_OPEN
    return on, every, opens
