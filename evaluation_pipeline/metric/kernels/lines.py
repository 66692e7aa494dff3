"""Compiled kernels that write canonical lines (docs/CONTRACT.md, section 1) as bytes, for
the content hash (``metric.hashing``): decimal integers, strings copied from their Arrow
buffers, one pass per chunk of blocks into one reused buffer.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from evaluation_pipeline.metric.kernels.intrinsics import copy_bytes, copy_word
from schemas.columns import GRADED, UNKNOWN

_POWERS_OF_TEN = np.array([10**i for i in range(20)], dtype=np.uint64)
_TEN = np.uint64(10)
_HUNDRED = np.uint64(100)
_NEGATIVE_ZERO = np.int64(-(2**63))  # the bit pattern of -0.0
_PAIRS = np.frombuffer("".join(f"{i:02d}" for i in range(100)).encode(), dtype=np.uint8)


@njit(cache=True, nogil=True, inline="always")
def _magnitude(value):
    """|value| as uint64 (exact for the smallest int64 too)."""
    if value < 0:
        return np.uint64(-(value + 1)) + np.uint64(1)
    return np.uint64(value)


@njit(cache=True, nogil=True, inline="always")
def _digits(value):
    """Characters of the decimal form of an int64 (sign included). The bit length gives the
    digit count to within one (log10(2) ~ 1233/4096), one table lookup settles it: a score's
    bit pattern has 19 digits, and a compare per digit cost more than writing them."""
    v = _magnitude(value)
    if v == 0:
        return 1
    guess = ((64 - np.intp(leading_zeros(v))) * 1233) >> 12
    n = guess + (1 if v >= _POWERS_OF_TEN[guess] else 0)
    return n + 1 if value < 0 else n


@njit(cache=True, nogil=True, inline="always")
def _put_pair(out, at, v):
    """Two digits of ``v`` (< 100) at ``out[at]``."""
    pair = np.intp(v) * 2
    out[at] = _PAIRS[pair]
    out[at + 1] = _PAIRS[pair + 1]


@njit(cache=True, nogil=True)
def put_int(out, at, value):
    """The decimal form of an int64 at ``out[at]``; returns the end. Two digits per division."""
    end = at + _digits(value)
    if value < 0:
        out[at] = 45  # '-'
    v = _magnitude(value)
    pos = end
    while v >= _HUNDRED:
        pos -= 2
        _put_pair(out, pos, v % _HUNDRED)
        v //= _HUNDRED
    if v >= _TEN:
        _put_pair(out, pos - 2, v)
    else:
        out[pos - 1] = 48 + v
    return end



@njit(cache=True, nogil=True, inline="always")
def _put_str(out, at, data, off, i):
    """String i at ``out[at]``; returns the end. Ids are short: up to 16 bytes go as two words
    (the bytes past the string are overwritten by what follows), which is twice as fast as a
    memcpy call. ``out`` needs 16 bytes of slack."""
    a, z = off[i], off[i + 1]
    if z - a <= 16 and a + 16 <= len(data):
        copy_word(out, at, data, a)
        copy_word(out, at + 8, data, a + 8)
    else:
        copy_bytes(out, at, data, a, z - a)
    return at + z - a


@njit(cache=True, nogil=True, inline="always")
def _put_field(out, at, data, off, i, prefixed):
    """String i as a field: its bytes, after their length and a colon when ``prefixed`` (hash
    version 3: a field then ends where its length says, whatever bytes it holds)."""
    if prefixed:
        at = put_int(out, at, off[i + 1] - off[i])
        out[at] = 58  # ':'
        at += 1
    return _put_str(out, at, data, off, i)


# Bytes a length prefix adds to a field at most: 20 digits and the colon.
_PREFIX_BYTES = 21


@njit(cache=True, nogil=True, inline="always")
def _line_buffer(out, blocks, starts, d_off, row_bytes):
    """``out``, or a new buffer when it is too small, for the lines of ``blocks``: an upper bound
    of ``row_bytes[j]`` plus its doc_id for each row of block ``blocks[j]``, so that one pass
    writes them, and 16 bytes of slack for :func:`_put_str`."""
    size = 16
    for j in range(len(blocks)):
        b = blocks[j]
        lo, hi = starts[b], starts[b + 1]
        size += row_bytes[j] * (hi - lo) + d_off[hi] - d_off[lo]
    return out if len(out) >= size else np.empty(size, np.uint8)


@njit(cache=True, nogil=True)
def pool_lines(blocks, starts, order, r_off, r_data, q_off, q_data, d_off, d_data, bits, out,
               prefixed):
    r"""``ranker\tquery_id\tdoc_id\tscore_bits\n`` for the rows of ``blocks`` (in that order,
    each block's rows in ``order``), as bytes. ``bits``: the scores viewed as int64; -0.0 is
    written as +0.0 (equal scores hash equally). Ranker and query_id are per block. Written into
    ``out`` when it is large enough (one buffer reused chunk after chunk); returns the buffer
    and the number of bytes written. ``prefixed``: each string field after its length and a
    colon (hash version 3)."""
    # Per row: ranker, query_id, 4 separators, at most 20 characters of score, and the
    # length prefixes of the three strings.
    keys = (r_off[blocks + 1] - r_off[blocks]) + (q_off[blocks + 1] - q_off[blocks])
    out = _line_buffer(out, blocks, starts, d_off, keys + 24 + 3 * _PREFIX_BYTES)
    at = 0
    for b in blocks:
        for t in range(starts[b], starts[b + 1]):
            i = order[t]
            at = _put_field(out, at, r_data, r_off, b, prefixed)
            out[at] = 9
            at = _put_field(out, at + 1, q_data, q_off, b, prefixed)
            out[at] = 9
            at = _put_field(out, at + 1, d_data, d_off, i, prefixed)
            out[at] = 9
            value = bits[i]
            at = put_int(out, at + 1, 0 if value == _NEGATIVE_ZERO else value)
            out[at] = 10
            at += 1
    return out, at


@njit(cache=True, nogil=True)
def judgment_lines(blocks, starts, order, q_off, q_data, d_off, d_data, grade, graded, out,
                   prefixed):
    r"""``query_id\tdoc_id\tgrade\tgrade_status\n`` (grade empty when unknown) for the rows
    of ``blocks``, as bytes (in ``out`` when it is large enough), like :func:`pool_lines`.
    query_id is per block."""
    # Per row: query_id, 4 separators, at most 20 characters of grade, the status word, and
    # the length prefixes of the two strings.
    row_bytes = ((q_off[blocks + 1] - q_off[blocks]) + 24 + max(len(_GRADED), len(_UNKNOWN))
                 + 2 * _PREFIX_BYTES)
    out = _line_buffer(out, blocks, starts, d_off, row_bytes)
    at = 0
    for b in blocks:
        for t in range(starts[b], starts[b + 1]):
            i = order[t]
            at = _put_field(out, at, q_data, q_off, b, prefixed)
            out[at] = 9
            at = _put_field(out, at + 1, d_data, d_off, i, prefixed)
            out[at] = 9
            at += 1
            if graded[i]:
                at = put_int(out, at, grade[i])
            out[at] = 9
            word = _GRADED if graded[i] else _UNKNOWN
            for k in range(len(word)):
                out[at + 1 + k] = word[k]
            at += 1 + len(word)
            out[at] = 10
            at += 1
    return out, at


# The grade_status words of a judgment line (schemas.columns), as bytes.
_GRADED = np.frombuffer(GRADED.encode(), dtype=np.uint8)
_UNKNOWN = np.frombuffer(UNKNOWN.encode(), dtype=np.uint8)
