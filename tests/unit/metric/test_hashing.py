"""Content SHA-256 (contract section 1) against a plain-Python statement of the definition.

The compiled line writers and the blocks they walk must give exactly the digest of: one line per
row, tab-separated canonical fields, rows sorted by key byte-wise. The generated ids include the
cases the fast paths treat apart: ids sharing 8 or 16 leading bytes (long URL-like ids), ids
that are prefixes of one another, multi-byte UTF-8, and rows in any order.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation_pipeline.metric import hashing
from evaluation_pipeline.metric.hashing import StreamingDigest, judgments_sha256, pool_sha256
from evaluation_pipeline.metric.kernels import blocks as blocks_module
from evaluation_pipeline.metric.kernels import threads
from evaluation_pipeline.metric.kernels.lines import put_int
from evaluation_pipeline.metric.kernels.strings import key_order

PREFIXES = ["", "d", "https://example.org/docs/", "0123456789abcdef", "0123456", "é"]
ids = st.builds(lambda prefix, rest: prefix + rest, st.sampled_from(PREFIXES),
                st.text("ab9é\u4e2d\x00\t\n:", min_size=0, max_size=5)).filter(bool)
# Few queries, so that blocks hold many documents to order.
queries = st.sampled_from(["q1", "q2", "https://example.org/q/1", "https://example.org/q/2"])
scores = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5]),
                   st.floats(allow_nan=False, allow_infinity=False))


def encode_line(line, strings: int, version: int) -> bytes:
    """A canonical line: its fields joined by tabs, ended by a newline; from version 3 on, the
    first ``strings`` fields (the ids) each after its byte length and a colon."""
    fields = [b"%d:%s" % (len(f), f) if version >= 3 and k < strings else f
              for k, f in enumerate(line)]
    return b"\t".join(fields) + b"\n"


def reference_digest(lines, block_fields: int, range_rows: int | None = None,
                     version: int = 3) -> str:
    """Hash version 2 or 3 of the sorted ``lines`` (tuples of fields): blocks share their
    first ``block_fields`` fields; a block is in range (rows before it) // range_rows; the hash
    is SHA-256 of the version tag and the ranges' SHA-256 digests in order."""
    range_rows = range_rows or hashing.RANGE_ROWS
    ranges: dict[int, bytes] = {}
    number, previous = 0, None
    for row, line in enumerate(lines):
        if line[:block_fields] != previous:
            number, previous = row // range_rows, line[:block_fields]
        ranges[number] = ranges.get(number, b"") + encode_line(line, block_fields + 1, version)
    return hashlib.sha256(b"ndcg-eval content hash v%d\n" % version + b"".join(
        hashlib.sha256(ranges[n]).digest() for n in sorted(ranges))).hexdigest()


def reference_pool_lines(rows) -> list[tuple[bytes, ...]]:
    lines = []
    for ranker, query, doc, score in rows:
        bits = struct.unpack("<q", struct.pack("<d", score + 0.0))[0]
        lines.append((ranker.encode(), query.encode(), doc.encode(), str(bits).encode()))
    return sorted(lines, key=lambda line: line[:3])


def reference_pool_sha256(rows, range_rows: int | None = None, version: int = 3) -> str:
    return reference_digest(reference_pool_lines(rows), 2, range_rows, version)


def reference_judgments_sha256(rows, range_rows: int | None = None, version: int = 3) -> str:
    lines = []
    for query, doc, grade, status in rows:
        grade_text = b"" if grade is None else str(grade).encode()
        lines.append((query.encode(), doc.encode(), grade_text, status.encode()))
    lines.sort(key=lambda line: line[:2])
    return reference_digest(lines, 1, range_rows, version)


def reference_pool_sha256_v1(rows) -> str:
    """Hash version 1: one SHA-256 of all the sorted lines."""
    return hashlib.sha256(b"".join(b"\t".join(line) + b"\n" for line in reference_pool_lines(
        rows))).hexdigest()


@st.composite
def pools(draw):
    keys = draw(st.lists(st.tuples(st.sampled_from(["bm25", "dense", "a"]), queries, ids),
                         min_size=1, max_size=60, unique=True))
    rows = [(r, q, d, draw(scores)) for r, q, d in keys]
    return draw(st.permutations(rows))


