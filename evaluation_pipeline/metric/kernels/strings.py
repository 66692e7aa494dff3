"""Compiled kernels over strings held as Arrow buffers: byte-wise comparison, each block's
order by doc_id, and the copy of Arrow string views into one contiguous buffer.

A *string set* is ``(offsets, data)``: string i is ``data[offsets[i]:offsets[i+1]]``. Strings
are compared byte-wise (UTF-8), which is the canonical order of docs/CONTRACT.md, section 1.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

from evaluation_pipeline.metric.kernels.intrinsics import (
    copy_bytes,
    copy_from_address,
    load_big_endian,
)

# Runs this short are ordered by insertion, not merged (also a tie run in metric.kernels.dcg).
INSERTION_RUN = 16


@njit(cache=True, nogil=True, inline="always")
def string_key(off, data, i):
    """(head, tail, length): bytes 0-7 and 8-15 of string i as big-endian integers
    (zero-padded), and its length. Comparing (head, tail) orders strings byte-wise except
    between strings that share 16 bytes; of those, a string of at most 16 bytes is a prefix of
    the other, so the lengths decide unless both are longer.

    Made where they are compared, not kept: a 16-byte key per row was 160 MB of fresh memory at
    10M rows, and a fresh page costs more here than the few loads that make a key again."""
    a, length = off[i], off[i + 1] - off[i]
    end = len(data)
    head = _word(data, a, min(length, 8), end)
    tail = _word(data, a + 8, min(length - 8, 8), end) if length > 8 else np.uint64(0)
    return head, tail, length


@njit(cache=True, nogil=True, inline="always")
def _word(data, at, count, end):
    """``count`` (0..8) bytes from ``data[at]`` as the high bytes of a big-endian uint64."""
    if count == 0:
        return np.uint64(0)
    if at + 8 <= end:  # one unaligned load, then keep the first `count` bytes
        w = load_big_endian(data, at)
        return w if count == 8 else w & ~(_ALL_ONES >> np.uint64(8 * count))
    w = np.uint64(0)
    for k in range(count):
        w = (w << np.uint64(8)) | np.uint64(data[at + k])
    return w << np.uint64(8 * (8 - count)) if count < 8 else w


_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def compare(sa, i, sb, j):
    """-1, 0 or 1: string i of the string set ``sa`` against string j of ``sb``, byte-wise."""
    ka, kb = string_key(sa[0], sa[1], i), string_key(sb[0], sb[1], j)
    return compare_keyed(ka, sa, i, kb, sb, j)


@njit(cache=True, nogil=True, inline="always")
def compare_keyed(ka, sa, i, kb, sb, j):
    """:func:`compare` given both strings' keys (:func:`string_key`)."""
    if ka[0] != kb[0]:
        return -1 if ka[0] < kb[0] else 1
    if ka[1] != kb[1]:
        return -1 if ka[1] < kb[1] else 1
    if ka[2] <= 16 or kb[2] <= 16:
        return 0 if ka[2] == kb[2] else (-1 if ka[2] < kb[2] else 1)
    # Kept out of line: unpacking the buffers here costs twenty times the comparison above.
    return _compare_rest(sa[0], sa[1], i, sb[0], sb[1], j)


@njit(cache=True, nogil=True)
def _compare_rest(off_a, data_a, i, off_b, data_b, j):
    """Strings whose first 16 bytes (zero-padded) are equal: the rest, then the lengths."""
    a0, a1, b0, b1 = off_a[i], off_a[i + 1], off_b[j], off_b[j + 1]
    n = min(a1 - a0, b1 - b0)
    for k in range(16, n):
        x, y = data_a[a0 + k], data_b[b0 + k]
        if x != y:
            return -1 if x < y else 1
    if a1 - a0 == b1 - b0:
        return 0
    return -1 if a1 - a0 < b1 - b0 else 1


@njit(cache=True, nogil=True)
def _sort_segment(idx, tmp, lo, hi, strings):
    """Stable sort of idx[lo:hi] (row numbers) by the bytes of their strings: insertion sort
    of short runs, then bottom-up merges."""
    for s in range(lo, hi, INSERTION_RUN):
        e = min(s + INSERTION_RUN, hi)
        for i in range(s + 1, e):
            v = idx[i]
            j = i - 1
            while j >= s and compare(strings, idx[j], strings, v) > 0:
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = v
    width = INSERTION_RUN
    in_tmp = False
    while width < hi - lo:
        src = tmp if in_tmp else idx
        dst = idx if in_tmp else tmp
        for s in range(lo, hi, 2 * width):
            m, e = min(s + width, hi), min(s + 2 * width, hi)
            i, j, k = s, m, s
            while i < m and j < e:
                if compare(strings, src[j], strings, src[i]) < 0:
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < m:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < e:
                dst[k] = src[j]
                j += 1
                k += 1
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        idx[lo:hi] = tmp[lo:hi]


