"""Clean stops: verification's scratch folders never outlive the process that made them.

Verification compiles candidate files in ``.orch/tmp/verify-<pid>-<random>/``
(:mod:`proof_orchestrator.project.statedir`). A stop by SIGTERM removes the
folder; a ``kill -9`` leaves it, and the next run in the project sweeps it.
The runs get a private ``TMPDIR``, so a folder leaked into the system's temp
folder (where verification used to work) would be seen too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from proof_orchestrator.project import statedir
from proof_orchestrator.project.statedir import (
    ScratchFolder,
    in_state_dir,
    new_scratch,
    scratch_dir,
    scratch_root,
    sweep_scratch,
)

from .conftest import BANK

ORCH = Path(sys.executable).with_name("orch")


# -- the scratch folders themselves ---------------------------------------------------------


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert not psutil.pid_exists(proc.pid)
    return proc.pid


@pytest.fixture
def private_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp folder, as this process sees it, is a fresh folder of the test."""
    folder = tmp_path / "systemp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setattr(statedir, "_swept", set())
    return folder


def test_a_scratch_folder_is_under_orch_and_removed_however_the_block_ends(
    tmp_path: Path, private_temp: Path
) -> None:
    with scratch_dir(tmp_path) as folder:
        assert folder.parent == scratch_root(tmp_path) == tmp_path / ".orch" / "tmp"
        assert folder.name.startswith(f"verify-{os.getpid()}-")
        (folder / "A.vo").write_bytes(b"x")
    assert not folder.exists()
    assert (tmp_path / ".orch" / ".gitignore").exists()
    with pytest.raises(RuntimeError), scratch_dir(tmp_path) as folder:
        raise RuntimeError("boom")
    assert not folder.exists()

    made: list[Path] = []

    async def work(inside: asyncio.Event) -> None:
        with scratch_dir(tmp_path) as inner:
            made.append(inner)
            inside.set()
            await asyncio.sleep(60)

    async def cancel() -> None:
        inside = asyncio.Event()
        task = asyncio.create_task(work(inside))
        await inside.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel())
    assert len(made) == 1
    assert not made[0].exists()
    assert list(private_temp.iterdir()) == []


def test_a_kept_folder_goes_on_close_or_when_its_owner_is_dropped(
    tmp_path: Path, private_temp: Path
) -> None:
    del private_temp
    kept = ScratchFolder(tmp_path)
    build = kept.subfolder("build-")
    assert build.parent == kept.path()
    assert build.is_dir()
    kept.close()
    assert not build.parent.exists()
    again = kept.path()  # used again: a new folder
    assert again.is_dir()
    assert again != build.parent
    del kept  # never closed: the finalizer removes it
    assert not again.exists()


def test_the_sweep_removes_dead_processes_folders_only(tmp_path: Path, private_temp: Path) -> None:
    root = scratch_root(tmp_path)
    root.mkdir(parents=True)
    dead = _dead_pid()
    gone = root / f"verify-{dead}-0123abcd"
    (gone / "build-x").mkdir(parents=True)
    (gone / "build-x" / "A.v").write_text("Lemma a : True. Admitted.\n")
    mine = root / f"verify-{os.getpid()}-0123abcd"
    mine.mkdir()
    parent = root / f"verify-{os.getppid()}-0123abcd"
    parent.mkdir()
    other = root / "notes"  # not named like a scratch folder: never touched
    other.mkdir()
    in_temp = private_temp / f"orch-verify-{dead}-89abcdef"
    in_temp.mkdir()
    unrelated = private_temp / f"verify-{dead}-89abcdef"  # in the system temp only orch-*
    unrelated.mkdir()
    assert sorted(sweep_scratch(tmp_path)) == sorted([gone, in_temp])
    assert not gone.exists()
    assert not in_temp.exists()
    assert all(p.exists() for p in (mine, parent, other, unrelated))


