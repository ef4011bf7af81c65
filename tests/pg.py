"""A throwaway PostgreSQL cluster for tests: ``initdb`` in a temporary directory, a server on a free
port of 127.0.0.1 (unix socket in the same directory), stopped with ``pg_ctl -m fast stop`` and
deleted afterwards, whatever happened.

``pg_cluster`` (session-scoped) starts one server for the whole run; ``pg_url`` gives each test a
fresh database on it. When the PostgreSQL binaries are missing, the tests are skipped with a
reason on a developer's machine and FAIL under CI (``CI=true``, or ``CTXLAB_REQUIRE_POSTGRES=1`` as
.ci/run sets it): CI installs postgresql.
As root (CI containers), ``initdb`` and ``pg_ctl`` run as the ``postgres`` user through ``runuser``.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import pytest

USER = "ctx"
START_ATTEMPTS = 3


def pg_bindir() -> Path | None:
    """The newest ``/usr/lib/postgresql/*/bin`` holding initdb, else the directory of ``initdb`` on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3])
                   if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgCluster:
    """One PostgreSQL server in a temporary directory (see the module docstring)."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="ctxlab-pg-"))
        self.data = self.dir / "data"
        self.port = 0
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:  # initdb refuses root: the postgres user owns the directory and runs the server
            shutil.chown(self.dir, user="postgres", group=pwd.getpwnam("postgres").pw_gid)

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def start(self) -> "PgCluster":
        """initdb, then start on a free port (retried when another process took the port)."""
        done = self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", USER, "-E", "UTF8", "--no-sync")
        if done.returncode:
            raise RuntimeError(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")
        for _ in range(START_ATTEMPTS):
            self.port = _free_port()
            opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
            done = self._run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.dir / "server.log"),
                             "-w", "-t", "60", "start")
            if done.returncode == 0:
                return self
        log_file = self.dir / "server.log"
        log = log_file.read_text(errors="replace")[-2000:] if log_file.exists() else ""
        raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip()} {log}")

    def stop(self) -> None:
        """Stop the server (fast mode) and delete the directory."""
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        """A SQLAlchemy URL (psycopg 3) for ``database`` on this server."""
        return f"postgresql+psycopg://{USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database; its name."""
        import psycopg
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(host="127.0.0.1", port=self.port, user=USER, dbname="postgres", autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        """Drop a database, closing whatever is still connected to it."""
        import psycopg
        with psycopg.connect(host="127.0.0.1", port=self.port, user=USER, dbname="postgres", autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """One throwaway PostgreSQL server for the test run."""
    bindir = pg_bindir()
    if bindir is None:
        reason = "PostgreSQL binaries not found (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes") or os.environ.get("CTXLAB_REQUIRE_POSTGRES"):
            pytest.fail(f"{reason}; CI must install them (.ci/run runs apt-get install postgresql)")
        pytest.skip(f"{reason}; install Debian's postgresql to run the PostgreSQL tests")
    cluster = PgCluster(bindir)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> Iterator[str]:
    """A SQLAlchemy URL of a fresh database on the throwaway server."""
    name = pg_cluster.create_database()
    try:
        yield pg_cluster.url(name)
    finally:
        pg_cluster.drop_database(name)
