# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A recording's records as docs/recording-format.md lays them out, for tests that look at bytes."""
import struct


def records(data):
    """(offset, type, size) of each record after the header, up to a cut or a zero size."""
    off = 16 + struct.unpack_from("<I", data, 12)[0]
    while off + 4 <= len(data):
        kind, size = struct.unpack_from("<HH", data, off)
        if size < 4:
            return
        yield off, kind, size
        off += size
