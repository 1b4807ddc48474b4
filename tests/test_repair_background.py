"""`orch bg` repairs the proofs an edit broke, with real Coq and a real file watcher."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .conftest import coqc_ok
from .test_repair import NUM, RENAMED

#: before the edit: ``plus_zero_r`` has its old name, and ``twice`` checks
BEFORE = RENAMED.replace("plus_n_zero", "plus_zero_r")
#: a hole after the broken proof: the file does not compile before its first hole
WITH_HOLE = RENAMED + "Lemma h : forall n, plus zero n = n.\nAdmitted.\n"

Start = Callable[[Path, Path], Path]


@pytest.fixture
def start_bg(tmp_path: Path) -> Iterator[Start]:
    """Start ``orch bg`` on a folder with its stderr in a log; returns the log.
    Whatever still runs at the end is killed with its process group."""
    started: list[subprocess.Popen[bytes]] = []

    def start(folder: Path, log: Path) -> Path:
        with log.open("wb") as handle:
            command = [sys.executable, "-m", "proof_orchestrator.cli", "bg", str(folder)]
            process = subprocess.Popen(
                [*command, "--duration", "60", "--budget", "3", "--db", str(tmp_path / "l.sqlite")],
                stdout=subprocess.DEVNULL,
                stderr=handle,
                start_new_session=True,
            )
        started.append(process)
        return log

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        assert process.returncode is not None


def _wait(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_an_edit_that_breaks_a_proof_is_repaired_while_bg_runs(
    tmp_path: Path, start_bg: Start
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    path = project / "A.v"
    path.write_text(BEFORE, encoding="utf-8")
    assert coqc_ok(path)
    log = start_bg(project, tmp_path / "bg.log")
    assert _wait(lambda: "waiting for changes" in log.read_text(), 40), log.read_text()
    path.write_text(RENAMED, encoding="utf-8")  # the rename breaks ``twice``
    assert _wait(lambda: "plus_zero_r" not in path.read_text(encoding="utf-8"), 40), log.read_text()
    # the file is written inside the repair pass; its line is logged once the pass ends
    line = "broken proof A.v:5 twice (unknown_reference): repaired"
    assert _wait(lambda: line in log.read_text(), 20), log.read_text()
    written = path.read_text(encoding="utf-8")
    assert written.startswith(RENAMED[: RENAMED.index("Proof. intros k.")])
    assert coqc_ok(path)


def test_a_file_broken_before_its_first_hole_is_repaired_then_filled(
    tmp_path: Path, start_bg: Start
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    path = project / "A.v"
    path.write_text(WITH_HOLE, encoding="utf-8")

    def repaired_and_filled() -> bool:
        text = path.read_text(encoding="utf-8")
        return "plus_zero_r" not in text and "Admitted." not in text

    log = start_bg(project, tmp_path / "bg.log")
    assert _wait(repaired_and_filled, 50), log.read_text()
    text = path.read_text(encoding="utf-8")
    assert text.startswith(NUM)
    assert "Lemma h : forall n, plus zero n = n." in text
    assert coqc_ok(path)
