"""A throwaway PostgreSQL server for the tests of a deployment's instance (deploy/dagster.yaml).

The ``postgres_server`` fixture (one per test session) creates a cluster in a temporary folder
with initdb, runs it on 127.0.0.1 at a free port with password authentication, and stops it and
removes the folder at the end. PostgreSQL refuses to run as root, so under root the server runs
as the ``postgres`` system user Debian's package creates (``runuser``). Without the binaries or
dagster-postgres the tests are skipped, except under `make test-all` (CI), where that is a
failure (tests.support.requirements).
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.ports import free_port

SERVER_USER = "postgres"
SUPERUSER = "ndcg"
START_SECONDS = 60
# Any one server command (initdb, pg_ctl, createdb): a server that does not answer fails the
# test that asked, within this time, instead of hanging the session.
COMMAND_SECONDS = 120


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's bin folder (Debian keeps one per major version)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def unavailable(reason: str) -> None:
    """A skip; under the full tier (`make test-all`, CI) a failure naming what is missing
    (tests.support.requirements)."""
    pytest.skip(reason)


@dataclass
class PostgresServer:
    bin: Path
    folder: Path
    port: int
    password: str
    user: str | None  # the system user the server runs as (None: the current one)

    host = "127.0.0.1"

    def _command(self, *args: str) -> list[str]:
        return ["runuser", "-u", self.user, "--", *args] if self.user else list(args)

    def _run(self, *args: str) -> None:
        subprocess.run(self._command(*args), check=True, capture_output=True, text=True,
                       cwd=self.folder, timeout=COMMAND_SECONDS)

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def start(self) -> None:
        password_file = self.folder / "password"
        password_file.write_text(self.password)
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER,
                  f"--pwfile={password_file}", "--auth=scram-sha-256", "-E", "UTF8",
                  "--no-locale")
        password_file.unlink()
        self.restart()

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def restart(self) -> None:
        """Start the cluster (again, after ``stop``: its data kept). TCP on the loopback
        address only; the socket in our own folder, not /run/postgresql."""
        options = (f"-c listen_addresses={self.host} -p {self.port} "
                   f"-c unix_socket_directories={self.folder} -c fsync=off")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l",
                  str(self.folder / "server.log"), "-o", options, "-w", "-t",
                  str(START_SECONDS), "start")

    def create_database(self, name: str) -> dict[str, str]:
        """A new, empty database; returns the DAGSTER_PG_* variables deploy/dagster.yaml reads."""
        env = self.environment(name)
        subprocess.run([str(self.bin / "createdb"), "-h", self.host, "-p", str(self.port),
                        "-U", SUPERUSER, name], check=True, capture_output=True, text=True,
                       env=os.environ | {"PGPASSWORD": self.password}, timeout=COMMAND_SECONDS)
        return env

    def environment(self, database: str) -> dict[str, str]:
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USERNAME": SUPERUSER,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_DB": database,
        }


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    binaries = postgres_bin()
    if binaries is None:
        unavailable("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    try:
        import dagster_postgres  # noqa: F401
    except ImportError:
        unavailable("dagster-postgres is not installed (pip install '.[postgres]')")
    user = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            unavailable(f"running as root and there is no {SERVER_USER!r} system user to run "
                        "PostgreSQL as (Debian's postgresql package creates it)")
        user = SERVER_USER
    # In the temporary folder, not pytest's per-user one: the server's user must reach it.
    folder = Path(tempfile.mkdtemp(prefix="ndcg-postgres-"))
    if user:
        shutil.chown(folder, user=user)
    server = PostgresServer(binaries, folder, free_port(), secrets.token_hex(16), user)
    try:
        server.start()
    except subprocess.CalledProcessError as exc:
        log = folder / "server.log"
        detail = f"{exc.stderr or exc.stdout}{log.read_text() if log.exists() else ''}"
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"PostgreSQL did not start: {detail}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
