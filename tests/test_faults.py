"""Faults under a real run: the PostgreSQL server restarts or goes away, the disk fills or fails.

The database tests run `orch fill` against a PostgreSQL server of their own
and stop it mid-run. The disk test mounts a small tmpfs (root only) and fills it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proof_orchestrator.errors import FileWriteError
from proof_orchestrator.project import patch as patch_module
from proof_orchestrator.project.patch import write_atomic

from .conftest import BANK, coqc_ok
from .postgres import PostgresServer, fresh_database, postgres_instance


def _orch(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "proof_orchestrator.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _copy(folder: Path, *names: str) -> Path:
    folder.mkdir()
    for name in names:
        shutil.copyfile(BANK / "coq" / f"{name}.v", folder / f"{name}.v")
    (folder / "_CoqProject").write_text(
        "-Q . Bank\n" + "\n".join(f"{n}.v" for n in names) + "\n", encoding="utf-8"
    )
    return folder


# -- the database goes away --------------------------------------------------------------


@pytest.fixture
def pg() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test's own (it is stopped and started mid-run)."""
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install '.[distributed]'")
    with postgres_instance() as server:
        yield server


def _pg_rows(url: str, query: str) -> list[tuple[object, ...]]:
    import psycopg

    plain = url.replace("postgresql+psycopg://", "postgresql://")
    try:
        with psycopg.connect(plain, connect_timeout=5) as connection:
            return list(connection.execute(query).fetchall())
    except psycopg.Error:
        return []


def _wait_for_pg_attempts(url: str, run: subprocess.Popen[str], at_least: int) -> None:
    deadline = time.monotonic() + 300
    while True:
        rows = _pg_rows(url, "SELECT count(*) FROM attempts")
        if rows and int(rows[0][0]) >= at_least:  # type: ignore[call-overload]
            return
        if run.poll() is not None or time.monotonic() > deadline:
            run.kill()
            _, err = run.communicate()
            pytest.fail(f"the run ended before {at_least} attempts: {err[-2000:]}")
        time.sleep(0.3)


def test_a_postgresql_restart_mid_run_loses_no_attempt(pg: PostgresServer, tmp_path: Path) -> None:
    url = fresh_database(pg.url)
    folder = _copy(tmp_path / "bank", "BankBool")
    run = _orch(
        "fill",
        str(folder),
        "--json",
        "--db",
        url,
        "--profile",
        "0",
        "--cpu-target",
        "1.0",
        env={"ORCH_DB_RETRY_SECONDS": "120"},
    )
    _wait_for_pg_attempts(url, run, 8)
    pg.stop()
    time.sleep(4)  # the run goes on meanwhile, and its next write finds no server
    pg.start()
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, err[-3000:]
    # the run said that it waited, and that it reconnected
    assert "is unreachable" in err
    assert "is reachable again" in err
    report = json.loads(out)
    goals = [g for f in report["files"] for g in f["goals"]]
    assert len(goals) == 27
    assert len({(f["path"], g["name"]) for f in report["files"] for g in f["goals"]}) == 27
    ((summary,),) = _pg_rows(url, "SELECT summary FROM runs")
    # every attempt the run wrote is in the ledger once: none lost, none doubled
    ((rows,),) = _pg_rows(url, "SELECT count(*) FROM attempts")
    assert rows == summary["attempts_recorded"] > 8  # type: ignore[index]
    assert (
        _pg_rows(url, "SELECT attempt_key FROM attempts GROUP BY attempt_key HAVING count(*) > 1")
        == []
    )
    proved = {g["name"] for g in goals if g["outcome"] == "proved"}
    assert len(proved) >= 20
    ((proofs,),) = _pg_rows(url, "SELECT count(*) FROM proofs WHERE written")
    assert proofs == len(proved)
    for path in sorted(folder.glob("*.v")):
        assert coqc_ok(path, "-Q", str(folder), "Bank")


def test_a_database_gone_past_the_retry_limit_stops_cleanly_and_writes_nothing(
    pg: PostgresServer, tmp_path: Path
) -> None:
    url = fresh_database(pg.url)
    # one file: it is written only after its last hole, which this run never reaches
    folder = _copy(tmp_path / "bank", "BankNat")
    before = (folder / "BankNat.v").read_bytes()
    run = _orch(
        "fill",
        str(folder),
        "--db",
        url,
        "--profile",
        "0",
        "--cpu-target",
        "1.0",
        env={"ORCH_DB_RETRY_SECONDS": "3"},
    )
    _wait_for_pg_attempts(url, run, 3)
    pg.stop()
    stopped = time.monotonic()
    out, err = run.communicate(timeout=300)
    assert run.returncode == 1, (out[-2000:], err[-2000:])
    assert time.monotonic() - stopped < 120
    text = " ".join((out + err).split())
    assert "could not be reached" in text
    assert "run the same command again to resume" in text
    assert "is unreachable" in text  # it waited first
    assert "Traceback" not in err
    assert (folder / "BankNat.v").read_bytes() == before
    assert not list(folder.glob(".*.orch-tmp"))
    pg.start()
    assert _pg_rows(url, "SELECT count(*) FROM proofs WHERE written") == [(0,)]


