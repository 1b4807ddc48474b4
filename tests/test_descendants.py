"""The descendant meter finds a prover's helpers from its own ``/proc`` files."""

from __future__ import annotations

import subprocess
import time

import psutil

from proof_orchestrator.provers.process import _descendants


def test_descendants_are_the_children_and_grandchildren_psutil_finds() -> None:
    # a shell with two children, one of which has a child of its own
    script = "sleep 5 & (sleep 5 & wait) & wait"
    shell = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    try:
        root = psutil.Process(shell.pid)
        deadline = time.monotonic() + 5
        while len(root.children(recursive=True)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        expected = {p.pid for p in root.children(recursive=True)}
        assert len(expected) == 3
        assert {p.pid for p in _descendants(root)} == expected
    finally:
        for process in psutil.Process(shell.pid).children(recursive=True):
            process.kill()
        shell.kill()
        shell.wait()
    assert shell.returncode is not None
