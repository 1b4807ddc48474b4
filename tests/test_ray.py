"""The Ray executor on a real Ray cluster of three nodes on one machine (127.0.0.1).

Each node is its own ``ray start`` with its own raylet and resources
(:mod:`tests.raycluster`). The tests kill a node mid-run, a worker process
mid-run, and the driver mid-run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from .conftest import BANK, coqc_ok
from .raycluster import LOOPBACK, LocalCluster, Node, local_cluster
from .test_strategies_strong import TWO_STEPS

pytest.importorskip("ray", reason="Ray is not installed: pip install '.[distributed]'")


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """Three nodes (a head and two others) with one CPU each, on 127.0.0.1.

    Its folder is short and directly under the system temp folder: Ray's Unix
    sockets live in it, and a socket path may not exceed 107 bytes (pytest's
    own temp folders are deeper under pytest-xdist).
    """
    temp = Path(tempfile.mkdtemp(prefix="orch-ray-"))
    try:
        with local_cluster(temp, cpus=(1, 1, 1)) as started:
            yield started
    finally:
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_cluster(cluster: LocalCluster) -> str:
    return cluster.address


def _bank_copy(folder: Path, names: tuple[str, ...] = ()) -> Path:
    folder.mkdir()
    for source in sorted((BANK / "coq").glob("*.v")):
        if names and source.stem not in names:
            continue
        shutil.copyfile(source, folder / source.name)
    (folder / "_CoqProject").write_text(
        "-Q . Bank\n" + "\n".join(p.name for p in sorted(folder.glob("*.v"))) + "\n"
    )
    return folder


def _fill(folder: Path, db: Path, *extra: str, cpu: str = "1.0") -> subprocess.Popen[str]:
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
            cpu,
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


def _count(db: Path, where: str = "1", what: str = "*") -> int:
    """``count(what)`` of the attempts matching ``where`` (0 before the ledger exists)."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as connection:
            query = f"SELECT count({what}) FROM attempts WHERE {where}"
            (count,) = connection.execute(query).fetchone()
    except sqlite3.OperationalError:
        return 0
    return int(count)


def _wait_for_attempts(
    db: Path, run: subprocess.Popen[str], at_least: int, where: str = "1", what: str = "*"
) -> None:
    deadline = time.monotonic() + 300
    while _count(db, where, what) < at_least:
        if run.poll() is not None or time.monotonic() > deadline:
            run.kill()
            _, err = run.communicate()
            pytest.fail(f"the run ended before {at_least} attempts: {err[-2000:]}")
        time.sleep(0.3)


def _wait_for_a_prover(node: Node, run: subprocess.Popen[str]) -> None:
    """Until a ``coqtop`` runs under ``node``: the driver has sent it work."""
    deadline = time.monotonic() + 120
    while not any(_is_coqtop(pid) for pid in node.pids()):
        if run.poll() is not None or time.monotonic() > deadline:
            run.kill()
            _, err = run.communicate()
            pytest.fail(f"no prover ever ran on node {node.name}: {err[-2000:]}")
        time.sleep(0.2)


def _is_coqtop(pid: int) -> bool:
    try:
        return psutil.Process(pid).name().startswith("coqtop")
    except psutil.Error:
        return False


def _no_duplicates(db: Path) -> None:
    with sqlite3.connect(db) as connection:
        keys = connection.execute(
            "SELECT attempt_key, count(*) FROM attempts GROUP BY attempt_key HAVING count(*) > 1"
        ).fetchall()
        proofs = connection.execute(
            "SELECT goal_id, count(*) FROM proofs GROUP BY goal_id HAVING count(*) > 1"
        ).fetchall()
    assert keys == []
    assert proofs == []


def _each_goal_once(report: dict[str, object], expected: int) -> list[dict[str, str]]:
    files: list[dict[str, object]] = report["files"]  # type: ignore[assignment]
    goals = [g for f in files for g in f["goals"]]  # type: ignore[attr-defined]
    named = {(f["path"], g["name"]) for f in files for g in f["goals"]}  # type: ignore[attr-defined]
    assert len(goals) == expected
    assert len(named) == expected
    assert all(g["outcome"] in ("proved", "failed", "timeout", "rejected") for g in goals)
    return goals