@st.composite
def versions(draw):
    keys = draw(st.lists(st.tuples(queries, ids), min_size=1, max_size=60, unique=True))
    rows = []
    for q, d in keys:
        grade = draw(st.one_of(st.none(), st.integers(0, 10**12)))
        rows.append((q, d, grade, "unknown" if grade is None else "graded"))
    return draw(st.permutations(rows))


@settings(max_examples=200, deadline=None)
@given(pools())
def test_pool_sha256_is_the_sorted_lines_digest(rows):
    frame = pl.DataFrame(rows, schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    assert pool_sha256(frame) == reference_pool_sha256(rows)


@settings(max_examples=200, deadline=None)
@given(versions())
def test_judgments_sha256_is_the_sorted_lines_digest(rows):
    frame = pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String,
                                       "grade": pl.Int64, "grade_status": pl.String},
                         orient="row")
    assert judgments_sha256(frame) == reference_judgments_sha256(rows)


@settings(max_examples=100, deadline=None)
@given(pools(), st.integers(1, 7))
def test_streamed_pieces_in_key_order_give_the_same_digest(rows, pieces):
    """Fully sorted rows cut anywhere (even inside a query) hash as the whole."""
    frame = pl.DataFrame(rows, schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    ordered = frame.sort(["ranker", "query_id", "doc_id"])
    digest = StreamingDigest("pool")
    size = max(1, ordered.height // pieces)
    for start in range(0, ordered.height, size):
        digest.update(ordered.slice(start, size))
    assert digest.hexdigest() == reference_pool_sha256(rows)


@settings(max_examples=150, deadline=None)
@given(pools(), st.lists(st.integers(1, 9), min_size=1, max_size=20), st.integers(1, 6))
def test_streamed_pieces_of_any_size_give_the_whole_frames_hash(rows, sizes, range_rows):
    """Ranges close at whole blocks whatever the pieces: sorted rows cut at any sizes (inside
    blocks too), with ranges a few rows long, hash as the whole frame and as the definition."""
    frame = pl.DataFrame(rows, schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    ordered = frame.sort(["ranker", "query_id", "doc_id"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hashing, "RANGE_ROWS", range_rows)
        digest, start = StreamingDigest("pool"), 0
        for size in sizes * ordered.height:
            if start >= ordered.height:
                break
            digest.update(ordered.slice(start, size))
            start += size
        assert digest.hexdigest() == pool_sha256(frame) == reference_pool_sha256(rows,
                                                                                 range_rows)


def test_ranges_are_whole_blocks_and_a_long_block_is_a_range_of_its_own():
    # Blocks of 5, 1, 1 and 2 rows with ranges of 2 rows: the first block (rows 0-4) is range
    # 0, the next ones start at rows 5, 6 and 7: ranges 2, 3 and 3.
    sizes = {"q1": 5, "q2": 1, "q3": 1, "q4": 2}
    rows = [(q, f"d{i}", 1, "graded") for q, n in sizes.items() for i in range(n)]
    lines = [b"\t".join((b"2:" + q.encode(), b"2:" + d.encode(), b"1", b"graded")) + b"\n"
             for q, d, _, _ in rows]
    expected = hashlib.sha256(b"ndcg-eval content hash v3\n" + b"".join(
        hashlib.sha256(b"".join(part)).digest()
        for part in (lines[:5], lines[5:6], lines[6:]))).hexdigest()
    frame = pl.DataFrame(rows[::-1], schema={"query_id": pl.String, "doc_id": pl.String,
                                             "grade": pl.Int64, "grade_status": pl.String},
                         orient="row")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hashing, "RANGE_ROWS", 2)
        assert judgments_sha256(frame) == expected
    # The pieces Spark's executors hash: each range's rows, in any order within it.
    ordered = frame.reverse()
    assert hashing.combine(hashing.range_digest("judgments", ordered.slice(start, length))
                           for start, length in ((0, 5), (5, 1), (6, 3))) == expected


@settings(max_examples=50, deadline=None)
@given(pools())
def test_version_1_is_one_digest_of_all_lines(rows):
    frame = pl.DataFrame(rows, schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    assert hashing.sha256_of("pool", frame, 1) == reference_pool_sha256_v1(rows)
    assert hashing.sha256_of("pool", frame) == pool_sha256(frame)


@settings(max_examples=50, deadline=None)
@given(pools(), versions())
def test_version_2_is_kept_for_what_was_published_under_it(pool_rows, version_rows):
    pool = pl.DataFrame(pool_rows, schema=["ranker", "query_id", "doc_id", "score"],
                        orient="row")
    version = pl.DataFrame(version_rows, schema={"query_id": pl.String, "doc_id": pl.String,
                                                 "grade": pl.Int64, "grade_status": pl.String},
                           orient="row")
    assert hashing.sha256_of("pool", pool, 2) == reference_pool_sha256(pool_rows, version=2)
    assert hashing.sha256_of("judgments", version, 2) == reference_judgments_sha256(
        version_rows, version=2)


def test_an_id_holding_a_tab_and_a_newline_no_longer_hashes_as_two_rows():
    """Versions 1 and 2 wrote ids bare: one row whose doc_id spells a second line hashed as
    the two rows it spells. Version 3 writes each id after its length."""
    one = pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1\t3\tgraded\nq1\td2"], "grade": [1],
                        "grade_status": ["graded"]})
    two = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "grade": [3, 1],
                        "grade_status": ["graded", "graded"]})
    for old in (1, 2):
        assert hashing.sha256_of("judgments", one, old) == hashing.sha256_of(
            "judgments", two, old)
    assert judgments_sha256(one) != judgments_sha256(two)
    assert hashing.HASH_VERSION == 3


