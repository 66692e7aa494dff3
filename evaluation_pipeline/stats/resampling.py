"""Resampled sums over queries: one Poisson bootstrap count and one sign per (query, resample).

The report's intervals and randomization tests all need, for every resample ``b``, sums over
queries of a per-query number times that query's draw. Drawing a fresh index matrix per result
made the work (results x resamples x queries); here each query's draws are a pure function of
``(seed, query_id, b)``, computed where they are used, so one compiled pass over chunks of
queries applies them to every ranker, cutoff and slice at once, and the work is (resamples x
queries) whatever the number of results. The draws, exactly (REPORT_FORMAT.md, "Methods"):

- ``key(q) = mix(fnv1a64(utf8(query_id)) ^ mix(seed))``, with ``mix`` the SplitMix64 finalizer;
- the bootstrap count of ``q`` in resample ``b`` (0-based) is Poisson(1) by inversion of
  ``u = mix(key(q) + (b + 1) * GAMMA) >> 11`` (53 bits) against ``POISSON_THRESHOLDS``;
- its sign is ``+1`` when bit ``b % 64`` of ``mix(mix(key(q) ^ SIGN_STREAM) + (b // 64 + 1) *
  GAMMA)`` is 0, else ``-1`` (one draw gives the signs of 64 resamples).

A query's draws do not depend on the other queries, on their order, on how the queries are
cut into chunks or on the number of threads: the same seed gives the same sums bit for bit
(each resample's sums are taken by one thread, over the queries in the order given).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl
from numba import njit

from evaluation_pipeline.metric.kernels.buffers import string_buffers

GAMMA = np.uint64(0x9E3779B97F4A7C15)  # SplitMix64's increment (odd, the golden ratio)
SIGN_STREAM = np.uint64(0xD1B54A32D192ED03)  # keeps the signs apart from the counts
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11, _S63 = (np.uint64(s) for s in (30, 27, 31, 11, 63))


def _poisson_thresholds(largest: int = 20) -> np.ndarray:
    """``floor(P(C <= k) * 2**53)`` for Poisson(1), k = 0..largest-1, then 2**53: a count is
    the number of thresholds at or below a 53-bit uniform. P(C >= 20) is below 2**-53."""
    cdf = np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(largest)])
    thresholds = np.floor(np.minimum(cdf, 1.0) * 2.0**53).astype(np.uint64)
    return np.append(thresholds, np.uint64(2**53))


POISSON_THRESHOLDS = _poisson_thresholds()

# Resamples per call of the compiled pass (the unit of progress and of work per thread): the
# sums of one cell, 128 resamples by a few numbers, fit in the first-level cache.
RESAMPLES_PER_CALL = 128


@njit(cache=True, nogil=True, inline="always")
def _mix(z):
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, nogil=True)
def _fnv_keys(offsets, data, seed):
    seeded = _mix(seed)
    n = offsets.size - 1
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        h = _FNV_OFFSET
        for j in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(data[j])) * _FNV_PRIME
        out[i] = _mix(h ^ seeded)
    return out


@njit(cache=True, nogil=True)
def _sign_keys(keys):
    out = np.empty(keys.size, dtype=np.uint64)
    for i in range(keys.size):
        out[i] = _mix(keys[i] ^ SIGN_STREAM)
    return out


_T0, _T1, _T2, _T3 = (np.uint64(t) for t in POISSON_THRESHOLDS[:4])


@njit(cache=True, nogil=True, inline="always")
def _draw_counts(key, first, us, counts):
    """counts[j] = the Poisson(1) count of the query of ``key`` in resample first + j.

    Up to 4 (98% of draws) by four comparisons, which vectorize; a branch per draw on random
    numbers would mispredict about every other time. The rare larger counts are found after."""
    width = counts.size
    for j in range(width):
        us[j] = _mix(key + np.uint64(first + j + 1) * GAMMA) >> _S11
    tail = 0
    for j in range(width):
        u = us[j]
        c = np.int64(u >= _T0) + np.int64(u >= _T1) + np.int64(u >= _T2) + np.int64(u >= _T3)
        counts[j] = c
        tail |= c >> 2
    if tail:
        for j in range(width):
            if counts[j] == 4:
                c = 4
                while us[j] >= POISSON_THRESHOLDS[c]:
                    c += 1
                counts[j] = c


@njit(cache=True, nogil=True, inline="always")
def _draw_signs(key, first, signs):
    """signs[j] = the sign (+1 or -1) of the query of sign key ``key`` in resample first + j:
    one draw gives the signs of 64 resamples."""
    width = signs.size
    j = 0
    while j < width:
        b = first + j
        bits = _mix(key + np.uint64(b // 64 + 1) * GAMMA) >> np.uint64(b % 64)
        run = min(64 - b % 64, width - j)
        for i in range(run):
            signs[j + i] = 1.0 - 2.0 * np.float64((bits >> np.uint64(i)) & np.uint64(1))
        j += run


@njit(cache=True, nogil=True)
def _sums(keys, sign_keys, cells, counted, signed, first, last, counted_out, signed_out):
    """For resamples first..last-1: counted_out[b, cells[q, l], f] += count(q, b) *
    counted[q, f] for every level l, and signed_out[b, f] += sign(q, b) * signed[q, f].

    Sums are kept with the resample innermost (acc[cell, f, b]): each query's numbers are
    loaded once and added to a contiguous row of resamples, which vectorizes, and the rows of
    one cell stay in the first-level cache."""
    n = keys.size
    levels = cells.shape[1]
    n_counted = counted.shape[1]
    n_signed = signed.shape[1]
    width = last - first
    acc = np.zeros((counted_out.shape[1], n_counted, width))
    sacc = np.zeros((n_signed, width))
    us = np.empty(width, dtype=np.uint64)
    counts = np.empty(width, dtype=np.int64)
    draws = np.empty(width)
    signs = np.empty(width)
    for q in range(n):
        if n_counted:
            _draw_counts(keys[q], first, us, counts)
            for j in range(width):
                draws[j] = counts[j]
            for level in range(levels):
                cell = cells[q, level]
                for f in range(n_counted):
                    x = counted[q, f]
                    for j in range(width):
                        acc[cell, f, j] += draws[j] * x
        if n_signed:
            _draw_signs(sign_keys[q], first, signs)
            for f in range(n_signed):
                x = signed[q, f]
                for j in range(width):
                    sacc[f, j] += signs[j] * x
    for j in range(width):
        counted_out[first + j] = acc[:, :, j]
        signed_out[first + j] = sacc[:, j]


def query_keys(query_ids: pl.Series, seed: int) -> np.ndarray:
    """``key(q)`` of each query id (uint64): the root of all its draws under ``seed``."""
    offsets, data = string_buffers(query_ids)
    return _fnv_keys(offsets, data, np.uint64(seed % 2**64))


def _threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def resampled_sums(
    keys: np.ndarray,
    n_resamples: int,
    *,
    cells: np.ndarray | None = None,
    n_cells: int = 1,
    counted: np.ndarray | None = None,
    signed: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(counted sums [resamples, n_cells, counted columns], signed sums [resamples, signed
    columns]) over the queries of ``keys``.

    ``cells`` (queries x levels, int) puts each query in one cell per level, e.g. its value of
    each slice column; a query's counted numbers are added to every cell it is in. Without
    ``cells`` every query is in cell 0.
    """
    n = keys.size
    counted = np.zeros((n, 0)) if counted is None else np.ascontiguousarray(counted, np.float64)
    signed = np.zeros((n, 0)) if signed is None else np.ascontiguousarray(signed, np.float64)
    cells = (np.zeros((n, 1), dtype=np.int64) if cells is None
             else np.ascontiguousarray(cells.reshape(n, -1), dtype=np.int64))
    counted_out = np.zeros((n_resamples, n_cells, counted.shape[1]))
    signed_out = np.zeros((n_resamples, signed.shape[1]))
    if n == 0 or n_resamples == 0:
        return counted_out, signed_out
    sign_keys = _sign_keys(keys) if signed.shape[1] else keys
    calls = [(b, min(b + RESAMPLES_PER_CALL, n_resamples))
             for b in range(0, n_resamples, RESAMPLES_PER_CALL)]

    def run(bounds: tuple[int, int]) -> int:
        _sums(keys, sign_keys, cells, counted, signed, *bounds, counted_out, signed_out)
        return bounds[1] - bounds[0]

    done = 0
    with ThreadPoolExecutor(max_workers=min(_threads(), len(calls))) as pool:
        for finished in pool.map(run, calls):
            done += finished
            if progress is not None:
                progress(done, n_resamples)
    return counted_out, signed_out