def test_a_node_killed_mid_run_on_three_nodes_changes_nothing_in_the_result(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    # quick tactics (profile 0): the two runs must prove the same lemmas, which
    # budget-bound search under different load need not; search on Ray is tested below.
    # Coq's Timeout counts wall time: a 2 s tactic timeout, and each of the three nodes
    # held to half the machine, keep a loaded machine from timing out a quick tactic
    quick = ("--profile", "0", "--tactic-timeout", "2")
    # half of the bank (66 lemmas; the worker-kill test below takes the other half)
    files = ("BankList", "BankOption")
    local = _fill(_bank_copy(tmp_path / "local", files), tmp_path / "local.db", *quick)
    local_out, local_err = local.communicate(timeout=900)
    assert local.returncode == 0, local_err[-2000:]
    db = tmp_path / "ray.db"
    remote = _fill(
        _bank_copy(tmp_path / "ray", files),
        db,
        *quick,
        "--executor",
        "ray",
        "--ray-address",
        cluster.address,
        cpu="0.5",
    )
    # kill a node that is not the head, with its raylet and its workers, mid-run, once it
    # works (a prover runs under it): every node gets work, the victim included
    _wait_for_attempts(db, remote, 25)
    victim = cluster.nodes[1]
    _wait_for_a_prover(victim, remote)
    killed = cluster.kill_node(victim)
    assert killed
    at_kill = _count(db)
    ray_out, ray_err = remote.communicate(timeout=900)
    assert remote.returncode == 0, ray_err[-2000:]
    assert _count(db) > at_kill  # the run went on after the kill
    report = json.loads(ray_out)
    _each_goal_once(report, 66)
    _no_duplicates(db)
    by_local, by_ray = _proved(json.loads(local_out)), _proved(report)
    assert len(by_local) >= 40
    assert by_ray == by_local
    for path in sorted((tmp_path / "ray").glob("*.v")):
        assert coqc_ok(path, "-Q", str(tmp_path / "ray"), "Bank")
    with sqlite3.connect(db) as connection:
        (summary,) = connection.execute("SELECT summary FROM runs").fetchone()
    nodes = {n["address"].rsplit(":", 1)[1]: n for n in json.loads(summary)["nodes"]}
    assert len(nodes) == 3
    # the killed one is reported lost (its attempts in flight were sent again: the results
    # above are the local run's, nothing twice); the others worked and took its files
    lost = [port for port, n in nodes.items() if n["lost"]]
    assert lost == [str(victim.node_manager_port)], nodes
    assert all(n["attempts"] > 0 for port, n in nodes.items() if port not in lost), nodes
    lost = nodes[str(victim.node_manager_port)]
    assert lost["lost"]
    survivors = [n for port, n in nodes.items() if port != str(victim.node_manager_port)]
    assert not any(n["lost"] for n in survivors)
    assert "is gone" in ray_err
    assert all(0.0 <= n["warm_share"] <= 1.0 for n in nodes.values())
    assert any(n["warm_share"] > 0 for n in survivors)


def test_search_runs_on_a_ray_worker(ray_cluster: str, tmp_path: Path) -> None:
    folder = tmp_path / "two"
    folder.mkdir()
    path = folder / "Two.v"
    path.write_text(TWO_STEPS, encoding="utf-8")
    run = _fill(folder, tmp_path / "l.db", "--executor", "ray", "--ray-address", ray_cluster)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-2000:]
    (goal,) = [g for f in json.loads(out)["files"] for g in f["goals"]]
    # no quick tactic proves it (tests/test_strategies_strong.py); a two-step proof does, found
    # on a Ray worker by the search or by the rewrite chain with the file's two axioms
    assert goal["outcome"] == "proved"
    assert goal["strategy"] in ("search", "rewrite")
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
    folder = _bank_copy(tmp_path / "bank", ("BankNat", "BankBool"))
    db = tmp_path / "ledger.db"
    run = _fill(folder, db, "--profile", "0", "--executor", "ray", "--ray-address", ray_cluster)
    # wait until attempts are being recorded, then kill the worker processes mid-run
    _wait_for_attempts(db, run, 15)
    killed = _worker_pids()
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    assert killed, "no Ray worker process was found to kill"
    out, err = run.communicate(timeout=900)
    assert run.returncode == 0, err[-2000:]
    assert out.lstrip().startswith("{"), (out[:1000], err[-2000:])
    goals = _each_goal_once(json.loads(out), 69)
    _no_duplicates(db)
    assert len([g for g in goals if g["outcome"] == "proved"]) >= 50
    # the replacement workers are new processes
    assert set(_worker_pids()).isdisjoint(killed)


def _fingerprints(db: Path, query: str) -> set[str]:
    with sqlite3.connect(db) as connection:
        return {row[0] for row in connection.execute(query)}


def test_a_driver_killed_mid_run_resumes_from_the_ledger_without_searching_again(
    ray_cluster: str, tmp_path: Path
) -> None:
    folder = _bank_copy(tmp_path / "bank", ("BankNat", "BankBool"))
    db = tmp_path / "ledger.db"
    args = ("--profile", "0", "--executor", "ray", "--ray-address", ray_cluster)
    first = _fill(folder, db, *args)
    # two holes can share a statement (one fingerprint), and a goal can have more than one
    # candidate row: wait for distinct fingerprints, which is what is asserted below
    _wait_for_attempts(db, first, 12, "outcome = 'candidate'", "DISTINCT fingerprint")
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    found = _fingerprints(db, "SELECT fingerprint FROM attempts WHERE outcome = 'candidate'")
    found |= _fingerprints(db, "SELECT fingerprint FROM proofs")
    assert len(found) >= 12
    holes = sum(p.read_text(encoding="utf-8").count("Admitted.") for p in folder.glob("*.v"))
    second = _fill(folder, db, *args)
    out, err = second.communicate(timeout=900)
    assert second.returncode == 0, err[-2000:]
    report = json.loads(out)
    with sqlite3.connect(db) as connection:
        ((run_id,),) = connection.execute("SELECT max(id) FROM runs").fetchall()
    searched_again = _fingerprints(db, f"SELECT fingerprint FROM attempts WHERE run_id = {run_id}")
    # no fingerprint with a proof found before the kill was searched again
    assert not (found & searched_again)
    assert searched_again  # the rest was searched
    # the goals proved before the kill were replayed from the ledger (their files were
    # not written yet); every hole left is reported once
    goals = _each_goal_once(report, holes)
    assert {g["strategy"] for g in goals} & {"candidate-replay", "ledger-replay"}
    assert _proved_on_disk(folder) >= 50
    _no_duplicates(db)
    for path in sorted(folder.glob("*.v")):
        assert coqc_ok(path, "-Q", str(folder), "Bank")


def _proved_on_disk(folder: Path) -> int:
    """Holes of the bank copies that are no longer holes (written by a run)."""
    before = sum(
        (BANK / "coq" / p.name).read_text(encoding="utf-8").count("Admitted.")
        for p in folder.glob("*.v")
    )
    after = sum(p.read_text(encoding="utf-8").count("Admitted.") for p in folder.glob("*.v"))
    return before - after
