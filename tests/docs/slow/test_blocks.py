"""Every shell block of README.md and docs/ runs, in order, from a fresh copy of the checkout
after `make run`, and prints the output shown below it (tests.support.doc_blocks has the rules).

The copy holds the checkout's tracked and new (not ignored) files as they are in the working
tree, and a symlink to the checkout's .venv, so nothing is installed: the test runs `make run`
with the EXTRAS of an existing install stamp and first checks that make would not run pip.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.doc_blocks import DOC_ORDER, REPO, Block, output_matches, shell_blocks
from tests.support.make import MAKE_VARIABLES

MAKE_RUN_TIMEOUT = 900
BLOCKS_TIMEOUT = 1200


def _copy_checkout(target: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if name.split("/")[0] == ".venv":  # a .venv that is a symlink is no ignored folder
            continue
        source = REPO / name
        if not (source.exists() or source.is_symlink()):
            continue  # deleted in the working tree
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            destination.symlink_to(os.readlink(source))
        elif source.is_file():
            shutil.copy2(source, destination)
    (target / ".venv").symlink_to(REPO / ".venv")
    _share_kernel_cache(target)


def _share_kernel_cache(target: Path) -> None:
    """Each package folder of the copy's code gets the checkout's ``__pycache__`` (a symlink),
    where numba keeps the compiled kernels. Its cache is keyed by each kernel's bytecode and
    checked against its source file's time and size, which the copy keeps (copy2): a kernel
    compiled by either side, before or during this test, is loaded by the other instead of
    compiled again (half a minute for the first command of each kind). What the blocks print
    is the same either way."""
    for package in REPO.glob("evaluation_pipeline/**/__init__.py"):
        folder = package.parent.relative_to(REPO)
        if (target / folder).is_dir() and not (target / folder / "__pycache__").exists():
            (REPO / folder / "__pycache__").mkdir(exist_ok=True)
            (target / folder / "__pycache__").symlink_to(REPO / folder / "__pycache__")


def _install_stamp(copy: Path) -> str:
    """The EXTRAS whose stamp exists in the shared .venv, with the copy's pyproject.toml dated
    no later than that stamp, so that make skips its install recipe."""
    # .installed: `make run`'s (no extras); .installed-test: `make test`'s; and so on.
    stamps = sorted((REPO / ".venv").glob(".installed*"))
    if not stamps:
        pytest.skip("no install stamp in .venv: run `make run` in the checkout first")
    default = REPO / ".venv" / ".installed-test"
    stamp = default if default in stamps else stamps[0]
    extras = stamp.name.removeprefix(".installed").removeprefix("-").replace("-", ",")
    pyproject = copy / "pyproject.toml"
    stamped = stamp.stat().st_mtime
    if pyproject.stat().st_mtime > stamped:
        # The shared environment must not be reinstalled from the copy (its editable install
        # would then point at a temporary folder).
        os.utime(pyproject, (stamped - 1, stamped - 1))
    dry = subprocess.run(["make", "-n", "run", f"EXTRAS={extras}"], cwd=copy,
                         env={k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES},
                         capture_output=True, text=True, check=True).stdout
    assert not _installs(dry), f"make would reinstall the shared .venv:\n{dry}"
    return extras


def _installs(dry_run: str) -> list[str]:
    """The lines of a `make -n` that would create or install into the environment."""
    return [line for line in dry_run.splitlines() if re.search(r"-m venv|/pip\b|\btouch\b", line)]


def _environment(copy: Path) -> dict[str, str]:
    """A user's shell: the copy's .venv/bin first on PATH, no NDCG_EVAL_*, DAGSTER_HOME or
    EXTRAS."""
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith("NDCG_EVAL_")
                   and name not in ("DAGSTER_HOME", *MAKE_VARIABLES)}
    environment["PATH"] = f"{copy / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    # The shared .venv's editable install points at the checkout; the copy's code comes first.
    environment["PYTHONPATH"] = str(copy)
    return environment


def _session_script(blocks: list[Block], copy: Path, state: Path) -> str:
    lines = [
        "set -euo pipefail",
        f"__docs_root={shlex.quote(str(copy))}",
        f"__docs_state={shlex.quote(str(state))}",
        "__docs_block() {",
        '  cd "$__docs_root"',
        '  printf "%s\\n" "$1" > "$__docs_state/current"',
        '  source "$__docs_state/block-$1.sh" > "$__docs_state/out-$1" 2> "$__docs_state/err-$1"',
        "}",
    ]
    for number, block in enumerate(blocks):
        (state / f"block-{number}.sh").write_text(block.text)
        lines.append(f"__docs_block {number}")
    lines.append('printf "done\\n" > "$__docs_state/current"')
    return "\n".join(lines) + "\n"


def _describe(block: Block, state: Path, number: int) -> str:
    printed = (state / f"out-{number}").read_text() if (state / f"out-{number}").exists() else ""
    errors = (state / f"err-{number}").read_text() if (state / f"err-{number}").exists() else ""
    return (f"block at {block.where()}:\n{block.text}\n--- stdout ---\n{printed[-4000:]}"
            f"\n--- stderr ---\n{errors[-4000:]}")


# Its own limits (make run, then the blocks) say which step ran out of time; the suite's
# per-test limit must not cut them short.
@pytest.mark.timeout(MAKE_RUN_TIMEOUT + BLOCKS_TIMEOUT + 120)
def test_documented_blocks_run_and_print_what_is_shown(tmp_path: Path) -> None:
    copy = tmp_path / "checkout"
    copy.mkdir()
    _copy_checkout(copy)
    extras = _install_stamp(copy)
    environment = _environment(copy)
    environment["EXTRAS"] = extras  # a block's own `make run` must find the same stamp

    dry = subprocess.run(["make", "-n", "run"], cwd=copy, env=environment, capture_output=True,
                         text=True, check=True).stdout
    assert not _installs(dry), f"a block's `make run` would reinstall the shared .venv:\n{dry}"

    made = subprocess.run(["make", "run", f"EXTRAS={extras}"], cwd=copy, env=environment,
                          capture_output=True, text=True, timeout=MAKE_RUN_TIMEOUT)
    assert made.returncode == 0, f"make run failed:\n{made.stdout[-4000:]}\n{made.stderr[-4000:]}"

    blocks = [block for page in DOC_ORDER for block in shell_blocks(page, copy) if block.runs]
    state = tmp_path / "session"
    state.mkdir()
    script = state / "session.sh"
    script.write_text(_session_script(blocks, copy, state))
    # Its own process group, so that a server a block left running is stopped with it.
    session = subprocess.Popen(["bash", str(script)], cwd=copy, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = session.communicate(timeout=BLOCKS_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(session.pid, signal.SIGKILL)
        session.communicate()
        reached = (state / "current").read_text().strip()
        pytest.fail(f"the blocks took over {BLOCKS_TIMEOUT} s; at "
                    f"{_describe(blocks[int(reached)], state, int(reached))}")
    finally:
        try:
            os.killpg(session.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    reached = (state / "current").read_text().strip() if (state / "current").exists() else "0"
    if session.returncode != 0 or reached != "done":
        number = int(reached) if reached.isdigit() else 0
        pytest.fail(f"exit status {session.returncode} in "
                    f"{_describe(blocks[number], state, number)}\n{stdout}{stderr}")

    mismatches = []
    for number, block in enumerate(blocks):
        if block.output is None:
            continue
        printed = (state / f"out-{number}").read_text()
        if not output_matches(block.output, printed):
            mismatches.append(f"{block.where()}: shown\n{block.output}\nprinted\n{printed}")
    assert not mismatches, "\n\n".join(mismatches)