@njit(cache=True, nogil=True)
def key_order(starts, strings, b_lo, b_hi, idx, tmp):
    """Into ``idx``: the row numbers of blocks ``b_lo:b_hi``, each block's rows ordered by their
    string (doc_id). Returns the first row found whose string repeats an earlier one of its
    block (-1 if none). ``tmp`` is scratch of the same length; blocks apart touch disjoint
    parts of both, so two threads can order two ranges of blocks at once.

    Blocks already in order (a canonical file) cost one comparison per row. Others are sorted
    by the 16-byte prefix keys of :func:`string_key`, made per block, and only rows whose first
    16 bytes are equal are compared further.
    """
    off, data = strings[0], strings[1]
    longest = 0
    for b in range(b_lo, b_hi):
        longest = max(longest, starts[b + 1] - starts[b])
    head, tail = np.empty(longest, np.uint64), np.empty(longest, np.uint64)
    length = np.empty(longest, np.int64)
    packed = np.empty(longest, np.uint64)
    duplicate = -1
    for b in range(b_lo, b_hi):
        lo, hi = starts[b], starts[b + 1]
        m = hi - lo
        in_order = True
        for t in range(m):
            idx[lo + t] = lo + t
            head[t], tail[t], length[t] = string_key(off, data, lo + t)
            if t > 0 and in_order and compare_keyed(
                    (head[t - 1], tail[t - 1], length[t - 1]), strings, lo + t - 1,
                    (head[t], tail[t], length[t]), strings, lo + t) >= 0:
                in_order = False
        if in_order:
            continue
        # Ids often share their first 8 bytes (or have at most 8): then one key sorts them.
        # (numba's argsort of a key column is three times faster than sorting row numbers
        # with a comparison.)
        same_head, no_tail = True, True
        for t in range(1, m):
            same_head &= head[t] == head[0]
            no_tail &= tail[t] == tail[0]
        if same_head or no_tail:
            word = tail if same_head else head
            if not _sort_packed(word, m, packed, idx, lo):
                idx[lo:hi] = lo + np.argsort(word[:m], kind="mergesort")
        else:
            by_tail = np.argsort(tail[:m], kind="mergesort")
            idx[lo:hi] = lo + by_tail[np.argsort(head[:m][by_tail], kind="mergesort")]
        # Rows that share their first 16 bytes: order them by the rest. Only these can repeat.
        i = lo
        while i < hi:
            j = i + 1
            while j < hi and head[idx[j] - lo] == head[idx[i] - lo] and (
                    tail[idx[j] - lo] == tail[idx[i] - lo]):
                j += 1
            if j - i > 1:
                _sort_segment(idx, tmp, i, j, strings)
                for r in range(i + 1, j):
                    if duplicate < 0 and compare(strings, idx[r - 1], strings, idx[r]) == 0:
                        duplicate = idx[r]
            i = j
    return duplicate


@njit(cache=True, nogil=True)
def _sort_packed(word, m, packed, idx, lo):
    """Stable order of ``word[:m]`` into ``idx[lo:lo+m]`` (as ``lo`` + position), when the
    positions fit in the low bits that every word leaves zero (short ids: a 13-byte id leaves 24
    bits of its second word): each word then carries its position, equal words keep their
    input order, and a plain sort of the words is the stable order, with no indirection.
    Returns False, touching nothing, when the positions do not fit."""
    used = np.uint64(0)
    for t in range(m):
        used |= word[t]
    free = 64 if used == 0 else np.intp(trailing_zeros(used))
    bits = 0 if m <= 1 else np.intp(64 - leading_zeros(np.uint64(m - 1)))  # of a position
    if bits > free:
        return False
    for t in range(m):
        packed[t] = word[t] | np.uint64(t)
    if m <= _INSERTION_LIMIT:  # a block of a hundred: insertion beats a general sort here
        for t in range(1, m):
            v = packed[t]
            u = t - 1
            while u >= 0 and packed[u] > v:
                packed[u + 1] = packed[u]
                u -= 1
            packed[u + 1] = v
    else:
        packed[:m].sort()
    mask = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    for t in range(m):
        idx[lo + t] = lo + np.intp(packed[t] & mask)
    return True


_INSERTION_LIMIT = 128


@njit(cache=True, nogil=True)
def view_bytes_total(views):
    """The total length of the strings of Arrow string views (``views`` as int32, 4 per view)."""
    total = 0
    for i in range(len(views) // 4):
        total += views[4 * i]
    return total


@njit(cache=True, nogil=True)
def views_to_strings(views, view_bytes, addresses, offsets, data, first):
    """Arrow string views (16 bytes each: length, then the string inline when it has at most 12
    bytes, else a prefix, a buffer number and an offset) copied into ``data``, from row
    ``first`` on, with their ``offsets`` (``offsets[first]`` set by the caller).
    ``views``: the views as int32 (4 per view); ``view_bytes``: the same memory as uint8;
    ``addresses``: where each data buffer of the array starts."""
    at = offsets[first]
    for i in range(len(views) // 4):
        length = views[4 * i]
        if length <= 12:
            copy_bytes(data, at, view_bytes, 16 * i + 4, length)
        else:
            copy_from_address(data, at, addresses[views[4 * i + 2]] + views[4 * i + 3], length)
        at += length
        offsets[first + i + 1] = at

