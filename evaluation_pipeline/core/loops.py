"""The compiled loops of ``core.kernel`` (numba); import that module, not this one."""

from __future__ import annotations

import sys

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros
from numba.extending import intrinsic

from evaluation_pipeline.core.kernel import (  # noqa: F401  (the codes, shared)
    GRADED,
    TIES_AVERAGE,
    TIES_DOC_ASC,
    TIES_DOC_DESC,
    UNJUDGED,
    UNKNOWN,
)

_INSERTION_RUN = 16


@njit(cache=True, nogil=True, inline="always")
def _key(off, data, i):
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
        w = _load_big_endian(data, at)
        return w if count == 8 else w & ~(_ALL_ONES >> np.uint64(8 * count))
    w = np.uint64(0)
    for k in range(count):
        w = (w << np.uint64(8)) | np.uint64(data[at + k])
    return w << np.uint64(8 * (8 - count)) if count < 8 else w


_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@intrinsic
def _load_big_endian(typingctx, data, at):
    """The 8 bytes ``data[at:at+8]`` of a uint8 array as a big-endian uint64 (one load)."""
    signature = types.uint64(data, types.int64)

    def codegen(context, builder, sig, args):
        array = context.make_array(sig.args[0])(context, builder, args[0])
        pointer = builder.bitcast(builder.gep(array.data, [args[1]]), ir.IntType(64).as_pointer())
        value = builder.load(pointer, align=1)
        swap = builder.module.declare_intrinsic("llvm.bswap", [ir.IntType(64)])
        return builder.call(swap, [value])

    return signature, codegen


@njit(cache=True, nogil=True, inline="always")
def _compare(sa, i, sb, j):
    """-1, 0 or 1: string i of ``sa`` against string j of ``sb``, byte-wise. A string set is
    (offsets, data)."""
    return _compare_keyed(_key(sa[0], sa[1], i), sa, i, _key(sb[0], sb[1], j), sb, j)