def test_duplicate_rows_are_found_on_the_way():
    frame = pl.DataFrame({"ranker": ["r"] * 3, "query_id": ["q"] * 3,
                          "doc_id": ["https://example.org/docs/1", "https://example.org/docs/2",
                                     "https://example.org/docs/1"],
                          "score": [1.0, 2.0, 3.0]})
    blocks = StreamingDigest("pool").update(frame)
    assert blocks.duplicate >= 0
    assert blocks.duplicate_key()["doc_id"] == "https://example.org/docs/1"


INT64_EDGES = sorted({v for k in range(19) for d in (-1, 0, 1) for v in (10**k + d, -(10**k + d))}
                     | {2**63 - 1, -(2**63), -(2**63) + 1, 2**63 - 10**18})


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.sampled_from(INT64_EDGES), st.integers(-(2**63), 2**63 - 1)))
def test_decimal_writer_is_str(value):
    # The canonical lines spell score bits and grades in decimal; the writer counts digits from
    # the bit length, so the powers of ten and the int64 extremes are where it could slip.
    out = np.zeros(24, np.uint8)
    end = put_int(out, 2, np.int64(value))
    assert bytes(out[2:end]).decode() == str(value)


@contextlib.contextmanager
def small_thresholds():
    """Large inputs are ordered in two halves on two threads and hashed in chunks on two
    threads; shrink both thresholds so that these paths run on hypothesis-sized inputs."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(blocks_module, "_SPLIT_ROWS", 4)
        patch.setattr(hashing, "_CHUNK_ROWS", 3)
        patch.setattr(hashing, "RANGE_ROWS", 5)
        yield


@settings(max_examples=150, deadline=None)
@given(pools(), versions())
def test_halves_and_chunks_give_the_same_digests_and_order(pool_rows, version_rows):
    pool = pl.DataFrame(pool_rows, schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    version = pl.DataFrame(version_rows, schema={"query_id": pl.String, "doc_id": pl.String,
                                                 "grade": pl.Int64, "grade_status": pl.String},
                           orient="row")
    whole = hashing.pool_blocks(pool)
    with small_thresholds():
        assert pool_sha256(pool) == reference_pool_sha256(pool_rows, 5)
        assert judgments_sha256(version) == reference_judgments_sha256(version_rows, 5)
        halves = hashing.pool_blocks(pool)
    np.testing.assert_array_equal(halves.order, whole.order)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=30), st.integers(1, 8))
def test_chunks_are_whole_blocks_in_canonical_order_and_never_empty(sizes, chunk_rows):
    rows = [("r", f"q{b:02d}", f"d{i}", 1.0) for b, size in enumerate(sizes) for i in range(size)]
    blocks = hashing.pool_blocks(pl.DataFrame(rows, schema=["ranker", "query_id", "doc_id",
                                                            "score"], orient="row"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hashing, "_CHUNK_ROWS", chunk_rows)
        chunks = hashing._chunks(blocks)
    assert all(len(chunk) for chunk in chunks)
    np.testing.assert_array_equal(np.concatenate(chunks), blocks.canonical_blocks())
    block_rows = np.diff(blocks.starts)
    for chunk in chunks:  # a chunk's rows pass the chunk size by less than one block's
        assert block_rows[chunk].sum() < chunk_rows + block_rows[chunk].max()


# Block contents for the orderings the kernel treats apart: ids sharing their first 8 bytes
# (sorted by the second word), ids of at most 8 bytes (by the first), ids differing in both
# words (two sorts), ids that leave no low bits free for a position (the general sort), and
# blocks past the insertion sort's limit.
_ORDER_ALPHABETS = ["ab", "0123456789", "\x00\x01\xff", "é\u4e2d"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "D0000000", "D00000000000000", "https://x.org/"]),
                          st.integers(0, 3), st.integers(0, 9), st.integers(0, 1),
                          st.lists(st.text(min_size=0, max_size=9), min_size=1, max_size=3),
                          st.integers(1, 300)),
                min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_key_order_is_the_stable_byte_order(spec, rnd):
    docs, starts = [], [0]
    for prefix, alphabet, longest, repeat, seeds, size in spec:
        letters = _ORDER_ALPHABETS[alphabet]
        block = [prefix + "".join(rnd.choice(letters) for _ in range(rnd.randint(0, longest)))
                 for _ in range(size)]
        block += seeds[:1] * repeat  # a repeat, unless the block repeats one already
        rnd.shuffle(block)
        docs += block
        starts.append(len(docs))
    from evaluation_pipeline.metric.kernels.buffers import string_buffers

    strings = string_buffers(pl.Series(docs, dtype=pl.String))
    order, scratch = np.empty(len(docs), np.int64), np.empty(len(docs), np.int64)
    starts = np.array(starts, dtype=np.int64)
    duplicate = key_order(starts, strings, 0, len(starts) - 1, order, scratch)
    expected, repeated = [], []
    for lo, hi in zip(starts[:-1], starts[1:]):
        rows = sorted(range(lo, hi), key=lambda r: docs[r].encode())  # stable
        expected += rows
        repeated += [b for a, b in zip(rows, rows[1:]) if docs[a] == docs[b]]
    assert order.tolist() == expected
    assert (duplicate >= 0) == bool(repeated)
    if repeated:
        assert duplicate in repeated


@pytest.mark.parametrize("repeat_at", [1, 2, 5, 9])
def test_duplicates_are_found_in_either_half(repeat_at):
    docs = [f"https://example.org/docs/{i}" for i in range(10)]
    docs[repeat_at] = docs[repeat_at - 1]
    frame = pl.DataFrame({"ranker": ["r"] * 10, "query_id": [f"q{i // 2}" for i in range(10)],
                          "doc_id": docs, "score": [1.0] * 10})
    with small_thresholds():
        blocks = hashing.pool_blocks(frame)
    assert blocks.duplicate == (repeat_at if repeat_at % 2 else -1)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_helper_threads_work_in_a_forked_child():
    # A multiprocess launcher may fork after the parent used the helpers: the child must get
    # threads of its own, not hang on the parent's.
    threads.helper("sha256").submit(int).result()
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if the helper runs work
        try:
            code = 0 if threads.helper("sha256").submit(lambda: 7).result(timeout=10) == 7 else 1
        except BaseException:  # noqa: BLE001 - any failure is the child's non-zero exit
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.text("ab9é\u4e2d\x00", max_size=30), max_size=20), min_size=1,
                max_size=5), st.integers(0, 3), st.integers(0, 3))
def test_string_buffers_copy_every_view(pieces, skip_head, skip_tail):
    """Strings of up to 12 bytes live in the view itself, longer ones in one of the array's data
    buffers; a column may come in several chunks and as a slice of them."""
    from evaluation_pipeline.metric.kernels.buffers import string_buffers

    column = pl.concat([pl.Series("s", p, dtype=pl.String) for p in pieces], rechunk=False)
    column = column.slice(skip_head, max(len(column) - skip_head - skip_tail, 0))
    offsets, data = string_buffers(column)
    assert offsets[0] == 0 and len(offsets) == len(column) + 1
    assert [bytes(data[a:z]).decode() for a, z in zip(offsets[:-1], offsets[1:])] == \
        column.to_list()
    assert not offsets.flags.writeable and not data.flags.writeable


@st.composite
def rated_versions(draw):
    """Ratings keyed (query_id, doc_id, rater), raters drawn from ids as odd as the docs'."""
    keys = draw(st.lists(st.tuples(queries, ids, st.sampled_from(["h1", "h2", "llm", "a\tb"])),
                         min_size=1, max_size=60, unique=True))
    rows = []
    for q, d, r in keys:
        grade = draw(st.one_of(st.none(), st.integers(0, 4)))
        rows.append((q, d, r, grade, "unknown" if grade is None else "graded"))
    return draw(st.permutations(rows))


