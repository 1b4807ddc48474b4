"""A throwaway PostgreSQL server on loopback for the ledger tests.

Uses the Debian `postgresql` package (`make test` installs it as root). The
server runs as the `postgres` user when the tests run as root (PostgreSQL
refuses to run as root), with trust authentication, on 127.0.0.1 and a free
port, and is stopped and deleted at the end of the session.
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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(slots=True)
class PostgresServer:
    """A running server: its URL, and how to stop and start it again (same data, same port)."""

    url: str
    runner: list[str]
    pg_ctl: str
    data: Path
    options: str
    log: Path

    def start(self) -> None:
        subprocess.run(
            [
                *self.runner,
                self.pg_ctl,
                "-D",
                str(self.data),
                "-o",
                self.options,
                "-l",
                str(self.log),
                "-w",
                "start",
            ],
            check=True,
            capture_output=True,
        )

    def stop(self, mode: str = "fast") -> None:
        subprocess.run(
            [*self.runner, self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop"],
            check=True,
            capture_output=True,
        )


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yield the SQLAlchemy URL of its `postgres` database."""
    with postgres_instance() as server:
        yield server.url


@contextmanager
def postgres_instance() -> Iterator[PostgresServer]:
    """Start a server of our own; yield it (tests may stop and start it)."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip(
            "PostgreSQL is not installed (Debian: apt-get install postgresql; "
            "`make test` installs it when run as root)"
        )
    runner: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="orch-pg-"))
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no `postgres` user to run the server")
        os.chown(folder, user.pw_uid, user.pw_gid)
        runner = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", _free_port()
    server = PostgresServer(
        f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres",
        runner,
        pg_ctl,
        data,
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off",
        folder / "log",
    )
    try:
        subprocess.run(
            [*runner, initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
            check=True,
            capture_output=True,
        )
        server.start()
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"PostgreSQL could not be started: {exc.stderr.decode()[-300:]}")
    try:
        yield server
    finally:
        subprocess.run(
            [*runner, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True
        )
        shutil.rmtree(folder, ignore_errors=True)


def fresh_database(server_url: str) -> str:
    """A new empty database on the server; its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    plain = server_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return server_url.rsplit("/", 1)[0] + f"/{name}"