@njit(cache=True, nogil=True, inline="always")
def _compare_keyed(ka, sa, i, kb, sb, j):
    """:func:`_compare` given both strings' keys (:func:`_key`)."""
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
    for s in range(lo, hi, _INSERTION_RUN):
        e = min(s + _INSERTION_RUN, hi)
        for i in range(s + 1, e):
            v = idx[i]
            j = i - 1
            while j >= s and _compare(strings, idx[j], strings, v) > 0:
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = v
    width = _INSERTION_RUN
    in_tmp = False
    while width < hi - lo:
        src = tmp if in_tmp else idx
        dst = idx if in_tmp else tmp
        for s in range(lo, hi, 2 * width):
            m, e = min(s + width, hi), min(s + 2 * width, hi)
            i, j, k = s, m, s
            while i < m and j < e:
                if _compare(strings, src[j], strings, src[i]) < 0:
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
    by the 16-byte prefix keys of :func:`_key`, made per block, and only rows whose first 16
    bytes are equal are compared further.
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
            head[t], tail[t], length[t] = _key(off, data, lo + t)
            if t > 0 and in_order and _compare_keyed(
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
                    if duplicate < 0 and _compare(strings, idx[r - 1], strings, idx[r]) == 0:
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


@njit(cache=True, nogil=True, inline="always")
def _non_increasing(values, lo, hi):
    for i in range(lo + 1, hi):
        if values[i] > values[i - 1]:
            return False
    return True


@njit(cache=True, nogil=True)
def score_blocks(starts, order, score, docs, j_lo, j_hi, j_order, judged_docs, j_class,
                 j_gain, cutoffs, ties, keep_unknown, keep_unjudged, ideal_from_candidates,
                 prefix):
    """Per block: DCG@K, the candidates' ideal DCG@K, judged@K (rows x cutoffs), counts of
    graded, unknown and unjudged candidates, and the number of positive-graded candidates.

    ``order`` lists each block's rows by doc_id (``key_order``); the block's judgments are rows
    ``j_order[j_lo[b]:j_hi[b]]`` of the judgment arrays, in doc_id order, so grading is a linear
    merge.
    ``prefix[p]`` is the sum of 1/log2(i + 1) for i = 1..p. The arithmetic is the contract's
    (section 3) term by term, in rank order, so sums are reproducible to the last bit.
    """
    n_blocks, n_k = len(starts) - 1, len(cutoffs)
    reach = cutoffs.max()
    d_off, d_data = docs[0], docs[1]
    j_off, j_data = judged_docs[0], judged_docs[1]
    dcg = np.zeros((n_blocks, n_k))
    ideal = np.zeros((n_blocks, n_k))
    judged = np.zeros((n_blocks, n_k))
    counts = np.zeros((n_blocks, 3), np.int64)
    positives = np.zeros(n_blocks, np.int64)
    longest = 0
    for b in range(n_blocks):
        longest = max(longest, starts[b + 1] - starts[b])
    by_doc_score = np.empty(longest)
    by_doc_class = np.empty(longest, np.int8)
    by_doc_gain = np.empty(longest)
    kept_score = np.empty(longest)
    kept_gain = np.empty(longest)
    rank_buffer = np.empty(longest, np.int64)
    top, scratch, denominator = _ideal_buffers(reach, longest)
    for b in range(n_blocks):
        lo, m = starts[b], starts[b + 1] - starts[b]
        # Grade: merge the block's doc_ids (ascending) with the query's judged doc_ids.
        # Each side's keys are made once, when the merge reaches the row.
        jp, je = j_lo[b], j_hi[b]
        jr, judged_key = -1, (np.uint64(0), np.uint64(0), 0)
        for t in range(m):
            row = order[lo + t]
            cls, gain = UNJUDGED, 0.0
            key = _key(d_off, d_data, row)
            while jp < je:
                if jr != j_order[jp]:
                    jr = j_order[jp]
                    judged_key = _key(j_off, j_data, jr)
                c = _compare_keyed(judged_key, judged_docs, jr, key, docs, row)
                if c < 0:
                    jp += 1
                    continue
                if c == 0:
                    cls, gain = j_class[jr], j_gain[jr]
                break
            # trec_eval breaks ties by doc_id descending: feed the docs in reverse.
            slot = m - 1 - t if ties == TIES_DOC_DESC else t
            by_doc_score[slot] = -score[row]
            by_doc_class[slot] = cls
            by_doc_gain[slot] = gain
            counts[b, cls] += 1
            if cls == GRADED and gain > 0:
                positives[b] += 1
        # Rank: score high to low, equal scores in slot (doc_id) order. A ranker's output
        # usually lists a query's candidates by score already: then the rank is the input order
        # with each run of equal scores put in slot order, and no sort is needed.
        rank = rank_buffer
        if _non_increasing(score, lo, lo + m):
            for t in range(m):
                rank[order[lo + t] - lo] = m - 1 - t if ties == TIES_DOC_DESC else t
            i = 0
            while i < m:
                j = i + 1
                while j < m and score[lo + j] == score[lo + i]:
                    j += 1
                if j - i > _INSERTION_RUN:
                    rank[i:j] = np.sort(rank[i:j])
                else:
                    for u in range(i + 1, j):  # insertion sort, in place
                        v = rank[u]
                        w = u - 1
                        while w >= i and rank[w] > v:
                            rank[w + 1] = rank[w]
                            w -= 1
                        rank[w + 1] = v
                i = j
        else:  # a stable sort keeps slot order within equal scores
            rank[:m] = np.argsort(by_doc_score[:m], kind="mergesort")

        # judged@K over the first min(K, n) places before exclusion; under `average` a tie
        # group counts its share of graded documents for each place it spans.
        p = 0
        while p < m and p < reach:
            q = p + 1
            if ties == TIES_AVERAGE:
                while q < m and by_doc_score[rank[q]] == by_doc_score[rank[p]]:
                    q += 1
            graded = 0
            for i in range(p, q):
                graded += by_doc_class[rank[i]] == GRADED
            share = graded / (q - p)
            for j in range(n_k):
                k = cutoffs[j]
                if p + 1 <= k:
                    judged[b, j] += share * (min(q, k) - p)
            p = q
        for j in range(n_k):
            judged[b, j] /= min(m, cutoffs[j])

        # Exclusion drops candidates; later ones move up.
        n_kept = 0
        for i in range(m):
            r = rank[i]
            cls = by_doc_class[r]
            if cls == GRADED or (cls == UNKNOWN and keep_unknown) or (
                    cls == UNJUDGED and keep_unjudged):
                kept_score[n_kept] = by_doc_score[r]
                kept_gain[n_kept] = by_doc_gain[r]
                n_kept += 1
        p = 0
        while p < n_kept and p < reach:
            q = p + 1
            total = kept_gain[p]
            if ties == TIES_AVERAGE:
                while q < n_kept and kept_score[q] == kept_score[p]:
                    total += kept_gain[q]
                    q += 1
            mean = total / (q - p)
            first, last = p + 1, q
            for j in range(n_k):
                k = cutoffs[j]
                if first <= k:
                    if first == last:
                        w = 1.0 / np.log2(first + 1.0)
                    else:
                        w = prefix[min(last, k)] - prefix[min(first - 1, k)]
                    dcg[b, j] += mean * w
            p = q
        if ideal_from_candidates and n_kept:
            n_top = _top_gains(kept_gain, 0, n_kept, reach, top, scratch)
            _add_ideal(top, n_top, cutoffs, denominator, ideal, b)
    return dcg, ideal, judged, counts, positives


@njit(cache=True, nogil=True)
def ideal_dcg(starts, gain, cutoffs):
    """DCG@K per segment of its gains ordered high to low (the ideal ranking)."""
    n_segments, n_k = len(starts) - 1, len(cutoffs)
    out = np.zeros((n_segments, n_k))
    reach = cutoffs.max()
    widest = 0
    for s in range(n_segments):
        widest = max(widest, starts[s + 1] - starts[s])
    top, scratch, denominator = _ideal_buffers(reach, widest)
    for s in range(n_segments):
        n_top = _top_gains(gain, starts[s], starts[s + 1], reach, top, scratch)
        _add_ideal(top, n_top, cutoffs, denominator, out, s)
    return out


# Up to this many places, the largest gains are kept by insertion (no sort, no allocation).
_TOP_BY_INSERTION = 32


@njit(cache=True, nogil=True, inline="always")
def _ideal_buffers(reach, widest):
    """(top, scratch, denominator) for :func:`_top_gains` and :func:`_add_ideal`, for calls
    that rank at most ``widest`` gains."""
    scratch = np.empty(widest if reach > _TOP_BY_INSERTION else 0)
    return np.empty(reach), scratch, np.log2(np.arange(reach) + 2.0)


@njit(cache=True, nogil=True, inline="always")
def _top_gains(gain, lo, hi, reach, top, scratch):
    """The min(hi - lo, reach) largest of ``gain[lo:hi]``, high to low, into ``top``; returns
    their number. ``scratch`` holds hi - lo values when reach > _TOP_BY_INSERTION."""
    if reach > _TOP_BY_INSERTION:
        m = hi - lo
        scratch[:m] = gain[lo:hi]
        scratch[:m].sort()
        n_top = min(m, reach)
        for i in range(n_top):
            top[i] = scratch[m - 1 - i]
        return n_top
    n_top = 0
    for r in range(lo, hi):
        g = gain[r]
        if n_top == reach:
            if g <= top[n_top - 1]:
                continue
            n_top -= 1
        i = n_top
        while i > 0 and top[i - 1] < g:
            top[i] = top[i - 1]
            i -= 1
        top[i] = g
        n_top += 1
    return n_top


@njit(cache=True, nogil=True, inline="always")
def _add_ideal(top, n_top, cutoffs, denominator, out, row):
    """out[row, j] = DCG@cutoffs[j] of the gains ``top[:n_top]`` (high to low), term by term
    in rank order. ``denominator[i]`` is log2(i + 2)."""
    for i in range(n_top):
        contribution = top[i] / denominator[i]
        for j in range(len(cutoffs)):
            if i < cutoffs[j]:
                out[row, j] += contribution


# -- canonical lines (contract section 1) -----------------------------------------------------


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
def _put_int(out, at, value):
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


@intrinsic
def _copy_bytes(typingctx, dst, dst_at, src, src_at, count):
    """memcpy(dst + dst_at, src + src_at, count) for uint8 arrays: five times faster than a
    byte loop on short strings, and no array view per call as a slice assignment makes."""
    signature = types.void(dst, types.int64, src, types.int64, types.int64)

    def codegen(context, builder, sig, args):
        d, d_at, s, s_at, n = args
        d_array = context.make_array(sig.args[0])(context, builder, d)
        s_array = context.make_array(sig.args[2])(context, builder, s)
        cgutils.raw_memcpy(builder, builder.gep(d_array.data, [d_at]),
                           builder.gep(s_array.data, [s_at]), n, 1)
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def _copy_word(typingctx, dst, dst_at, src, src_at):
    """The 8 bytes ``src[src_at:src_at+8]`` to ``dst[dst_at:]``: one unaligned load and store."""
    signature = types.void(dst, types.int64, src, types.int64)

    def codegen(context, builder, sig, args):
        d, d_at, s, s_at = args
        word = ir.IntType(64).as_pointer()
        d_array = context.make_array(sig.args[0])(context, builder, d)
        s_array = context.make_array(sig.args[2])(context, builder, s)
        value = builder.load(builder.bitcast(builder.gep(s_array.data, [s_at]), word), align=1)
        builder.store(value, builder.bitcast(builder.gep(d_array.data, [d_at]), word), align=1)
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def _copy_from_address(typingctx, dst, dst_at, address, count):
    """memcpy(dst + dst_at, (uint8 *) address, count): bytes of a buffer known by its address."""
    signature = types.void(dst, types.int64, types.int64, types.int64)

    def codegen(context, builder, sig, args):
        d, d_at, a, n = args
        d_array = context.make_array(sig.args[0])(context, builder, d)
        source = builder.inttoptr(a, ir.IntType(8).as_pointer())
        cgutils.raw_memcpy(builder, builder.gep(d_array.data, [d_at]), source, n, 1)
        return context.get_dummy_value()

    return signature, codegen


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
            _copy_bytes(data, at, view_bytes, 16 * i + 4, length)
        else:
            _copy_from_address(data, at, addresses[views[4 * i + 2]] + views[4 * i + 3], length)
        at += length
        offsets[first + i + 1] = at


@njit(cache=True, nogil=True, inline="always")
def _put_str(out, at, data, off, i):
    """String i at ``out[at]``; returns the end. Ids are short: up to 16 bytes go as two words
    (the bytes past the string are overwritten by what follows), which is twice as fast as a
    memcpy call. ``out`` needs 16 bytes of slack."""
    a, z = off[i], off[i + 1]
    if z - a <= 16 and a + 16 <= len(data):
        _copy_word(out, at, data, a)
        _copy_word(out, at + 8, data, a + 8)
    else:
        _copy_bytes(out, at, data, a, z - a)
    return at + z - a


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
def pool_lines(blocks, starts, order, r_off, r_data, q_off, q_data, d_off, d_data, bits, out):
    r"""``ranker\tquery_id\tdoc_id\tscore_bits\n`` for the rows of ``blocks`` (in that order,
    each block's rows in ``order``), as bytes. ``bits``: the scores viewed as int64; -0.0 is
    written as +0.0 (equal scores hash equally). Ranker and query_id are per block. Written into
    ``out`` when it is large enough (one buffer reused chunk after chunk); returns the buffer
    and the number of bytes written."""
    # Per row: ranker, query_id, 4 separators and at most 20 characters of score.
    keys = (r_off[blocks + 1] - r_off[blocks]) + (q_off[blocks + 1] - q_off[blocks])
    out = _line_buffer(out, blocks, starts, d_off, keys + 24)
    at = 0
    for b in blocks:
        for t in range(starts[b], starts[b + 1]):
            i = order[t]
            at = _put_str(out, at, r_data, r_off, b)
            out[at] = 9
            at = _put_str(out, at + 1, q_data, q_off, b)
            out[at] = 9
            at = _put_str(out, at + 1, d_data, d_off, i)
            out[at] = 9
            value = bits[i]
            at = _put_int(out, at + 1, 0 if value == _NEGATIVE_ZERO else value)
            out[at] = 10
            at += 1
    return out, at


@njit(cache=True, nogil=True)
def judgment_lines(blocks, starts, order, q_off, q_data, d_off, d_data, grade, graded, out):
    r"""``query_id\tdoc_id\tgrade\tgrade_status\n`` (grade empty when unknown) for the rows
    of ``blocks``, as bytes (in ``out`` when it is large enough), like :func:`pool_lines`.
    query_id is per block."""
    # Per row: query_id, 4 separators, at most 20 characters of grade and 7 of status.
    out = _line_buffer(out, blocks, starts, d_off, (q_off[blocks + 1] - q_off[blocks]) + 31)
    at = 0
    for b in blocks:
        for t in range(starts[b], starts[b + 1]):
            i = order[t]
            at = _put_str(out, at, q_data, q_off, b)
            out[at] = 9
            at = _put_str(out, at + 1, d_data, d_off, i)
            out[at] = 9
            at += 1
            if graded[i]:
                at = _put_int(out, at, grade[i])
                out[at] = 9
                for k in range(6):
                    out[at + 1 + k] = _GRADED[k]
                at += 7
            else:
                out[at] = 9
                for k in range(7):
                    out[at + 1 + k] = _UNKNOWN[k]
                at += 8
            out[at] = 10
            at += 1
    return out, at


_GRADED = np.frombuffer(b"graded", dtype=np.uint8)
_UNKNOWN = np.frombuffer(b"unknown", dtype=np.uint8)


def warm_up() -> None:
    """Start the compiler and load a cached function (about half a second, once per process,
    paid by whichever compiled function runs first): call on a spare thread while files are
    read, so that the first real call does not pay it."""
    _load_array_functions()
    ideal_dcg(np.array([0, 1], dtype=np.int64), np.ones(1), np.array([1], dtype=np.int64))


_BLAS_PROBE = "scipy.linalg.cython_blas"


def _load_array_functions() -> None:
    """numba's array functions, loaded without its BLAS probe. Loading them, numba imports
    scipy.linalg (when scipy is installed) to see whether BLAS is there: 0.3 to 0.5 s of CPU
    here, taken from the threads reading the inputs. No kernel calls BLAS, so the probe's module
    is hidden (its import fails: "no BLAS") while they load, and is visible again after. Once a
    process has imported scipy.linalg, nothing is hidden."""
    if "numba.np.arraymath" in sys.modules or _BLAS_PROBE in sys.modules:
        return
    sys.modules[_BLAS_PROBE] = None
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if sys.modules.get(_BLAS_PROBE, 0) is None:
            del sys.modules[_BLAS_PROBE]
