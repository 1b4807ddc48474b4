"""``run_sync``: the launcher's synchronous door, with the same guarantees as ``spawn``."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from proof_orchestrator.errors import ProverHung
from proof_orchestrator.provers.process import run_sync


def test_output_code_and_input_come_back() -> None:
    script = "import sys; data = sys.stdin.read(); print(data.upper()); sys.exit(3)"
    run = run_sync([sys.executable, "-c", script], timeout=30, input_text="coq")
    assert (run.returncode, run.stdout.strip(), run.stderr) == (3, "COQ", "")


def test_the_child_has_its_own_session_and_the_memory_cap() -> None:
    # the cap lands right after the start (prlimit, no preexec_fn): read it a moment later
    script = (
        "import os, resource, time; time.sleep(0.5); "
        "print(os.getsid(0) == os.getpid(), resource.getrlimit(resource.RLIMIT_AS)[0])"
    )
    run = run_sync([sys.executable, "-c", script], timeout=30, memory_bytes=3 * 1024**3)
    own_session, cap = run.stdout.split()
    assert own_session == "True"
    assert int(cap) == 3 * 1024**3


def test_a_timeout_kills_the_whole_group_and_reaps_it(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    grandchild = "import time; time.sleep(60)"
    script = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', {grandchild!r}])\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    with pytest.raises(ProverHung):
        run_sync([sys.executable, "-c", script], timeout=2)
    assert time.monotonic() - started < 20
    pid = int(marker.read_text())
    deadline = time.monotonic() + 5
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    assert not alive, "the grandchild outlived the timeout"


def test_a_missing_executable_is_an_os_error() -> None:
    with pytest.raises(FileNotFoundError):
        run_sync([os.path.join("/nonexistent", "coqc")], timeout=5)
