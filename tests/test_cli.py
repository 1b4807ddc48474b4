"""The orch command: clear errors, interruption, crash recovery."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from proof_orchestrator.cli import app, common

from .conftest import coqc_ok

runner = CliRunner()

MANY = "Require Import Arith.\nLemma first_easy : forall n : nat, n = n.\nAdmitted.\n" + "".join(
    f"Lemma impossible_{k} : forall n m : nat, n + m = m + n + {k}.\nAdmitted.\n"
    for k in range(1, 40)  # enough work that an interrupt lands mid-run
)


def _as_from_a_terminal() -> None:
    # A shell without job control starts background commands with SIGINT
    # ignored, and the child inherits that (so `make test &` would make every
    # interrupt here a no-op); a user at a terminal has the default disposition.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def orch(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "proof_orchestrator.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_from_a_terminal,
    )


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """The process's output once it exits; killed (and the test failed) past ``timeout``."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise


def wait_for_attempts(db: Path, at_least: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(db) as connection:
                    (count,) = connection.execute("SELECT count(*) FROM attempts").fetchone()
                if count >= at_least:
                    return
            except sqlite3.OperationalError:
                pass
        time.sleep(0.1)
    raise AssertionError(f"no {at_least} attempts recorded in {db} within {timeout}s")


def coqtops_in(folder: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["name", "cwd"]):
        try:
            if (
                proc.info["name"]
                and "coqtop" in proc.info["name"]
                and proc.info["cwd"] == str(folder)
            ):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def test_missing_path_exits_2_with_a_message(tmp_path: Path) -> None:
    result = runner.invoke(app, ["fill", str(tmp_path / "missing.v")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_missing_coqtop_exits_2_and_says_what_to_install(tmp_path: Path) -> None:
    path = tmp_path / "A.v"
    path.write_text("Lemma a : True.\nAdmitted.\n")
    result = runner.invoke(app, ["fill", str(path)], env={"PATH": str(tmp_path)})
    assert result.exit_code == 2
    assert "apt-get install coq" in result.output


def test_unusable_ledger_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "A.v"
    path.write_text("Lemma a : True.\nAdmitted.\n")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    result = runner.invoke(app, ["fill", str(path), "--db", str(blocker / "ledger.sqlite")])
    assert result.exit_code == 2
    assert "cannot open the ledger" in result.output


def test_fill_json_and_stats(tmp_path: Path) -> None:
    path = tmp_path / "A.v"
    path.write_text("Lemma a : True.\nAdmitted.\n")
    db = str(tmp_path / "l.sqlite")
    result = runner.invoke(app, ["fill", str(path), "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    assert '"proved": 1' in result.stdout
    assert '"verify_compiles": 1' in result.stdout  # one compile checks the file's batch
    stats = runner.invoke(app, ["stats", str(tmp_path), "--db", db, "--json"])
    assert stats.exit_code == 0
    assert '"proofs": 1' in stats.stdout


def test_log_file_records_the_prover_processes(tmp_path: Path) -> None:
    path = tmp_path / "A.v"
    path.write_text("Lemma a : True.\nAdmitted.\n")
    log = tmp_path / "debug.log"
    proc = orch("--log-file", str(log), "fill", str(path), "--db", str(tmp_path / "l.sqlite"))
    finish(proc, timeout=120)
    assert proc.returncode == 0
    text = log.read_text(encoding="utf-8")
    assert "proof_orchestrator.coq.pool DEBUG coqtop" in text
    # the whole prefix (the statement and the session's settings), into a new process
    assert re.search(r"coqtop \d+ loaded (\d+) of \1 sentences \(held 0, warm False\)", text)


def test_doctor_lists_coq() -> None:
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0
    assert "coqtop" in result.stdout
    assert "8.16" in result.stdout


def test_ctrl_c_stops_cleanly_and_the_next_run_resumes(tmp_path: Path) -> None:
    path = tmp_path / "Many.v"
    path.write_text(MANY)
    db = tmp_path / "l.sqlite"
    # the default profile: search is among the attempts in flight
    proc = orch("fill", str(path), "--db", str(db))
    wait_for_attempts(db, 3)
    with sqlite3.connect(db) as connection:
        (live,) = connection.execute("SELECT count(*) FROM live_runs").fetchone()
    assert live == 1  # the running command shows its live state
    proc.send_signal(signal.SIGINT)
    _, err = finish(proc, 60)
    assert proc.returncode == 130, err
    assert "Interrupted" in err
    assert path.read_text() == MANY  # nothing half-written
    assert coqtops_in(tmp_path) == []
    with sqlite3.connect(db) as connection:
        statuses = [row[0] for row in connection.execute("SELECT status FROM runs")]
        (live,) = connection.execute("SELECT count(*) FROM live_runs").fetchone()
    assert statuses == ["interrupted"]
    assert live == 0  # cleared by the interrupted run
    # the next run finishes the work (quick tactics: 39 lemmas are false)
    done = orch("fill", str(path), "--db", str(db), "--profile", "0")
    finish(done, 300)
    assert done.returncode == 0
    assert "Lemma first_easy : forall n : nat, n = n.\nProof.\n" in path.read_text()
    assert coqc_ok(path)


def test_kill_9_loses_nothing_but_attempts_in_flight(tmp_path: Path) -> None:
    path = tmp_path / "Many.v"
    path.write_text(MANY)
    db = tmp_path / "l.sqlite"
    proc = orch("fill", str(path), "--db", str(db))
    wait_for_attempts(db, 3)
    os.kill(proc.pid, signal.SIGKILL)
    finish(proc, 30)
    assert path.read_text() == MANY
    # orphaned coqtops see EOF on their input and exit by themselves
    deadline = time.monotonic() + 20
    while coqtops_in(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert coqtops_in(tmp_path) == []
    with sqlite3.connect(db) as connection:
        (attempts,) = connection.execute("SELECT count(*) FROM attempts").fetchone()
    assert attempts >= 3  # committed attempts survive the crash
    done = orch("fill", str(path), "--db", str(db), "--profile", "0")
    finish(done, 300)
    assert done.returncode == 0
    assert coqc_ok(path)


def test_live_view_counts_wins_per_strategy() -> None:
    from rich.console import Console

    from proof_orchestrator.cli.progress import Tracker
    from proof_orchestrator.goals import Goal, HoleKind, Outcome
    from proof_orchestrator.run.pipeline import GoalReport

    tracker = Tracker("fill")
    tracker.files([(Path("A.v"), 2)])
    goal = Goal(Path("A.v"), 1, "a", "Lemma a : True.", HoleKind.ADMITTED, "fp")
    tracker.goal(GoalReport(goal, Outcome.PROVED, "micro", ("exact I.",), 1, 0.5))
    tracker.goal(GoalReport(goal, Outcome.FAILED, "induction", (), 3, 1.5))
    console = Console(width=100, record=True)
    console.print(tracker)
    text = console.export_text()
    assert "proved 1" in text
    assert "micro" in text
    assert "induction" in text
    assert tracker.wins == {"micro": 1}


def test_a_bad_setting_given_as_a_flag_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "A.v"
    path.write_text("Lemma a : True.\nAdmitted.\n")
    result = runner.invoke(app, ["fill", str(path), "--cpu-target", "2"])
    assert result.exit_code == 2
    assert "cpu_target must be between" in result.output


def test_config_shows_where_each_value_comes_from(tmp_path: Path) -> None:
    (tmp_path / "orch.toml").write_text("seed = 7\n")
    result = runner.invoke(app, ["config", str(tmp_path), "--json"], env={"ORCH_PORTFOLIO": "3"})
    assert result.exit_code == 0
    assert '"seed": {' in result.stdout
    assert "orch.toml" in result.stdout
    assert "env ORCH_PORTFOLIO" in result.stdout


def test_config_shows_the_llm_table_of_pyproject_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.orch]\nseed = 7\n[tool.orch.llm]\nmodel = "m"\napi_key = "secret"\n'
    )
    result = runner.invoke(app, ["config", str(tmp_path), "--json"], env={"ORCH_LLM_MODEL": ""})
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["llm.model"] == {"value": "", "source": "env ORCH_LLM_MODEL"}
    assert shown["llm.api_key"]["source"].endswith("pyproject.toml [tool.orch.llm]")
    assert "secret" not in result.stdout
    # the console was made when the CLI was imported: COLUMNS now would not reach it
    monkeypatch.setattr(common.out, "width", 200)
    table = runner.invoke(app, ["config", str(tmp_path)])
    assert "pyproject.toml [tool.orch.llm]" in table.stdout
