"""Bad input is refused with a message naming the file, the column, the rule and the rows.

Every file of ``tests/support/bad_inputs/`` (written by ``tests/support/make_bad_inputs.py``)
goes through its reader and through ``ndcg-eval score``: exit status 2, a message a person can act
on, and nothing written. The positive cases (byte-order mark, extra columns) must be accepted.
Overlong lines are built at test time so that the committed corpus stays small.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from evaluation_pipeline.cli.main import main
from evaluation_pipeline.io.readers import read_judgments, read_run
from schemas import CandidatePool, InputError, Judgments, validate
from schemas.names import MAX_NAME_LENGTH
from schemas.rules.judgment_rules import JUDGMENTS
from schemas.rules.pool_rules import CANDIDATE_POOL
from tests.support.bad_input import (
    BAD,
    CASES,
    GOOD,
    MAX_MESSAGE_CHARS,
    assert_explains,
    case_ids,
)
from tests.support.make_bad_inputs import CORPUS, Case, corpus_files
from tests.support.refusals import violation

VALID = CORPUS / "valid"
VALID_JUDGMENTS = VALID / "judgments.csv"
VALID_RUN = VALID / "run.csv"


def _read(case: Case, path: Path | None = None) -> pl.DataFrame:
    path = path or CORPUS / case.path
    reader = read_judgments if case.kind == "judgments" else read_run
    return reader(path, case.fmt)


def _score_args(case: Case, out: Path, path: Path | None = None) -> list[str]:
    path = path or CORPUS / case.path
    judgments = path if case.kind == "judgments" else VALID_JUDGMENTS
    run = path if case.kind == "run" else VALID_RUN
    args = ["score", "--judgments", str(judgments), "--run", str(run), "--out", str(out)]
    if case.fmt:
        args += [f"--{'judgments' if case.kind == 'judgments' else 'run'}-format", case.fmt]
    return args


# -- the corpus itself ------------------------------------------------------------------------


def test_corpus_is_current_and_small():
    """The committed files are exactly what the generator writes, and stay small."""
    files = corpus_files()
    on_disk = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file()}
    assert on_disk == set(files), "run: python tests/support/make_bad_inputs.py"
    for rel, data in files.items():
        assert (CORPUS / rel).read_bytes() == data, (
            f"{rel} is stale: run tests/support/make_bad_inputs.py")
    assert sum(len(d) for d in files.values()) < 200_000


def test_generator_is_deterministic(tmp_path):
    script = CORPUS.parent / "make_bad_inputs.py"  # the corpus is beside its generator
    for name in ("a", "b"):
        done = subprocess.run([sys.executable, str(script), str(tmp_path / name)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    a = {p.relative_to(tmp_path / "a"): p.read_bytes() for p in (tmp_path / "a").rglob("*")
         if p.is_file()}
    b = {p.relative_to(tmp_path / "b"): p.read_bytes() for p in (tmp_path / "b").rglob("*")
         if p.is_file()}
    assert a == b
    assert {p.as_posix() for p in a} == set(corpus_files())


def test_every_rule_has_a_file_per_format():
    names = {c.path for c in CASES}
    for stem in ["negative_grade", "minus_one_for_unknown", "nan_for_unknown", "blank_for_unknown",
                 "fractional_grade", "unknown_with_grade", "graded_without_grade",
                 "bad_grade_status", "duplicate_query_doc", "empty_query_id", "empty_doc_id",
                 "missing_grade_status", "extra_columns", "two_versions", "header_only",
                 "unsafe_version_dotdot_slash", "unsafe_version_slash", "unsafe_version_dotdot",
                 "unsafe_version_newline", "unsafe_version_too_long", "empty"]:
        assert {f"judgments/{stem}.csv", f"judgments/{stem}.parquet"} <= names, stem
    for stem in ["nan_score", "infinite_score", "text_score", "duplicate_ranker_query_doc",
                 "empty_query_id", "empty_doc_id", "missing_score", "extra_column", "header_only",
                 "unsafe_pool_dotdot_slash", "unsafe_pool_slash", "unsafe_pool_dotdot",
                 "unsafe_pool_newline", "unsafe_pool_too_long", "empty"]:
        assert {f"runs/{stem}.csv", f"runs/{stem}.parquet"} <= names, stem
    assert {"judgments/truncated.parquet", "runs/truncated.parquet", "judgments/semicolon.csv",
            "judgments/utf8_bom.csv", "judgments/latin1.csv", "judgments/too_few_fields.qrels",
            "runs/too_few_fields.run", "judgments/fractional_rel.qrels",
            "judgments/text_rel.qrels", "judgments/empty.qrels", "runs/empty.run"} <= names


# -- the valid pair ---------------------------------------------------------------------------


@pytest.mark.parametrize("judgments", ["judgments.csv", "judgments.parquet", "judgments.qrels"])
@pytest.mark.parametrize("run", ["run.csv", "run.parquet", "run.run"])
def test_valid_pair_scores_in_every_format(judgments, run, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["score", "--judgments", str(VALID / judgments), "--run", str(VALID / run),
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    rows = pl.read_parquet(out / "per_query.parquet")
    assert set(rows["query_id"]) == {"q1", "q2"}
    # q1 has an explicit unknown candidate (d3): under the default spec the query stays open.
    assert set(rows.filter(pl.col("query_id") == "q1")["status"]) == {"incomplete"}
    assert (out / "summary.json").is_file()


def test_valid_files_read_alike():
    csv = read_judgments(VALID / "judgments.csv")
    for other in ("judgments.parquet", "judgments.qrels"):
        frame = read_judgments(VALID / other)
        assert frame.drop("judgment_version").equals(csv.drop("judgment_version"))
    assert csv.filter(pl.col("doc_id") == "d3")["grade_status"].to_list() == ["unknown"]
    run = read_run(VALID / "run.csv").sort("query_id", "doc_id")
    for other in ("run.parquet", "run.run"):
        frame = read_run(VALID / other).sort("query_id", "doc_id")
        assert frame.select(run.columns).equals(run)


# -- every bad file ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", BAD, ids=case_ids(BAD))
def test_reader_names_file_column_rule_and_rows(case):
    with pytest.raises(InputError) as caught:
        _read(case)
    error = caught.value
    assert error.source == str(CORPUS / case.path)
    assert case.column in {v.column for v in error.violations}
    assert_explains(str(error), case)


@pytest.mark.parametrize("case", BAD, ids=case_ids(BAD))
def test_cli_exits_2_says_why_and_writes_nothing(case, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(_score_args(case, out))
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith("ndcg-eval: error: ")
    assert_explains(captured.err, case)
    assert not out.exists()


@pytest.mark.parametrize("case", BAD, ids=case_ids(BAD))
def test_cli_leaves_an_existing_out_folder_empty(case, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    assert main(_score_args(case, out)) == 2
    capsys.readouterr()
    assert list(out.iterdir()) == []


# -- positive cases ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", GOOD, ids=case_ids(GOOD))
def test_positive_case_is_read(case):
    frame = _read(case)
    assert frame.height == 5
    assert not any("\ufeff" in c for c in frame.columns)
    valid = VALID / ("judgments" if case.kind == "judgments" else "run")
    reference = _read(case, valid.with_suffix(Path(case.path).suffix))  # same rows, same format
    name = "judgment_version" if case.kind == "judgments" else "candidate_pool"
    keys = ["query_id", "doc_id"] if case.kind == "judgments" else ["ranker", "query_id", "doc_id"]
    columns = [c for c in reference.columns if c != name]
    assert frame.select(columns).sort(keys).equals(reference.select(columns).sort(keys))


@pytest.mark.parametrize("case", GOOD, ids=case_ids(GOOD))
def test_positive_case_scores(case, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(_score_args(case, out))
    assert code == 0, capsys.readouterr().err
    assert (out / "per_query.parquet").is_file() and (out / "summary.json").is_file()


@pytest.mark.parametrize("path", ["judgments/extra_columns.csv", "judgments/extra_columns.parquet"])
def test_extra_judgment_columns_pass_through(path):
    frame = read_judgments(CORPUS / path)
    assert frame["judge"].to_list() == ["j1", "j2", "j1", "j3", "j2"]
    notes = frame["notes"].to_list()
    assert notes[1] == "checked twice" and notes[4] == "x"
    assert notes[0] in ("", None)  # an empty CSV cell reads as null, Parquet keeps ""


@pytest.mark.parametrize("path", ["runs/extra_column.csv", "runs/extra_column.parquet"])
def test_extra_run_column_passes_through(path):
    frame = read_run(CORPUS / path)
    assert frame["features"].to_list()[:2] == ["a", "b"]


# -- overlong lines ---------------------------------------------------------------------------

BIG = 30 * 1024 * 1024  # one line of about 30 MB
SECONDS = 60


def _big_cell(path: Path, head: str, cell_prefix: str, tail: str) -> None:
    """Write ``head``, then one line: ``cell_prefix`` + BIG 'x' characters + ``tail``."""
    with path.open("wb") as handle:
        handle.write(head.encode())
        handle.write(cell_prefix.encode())
        chunk = b"x" * (1024 * 1024)
        for _ in range(BIG // len(chunk)):
            handle.write(chunk)
        handle.write(tail.encode())


def _overlong_cases(tmp: Path) -> list[tuple[Case, Path]]:
    header = "ranker,query_id,doc_id,score,rank\nbm25,q1,d1,9.5,1\n"
    cases = []
    path = tmp / "runs" / "long_score.csv"  # a 30 MB score of text on line 3
    path.parent.mkdir(parents=True, exist_ok=True)
    _big_cell(path, header, "bm25,q1,d2,", ",2\n")
    cases.append((Case("long_score.csv", "run", b"", "score", ("must be a number", "..."),
                       ("line 3",)), path))
    path = tmp / "judgments" / "one_line.qrels"  # a single 30 MB line, no separator at all
    path.parent.mkdir(parents=True, exist_ok=True)
    _big_cell(path, "", "q", "")
    cases.append((Case("one_line.qrels", "judgments", b"", "(line)", ("at least 4", "fields"),
                       ("line 1",)), path))
    path = tmp / "judgments" / "long_header.csv"  # a 30 MB header without a comma
    _big_cell(path, "", "query_id", "\nq1\n")
    cases.append((Case("long_header.csv", "judgments", b"", "doc_id",
                       ("required column is missing",), ()), path))
    path = tmp / "judgments" / "long_version.csv"  # a 30 MB judgment_version
    _big_cell(path, "query_id,doc_id,grade,grade_status,judgment_version\n", "q1,d1,1,graded,v",
              "\n")
    cases.append((Case("long_version.csv", "judgments", b"", "judgment_version",
                       ("is refused", "at most 200"), ("line 2",)), path))
    return cases


@pytest.fixture(scope="module")
def overlong(tmp_path_factory) -> list[tuple[Case, Path]]:
    return _overlong_cases(tmp_path_factory.mktemp("overlong"))


@pytest.mark.parametrize("index", range(4))
def test_overlong_line_fails_cleanly(overlong, index, tmp_path, capsys):
    case, path = overlong[index]
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        _read(case, path)
    assert_explains(str(caught.value), case, path)
    out = tmp_path / "out"
    code = main(_score_args(case, out, path))
    err = capsys.readouterr().err
    assert code == 2
    assert_explains(err, case, path)
    assert not out.exists()
    assert time.monotonic() - started < SECONDS


def test_overlong_valid_line_is_read(tmp_path, capsys):
    """A 30 MB doc_id is odd but valid: it is read whole, and scoring goes through."""
    path = tmp_path / "judgments.csv"
    _big_cell(path, VALID_JUDGMENTS.read_text(), "q2,", ",1,graded,bad-v1\n")
    started = time.monotonic()
    frame = read_judgments(path)
    assert frame.height == 6
    assert frame["doc_id"].str.len_bytes().max() == BIG
    out = tmp_path / "out"
    code = main(["score", "--judgments", str(path), "--run", str(VALID_RUN), "--out", str(out)])
    assert code == 0
    capsys.readouterr()
    assert time.monotonic() - started < SECONDS


def test_overlong_line_memory_is_bounded(overlong):
    """In a fresh process, so that the peak resident size is this file's alone."""
    case, path = overlong[0]
    code = (
        "import sys\n"
        "from evaluation_pipeline.io.readers import read_run\n"
        "from schemas import InputError\n"
        "try:\n"
        f"    read_run({str(path)!r})\n"
        "    sys.exit(3)\n"
        "except InputError as exc:\n"
        "    print(len(str(exc)))\n"
        # VmHWM is this process image's own peak; ru_maxrss would start from the peak of the
        # (large) test process that spawned it.
        "print(next(int(line.split()[1]) for line in open('/proc/self/status')\n"
        "           if line.startswith('VmHWM:')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=SECONDS)
    assert done.returncode == 0, done.stderr
    message_chars, peak_kib = (int(x) for x in done.stdout.split())
    assert message_chars < MAX_MESSAGE_CHARS
    assert peak_kib < 1024 * 1024, f"peak resident size {peak_kib} KiB for a 30 MB line"


# -- the schemas alone (frames that did not come through a reader) ----------------------------


def _judgments_frame(**changes) -> pl.DataFrame:
    frame = read_judgments(VALID_JUDGMENTS)
    return frame.with_columns(pl.lit(v).alias(k) for k, v in changes.items())


@pytest.mark.parametrize("name, rule", [("..", "within_limits"),
                                        (".", "within_limits"),
                                        ("n" * (MAX_NAME_LENGTH + 1), "within_limits"),
                                        ("../x", "is_safe")])
def test_schemas_refuse_unsafe_names(name, rule):
    frame = _judgments_frame(judgment_version=name)
    with pytest.raises(InputError) as caught:
        validate(Judgments, frame, "frame")
    violation(caught, "judgment_version", JUDGMENTS.rule(f"judgment_version_{rule}"),
              count=frame.height)
    run = read_run(VALID_RUN).with_columns(pl.lit(name).alias("candidate_pool"))
    with pytest.raises(InputError) as caught:
        validate(CandidatePool, run, "frame")
    violation(caught, "candidate_pool", CANDIDATE_POOL.rule(f"candidate_pool_{rule}"),
              count=run.height)


def test_schema_says_nan_once_and_not_as_empty():
    run = read_run(VALID_RUN).with_columns(
        pl.when(pl.col("doc_id") == "d2").then(float("nan")).otherwise(pl.col("score"))
        .alias("score"))
    with pytest.raises(InputError) as caught:
        validate(CandidatePool, run, "frame")
    # Said once, as not finite: not also as a null.
    assert [v.column for v in caught.value.violations] == ["score"]
    violation(caught, "score", CANDIDATE_POOL.rule("score_is_finite"), count=1)


def test_schema_missing_key_column_is_not_also_a_duplicate():
    with pytest.raises(InputError) as caught:
        validate(Judgments, read_judgments(VALID_JUDGMENTS).drop("doc_id"), "frame")
    assert [v.column for v in caught.value.violations] == ["doc_id"]
    violation(caught, "doc_id", JUDGMENTS.rule("doc_id_is_there"))