def test_the_system_temp_folder_is_used_when_the_project_disk_is_nearly_full(
    tmp_path: Path, private_temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(statedir, "MIN_FREE_BYTES", 1 << 62)
    folder = new_scratch(tmp_path)
    try:
        assert folder.parent == private_temp
        assert folder.name.startswith(f"orch-verify-{os.getpid()}-")
        assert not (tmp_path / ".orch").exists()  # nothing written on the full disk
    finally:
        shutil.rmtree(folder)


def test_state_paths_are_recognised() -> None:
    assert in_state_dir("/home/u/proj/.orch/tmp/verify-1-0123abcd/build-x/A.v")
    assert not in_state_dir("/home/u/proj/theories/A.v")


# -- stopping real runs -----------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of one bank file (42 holes) in a project of its own."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copyfile(BANK / "coq" / "BankNat.v", root / "BankNat.v")
    (root / "_CoqProject").write_text("-Q . Bank\nBankNat.v\n")
    return root


@pytest.fixture
def run_temp(tmp_path: Path) -> Path:
    """The TMPDIR of the runs (empty before them)."""
    folder = tmp_path / "runtemp"
    folder.mkdir()
    return folder


def _start(command: str, project: Path, run_temp: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(ORCH), command, str(project), "--profile", "0"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "TMPDIR": str(run_temp)},
            start_new_session=True,
        )


def _scratch_folders(project: Path) -> list[Path]:
    root = scratch_root(project)
    return sorted(root.glob("verify-*")) if root.exists() else []


def _compiling(folder: Path) -> bool:
    """Does ``folder`` hold a build whose ``coqc`` has not finished (the source, no ``.vo``)?"""
    return any(
        (build / "BankNat.v").exists() and not (build / "BankNat.vo").exists()
        for build in folder.glob("build-*")
    )


def _wait_for_verification(
    project: Path, proc: subprocess.Popen[bytes], log: Path, timeout: float = 180
) -> Path:
    """The scratch folder of ``proc`` while ``coqc`` compiles a candidate in it.

    Stopping the run then is the case that used to leak: the folder of a
    compilation cut short was not yet known to the verifier.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for folder in _scratch_folders(project):
            if folder.name.startswith(f"verify-{proc.pid}-") and _compiling(folder):
                return folder
        assert proc.poll() is None, log.read_text()
        time.sleep(0.02)
    raise AssertionError(f"no verification started within {timeout}s:\n{log.read_text()}")


def _leftovers(run_temp: Path) -> list[str]:
    return sorted(p.name for p in run_temp.iterdir() if p.name.startswith("orch-"))


@pytest.fixture
def stop_all() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes the test started: whatever is still running at the end is killed."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.slow
def test_sigterm_to_orch_bg_mid_verification_leaves_no_scratch_folder(
    project: Path, run_temp: Path, tmp_path: Path, stop_all: list[subprocess.Popen[bytes]]
) -> None:
    log = tmp_path / "bg.log"
    bg = _start("bg", project, run_temp, log)
    stop_all.append(bg)
    folder = _wait_for_verification(project, bg, log)
    bg.send_signal(signal.SIGTERM)  # the documented way to stop a background run
    assert bg.wait(timeout=60) == 130, log.read_text()
    assert "Interrupted" in log.read_text()
    assert not folder.exists()
    assert _scratch_folders(project) == []
    assert _leftovers(run_temp) == []


@pytest.mark.slow
def test_a_folder_left_by_kill_9_is_swept_by_the_next_run(
    project: Path, run_temp: Path, tmp_path: Path, stop_all: list[subprocess.Popen[bytes]]
) -> None:
    log = tmp_path / "fill.log"
    first = _start("fill", project, run_temp, log)
    stop_all.append(first)
    folder = _wait_for_verification(project, first, log)
    provers = psutil.Process(first.pid).children(recursive=True)
    first.send_signal(signal.SIGKILL)  # no cleanup can run
    first.wait()
    for prover in provers:  # orphans would go by themselves, in their own time
        with contextlib.suppress(psutil.NoSuchProcess):
            prover.kill()
    psutil.wait_procs(provers, timeout=30)
    assert folder.exists()  # left behind, as kill -9 must
    assert any(folder.rglob("BankNat.v"))

    second = _start("fill", project, run_temp, log)
    stop_all.append(second)
    deadline = time.monotonic() + 120
    while folder.exists() and time.monotonic() < deadline:
        assert second.poll() is None, log.read_text()
        time.sleep(0.1)
    assert not folder.exists(), "the next run did not sweep the dead run's folder"
    # its own folder comes and goes as usual
    own = _wait_for_verification(project, second, log)
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=60) == 130, log.read_text()
    assert not own.exists()
    assert _scratch_folders(project) == []
    assert _leftovers(run_temp) == []