def reference_rated_sha256(rows) -> str:
    """A rating's line: its doc_id field is doc_id and rater, each length-prefixed, joined by a
    tab; the lines sorted by (query_id, that field) byte-wise."""
    lines = []
    for query, doc, rater, grade, status in rows:
        field = b"%d:%s\t%d:%s" % (len(doc.encode()), doc.encode(), len(rater.encode()),
                                   rater.encode())
        lines.append((query.encode(), field, b"" if grade is None else str(grade).encode(),
                      status.encode()))
    lines.sort(key=lambda line: line[:2])
    return reference_digest(lines, 1)


RATED_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "rater": pl.String,
                "grade": pl.Int64, "grade_status": pl.String}


@settings(max_examples=150, deadline=None)
@given(rated_versions())
def test_a_version_with_raters_hashes_every_rating(rows):
    frame = pl.DataFrame(rows, schema=RATED_SCHEMA, orient="row")
    assert judgments_sha256(frame) == reference_rated_sha256(rows)
    assert judgments_sha256(frame.reverse()) == judgments_sha256(frame)
    digest = StreamingDigest("judgments")  # whole queries in key order, as ingest feeds them
    for _, part in frame.sort("query_id").group_by("query_id", maintain_order=True):
        digest.update(part)
    assert digest.hexdigest() == judgments_sha256(frame)


def test_a_rating_changed_or_moved_to_another_rater_changes_the_hash():
    frame = pl.DataFrame([("q", "d", "h1", 2, "graded"), ("q", "d", "h2", 1, "graded")],
                         schema=RATED_SCHEMA, orient="row")
    regraded = frame.with_columns(grade=pl.Series([2, 2]))
    swapped = frame.with_columns(rater=pl.Series(["h2", "h1"]))
    without = frame.drop("rater").head(1)
    hashes = {judgments_sha256(f) for f in (frame, regraded, swapped, without)}
    assert len(hashes) == 4
    # The rater-less hash is the one it always was.
    assert judgments_sha256(without) == reference_judgments_sha256([("q", "d", 2, "graded")])


def test_a_repeated_rating_is_flagged_with_its_rater():
    frame = pl.DataFrame([("q", "d", "h1", 2, "graded"), ("q", "d", "h1", 1, "graded"),
                          ("q", "d", "h2", 1, "graded")], schema=RATED_SCHEMA, orient="row")
    blocks = hashing.judgment_blocks(frame)
    assert blocks.duplicate_key() == {"query_id": "q", "doc_id": "d", "rater": "h1"}
    assert hashing.judgment_blocks(frame.tail(2)).duplicate < 0
