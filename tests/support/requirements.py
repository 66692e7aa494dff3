"""What a skipped test means under the full tier: a missing requirement, so a failure.

A test that needs what this machine lacks (Chromium, Java 17 for Spark, PostgreSQL's initdb,
an extra's package, ../shared's conformance data) skips, naming it. That is right for a
developer's `make test`, whose summary lists each skip's reason (pytest's ``-ra``), and wrong
for CI: a suite that passed without its Spark or browser tests proved nothing of them. Under
``NDCG_EVAL_REQUIRE_ALL=1`` (`make test-all`, which `.ci/run` calls) every skip, of a test or of
a whole file (a module-level ``importorskip``), is reported as a failure with the skip's own
reason, which names what is missing. An expected failure (xfail) is no skip and is left alone.
"""

from __future__ import annotations

import os

import pytest

REQUIRE_ALL = "NDCG_EVAL_REQUIRE_ALL"


def required() -> bool:
    """True when a skip must fail: the full tier, where every test is to run."""
    return os.environ.get(REQUIRE_ALL) == "1"


def _reason(report) -> str:
    # A skip's longrepr is (file, line, "Skipped: <reason>").
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        path, line, message = report.longrepr
        return f"{message.removeprefix('Skipped: ')} (skipped at {path}:{line})"
    return str(report.longrepr)


# The one requirement that is not the machine's: trec_eval's conformance data sits beside the
# checkout (tests/support/paths.py), so a clone made anywhere else lacks it, whatever CI
# installs. Its tests skip, named in the summary, rather than fail the full tier.
OUTSIDE_THE_CHECKOUT = "conformance data not found"


def fail_skip(report) -> None:
    """Turns a skip report (of a test's phase or of a file's collection) into a failure that
    names the requirement, when the full tier is asked for."""
    if not (required() and report.skipped) or hasattr(report, "wasxfail"):
        return
    if OUTSIDE_THE_CHECKOUT in _reason(report):
        return
    report.outcome = "failed"
    report.longrepr = (f"{REQUIRE_ALL}=1, so a missing requirement fails: "
                       f"{_reason(report)}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    fail_skip(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    fail_skip(report)
    return report
