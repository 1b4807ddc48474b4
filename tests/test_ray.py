"""The Ray executor on a real local Ray cluster (started with `ray start` on loopback)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from .conftest import BANK, coqc_ok
from .test_strategies_strong import TWO_STEPS

pytest.importorskip("ray", reason="Ray is not installed: pip install '.[distributed]'")

RAY = Path(sys.executable).with_name("ray")
#: keep every Ray address on loopback: with this, Ray resolves "this node" to 127.0.0.1
#: instead of the machine's network address (the cluster and its driver stay on 127.0.0.1)
LOOPBACK = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    # the cluster and the driver share a token (Ray's token authentication)
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN": secrets.token_hex(32),
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A one-node Ray cluster on 127.0.0.1; yields its address."""
    port = _free_port()
    temp = tmp_path_factory.mktemp("ray")
    env = {**os.environ, **LOOPBACK}
    start = subprocess.run(
        [
            str(RAY),
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--temp-dir={temp}",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if start.returncode != 0:
        pytest.fail(f"ray start failed: {start.stdout}{start.stderr}")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(RAY), "stop", "--force"], capture_output=True, env=env, check=False)


def _bank_copy(folder: Path) -> Path:
    folder.mkdir()
    for source in sorted((BANK / "coq").glob("*.v")):
        shutil.copyfile(source, folder / source.name)
    (folder / "_CoqProject").write_text(
        "-Q . Bank\n" + "\n".join(p.name for p in sorted(folder.glob("*.v"))) + "\n"
    )
    return folder


def _fill(folder: Path, db: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "proof_orchestrator.cli",
            "fill",
            str(folder),
            "--json",
            "--db",
            f"sqlite:///{db}",
            "--cpu-target",
            "1.0",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **LOOPBACK},
    )


def _proved(report: dict[str, object]) -> set[str]:
    goals = [g for f in report["files"] for g in f["goals"]]  # type: ignore[attr-defined]
    return {g["name"] for g in goals if g["outcome"] == "proved"}


def test_the_bank_through_ray_proves_what_the_local_executor_proves(
    ray_cluster: str, tmp_path: Path
) -> None:
    # quick tactics (profile 0): the two runs must prove the same lemmas, which
    # budget-bound search under different load need not; search on Ray is tested below
    local = _fill(_bank_copy(tmp_path / "local"), tmp_path / "local.db", "--profile", "0")
    local_out, local_err = local.communicate(timeout=900)
    assert local.returncode == 0, local_err[-2000:]
    remote = _fill(
        _bank_copy(tmp_path / "ray"),
        tmp_path / "ray.db",
        "--profile",
        "0",
        "--executor",
        "ray",
        "--ray-address",
        ray_cluster,
    )
    ray_out, ray_err = remote.communicate(timeout=900)
    assert remote.returncode == 0, ray_err[-2000:]
    by_local, by_ray = _proved(json.loads(local_out)), _proved(json.loads(ray_out))
    assert len(by_local) >= 100
    assert by_ray == by_local
    for path in sorted((tmp_path / "ray").glob("*.v")):
        assert coqc_ok(path, "-Q", str(tmp_path / "ray"), "Bank")
    with sqlite3.connect(tmp_path / "ray.db") as db:
        (summary,) = db.execute("SELECT summary FROM runs").fetchone()
    workers = json.loads(summary)["workers"]
    assert workers
    assert sum(w["served"] for w in workers) > 0
    assert all(w["cpu_seconds"] > 0 for w in workers)


def test_search_runs_on_a_ray_worker(ray_cluster: str, tmp_path: Path) -> None:
    folder = tmp_path / "two"
    folder.mkdir()
    path = folder / "Two.v"
    path.write_text(TWO_STEPS, encoding="utf-8")
    run = _fill(folder, tmp_path / "l.db", "--executor", "ray", "--ray-address", ray_cluster)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-2000:]
    (goal,) = [g for f in json.loads(out)["files"] for g in f["goals"]]
    # no quick tactic proves it (tests/test_strategies_strong.py); the default profile's search does
    assert (goal["outcome"], goal["strategy"]) == ("proved", "search")
    assert "Admitted." not in path.read_text(encoding="utf-8")
    assert coqc_ok(path)
    # the driver published the live state while the attempt ran on Ray, then cleared it
    with sqlite3.connect(tmp_path / "l.db") as db:
        (summary,) = db.execute("SELECT summary FROM runs").fetchone()
        (live_rows,) = db.execute("SELECT count(*) FROM live_runs").fetchone()
    publisher = json.loads(summary)["live_publisher"]
    assert publisher["publishes"] >= 1
    assert publisher["failures"] == 0
    assert live_rows == 0


def _worker_pids() -> list[int]:
    return [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if any("ProverWorker" in part for part in (p.info["cmdline"] or []))
    ]


def test_a_killed_ray_worker_loses_nothing_and_records_nothing_twice(
    ray_cluster: str, tmp_path: Path
) -> None:
    folder = _bank_copy(tmp_path / "bank")
    db = tmp_path / "ledger.db"
    run = _fill(folder, db, "--profile", "0", "--executor", "ray", "--ray-address", ray_cluster)
    # wait until attempts are being recorded, then kill the worker process mid-run
    deadline = time.monotonic() + 300
    killed: list[int] = []
    while time.monotonic() < deadline and not killed:
        time.sleep(0.5)
        if not db.exists():
            continue
        try:
            with sqlite3.connect(db) as connection:
                (count,) = connection.execute("SELECT count(*) FROM attempts").fetchone()
        except sqlite3.OperationalError:
            continue
        if count >= 20:
            for pid in _worker_pids():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    assert killed, "no Ray worker process was found to kill"
    out, err = run.communicate(timeout=900)
    assert run.returncode == 0, err[-2000:]
    assert out.lstrip().startswith("{"), (out[:1000], err[-2000:])
    report = json.loads(out)
    goals = [g for f in report["files"] for g in f["goals"]]
    assert len(goals) == 135
    named = {(f["path"], g["name"]) for f in report["files"] for g in f["goals"]}
    assert len(named) == 135  # each goal reported once
    assert all(g["outcome"] in ("proved", "failed", "timeout", "rejected") for g in goals)
    with sqlite3.connect(db) as connection:
        keys = connection.execute(
            "SELECT attempt_key, count(*) FROM attempts GROUP BY attempt_key HAVING count(*) > 1"
        ).fetchall()
        proofs = connection.execute(
            "SELECT goal_id, count(*) FROM proofs GROUP BY goal_id HAVING count(*) > 1"
        ).fetchall()
    assert keys == []
    assert proofs == []
    assert len([g for g in goals if g["outcome"] == "proved"]) >= 100
    # the replacement worker is a new process
    assert set(_worker_pids()).isdisjoint(killed)