# -- the disk fills or fails ---------------------------------------------------------------


HOLES = """Lemma one : 1 + 1 = 2.
Proof.
Admitted.

Lemma two : forall b : bool, b = b.
Proof.
Admitted.
"""


@contextlib.contextmanager
def _tmpfs(mount: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``mount`` (root only) for the block."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted for this test (root only)."""
    with _tmpfs(tmp_path / "disk", "256k") as mount:
        yield mount


@pytest.fixture
def ledger_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs (room for a ledger) mounted for this test (root only)."""
    with _tmpfs(tmp_path / "disk", "8m") as mount:
        yield mount


def _fill_up(folder: Path) -> None:
    """Write a filler file until the filesystem has no block left."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    failure = 0
    try:
        while not failure:
            try:
                os.write(fd, b"\0" * 4096)
            except OSError as exc:
                failure = exc.errno or -1
    finally:
        os.close(fd)
    assert failure == errno.ENOSPC


def test_a_full_disk_leaves_the_file_as_it_was_and_says_so(
    small_disk: Path, tmp_path: Path
) -> None:
    source = small_disk / "Holes.v"
    source.write_text(HOLES, encoding="utf-8")
    before = source.read_bytes()
    _fill_up(small_disk)
    db = tmp_path / "ledger.sqlite"
    run = _orch("fill", str(source), "--db", f"sqlite:///{db}", "--profile", "0")
    out, err = run.communicate(timeout=300)
    assert run.returncode == 1, (out[-2000:], err[-2000:])
    text = " ".join((out + err).split())
    assert "No space left on device (ENOSPC)" in text
    assert "The file is unchanged" in text
    assert "Traceback" not in err
    assert source.read_bytes() == before
    assert sorted(p.name for p in small_disk.iterdir()) == ["Holes.v", "filler"]
    # the ledger says the run failed and why, and keeps the verified proofs, not written
    with sqlite3.connect(db) as connection:
        ((status, summary),) = connection.execute("SELECT status, summary FROM runs").fetchall()
        proofs = connection.execute("SELECT written FROM proofs").fetchall()
    assert status == "failed"
    assert "ENOSPC" in json.loads(summary)["error"]
    assert proofs == [(0,), (0,)]
    # with room again, the next run writes the proofs without searching
    (small_disk / "filler").unlink()
    again = _orch("fill", str(source), "--db", f"sqlite:///{db}", "--profile", "0", "--json")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err[-2000:]
    strategies = {g["strategy"] for f in json.loads(out)["files"] for g in f["goals"]}
    assert strategies == {"ledger-replay"}
    assert "Admitted." not in source.read_text(encoding="utf-8")
    assert coqc_ok(source)


def test_an_io_error_during_the_write_removes_the_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # EIO cannot be produced on demand here: the failing fsync stands in for a failing disk
    path = tmp_path / "A.v"
    path.write_text("old\n", encoding="utf-8")

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(patch_module.os, "fsync", failing_fsync)
    with pytest.raises(FileWriteError, match=r"Input/output error \(EIO\)") as caught:
        write_atomic(path, "new\n", "old\n")
    assert caught.value.errno == errno.EIO
    assert path.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["A.v"]


def test_bg_waits_out_a_full_ledger_disk_and_goes_on(ledger_disk: Path, tmp_path: Path) -> None:
    """The ledger's disk fills while ``orch bg`` runs: the cycle that cannot write ends
    with one line, bg waits and goes on, and once there is room it proves the hole an
    edit added while the disk was full (before: bg exited with status 1)."""
    project = tmp_path / "project"
    project.mkdir()
    source = project / "A.v"
    source.write_text("Lemma a : forall n : nat, 0 + n = n.\nAdmitted.\n", encoding="utf-8")
    db = ledger_disk / "ledger.sqlite"
    run = _orch("bg", str(project), "--duration", "60", "--profile", "0", "--db", f"sqlite:///{db}")
    deadline = time.monotonic() + 40
    while "Qed." not in source.read_text(encoding="utf-8") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "Qed." in source.read_text(encoding="utf-8")
    time.sleep(1.0)
    _fill_up(ledger_disk)
    with source.open("a", encoding="utf-8") as handle:
        handle.write("Lemma b : forall b : bool, negb (negb b) = b.\nAdmitted.\n")
    time.sleep(12.0)  # an edit with the disk full: the cycle cannot record its attempts
    assert run.poll() is None, run.communicate()
    (ledger_disk / "filler").unlink()
    _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err[-3000:]
    assert "trying again in" in " ".join(err.split())  # the terminal may wrap the line
    assert "Traceback" not in err
    assert source.read_text(encoding="utf-8").count("Qed.") == 2
    assert coqc_ok(source)
