"""``ndcg-eval --help``: every command has a description and one example that runs on the
bundled data, every option says what it is, and a closed pipe ends the command quietly."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

import pytest

from evaluation_pipeline.cli import help_text
from evaluation_pipeline.cli.main import COMMANDS, build_parser, main
from tests.support.paths import REPO


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_has_a_description_and_an_example():
    parsers = subcommands()
    assert set(parsers) == set(COMMANDS) == set(help_text.COMMANDS)
    for name, parser in parsers.items():
        text = parser.format_help()
        assert help_text.COMMANDS[name][0].split()[0] in text, name
        assert f"example:\n  ndcg-eval {name} " in text, name


@pytest.mark.parametrize("name", sorted(help_text.COMMANDS))
def test_every_option_has_help_text(name):
    silent = [action.option_strings or [action.dest] for action in subcommands()[name]._actions
              if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()]
    assert not silent, f"{name}: options without help: {silent}"


# In the order a user would run them; history reads the storage `make run` fills.
RUNNABLE = ["score", "report", "compare", "explain", "spec", "reconcile", "agreement"]


def test_the_examples_run_on_the_bundled_data(tmp_path, monkeypatch, capsys):
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    for name in RUNNABLE:
        argv = shlex.split(help_text.COMMANDS[name][1])
        assert argv[:2] == ["ndcg-eval", name]
        assert main(argv[1:]) == 0, (name, capsys.readouterr().err)
    history = shlex.split(help_text.COMMANDS["history"][1])[1:]
    assert build_parser().parse_args(history).command == "history"


def test_a_closed_pipe_ends_quietly():
    # `true` exits at once: the command writes into a pipe nobody reads.
    ran = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {shlex.quote(sys.executable)} -m evaluation_pipeline "
         "spec | true; echo status $?"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert ran.stderr == ""
    assert ran.stdout == "status 0\n"
