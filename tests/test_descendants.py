"""The descendant meter and the CPU reader read a prover's own ``/proc`` files."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from proof_orchestrator.provers.process import (
    CpuReader,
    DescendantMeter,
    _descendants,
    descendants_cpu_seconds,
)
from proof_orchestrator.provers.procfs import helper, rss_bytes


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


def test_cpu_reader_gives_fresh_counters_that_agree_with_psutil_and_stops_at_reaping() -> None:
    # a child that burns CPU, then reaps a grandchild that burned some too
    script = (
        "import subprocess, time\n"
        "subprocess.run(['sh', '-c', 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'])\n"
        "end = time.process_time() + 0.5\n"
        "while time.process_time() < end: pass\n"
        "time.sleep(30)\n"
    )
    child = subprocess.Popen(["python3", "-c", script])
    try:
        process = psutil.Process(child.pid)
        reader = CpuReader(process)
        first = reader.seconds()
        assert first is not None
        reading = first
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            reading = reader.seconds()
            assert reading is not None
            if reading[0] >= 0.5:
                break
            time.sleep(0.05)
        assert reading is not None
        own, reaped = reading
        assert own >= 0.5 > first[0]  # the same open file gives new counters
        assert reaped > 0  # the grandchild's CPU, once reaped, counts as children's
        expected = process.cpu_times()
        assert abs(own - (expected.user + expected.system)) < 0.05
        assert abs(reaped - (expected.children_user + expected.children_system)) < 0.05
    finally:
        child.kill()
        child.wait()
    assert reader.seconds() is None  # reaped: no reading, never another process's
    reader.close()


def test_the_governor_counts_a_provers_busy_child_as_the_trees_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A prover whose child burns CPU (CoqHammer's ATP under coqtop): the child's time is
    the tree's while it runs, not "other work" (the bank read 96 of 303 seconds as the
    tree idle and the machine busy with someone else)."""
    from proof_orchestrator.scheduler import governor

    shell = subprocess.Popen(
        ["sh", "-c", "sh -c 'while :; do :; done' & sleep 30"], start_new_session=True
    )
    try:
        root = psutil.Process(shell.pid)
        monkeypatch.setattr(governor, "live_processes", lambda: [root])
        monkeypatch.setattr(governor, "busy_processes", lambda: [root])  # in a request
        before = descendants_cpu_seconds([root])
        meter = governor.CpuGovernor(0.5, 2, cpus=2)
        started = time.monotonic()
        while time.monotonic() - started < 1.5:
            time.sleep(0.25)
            meter.tick()
        sample = meter.sample()
        # the busy loop is the shell's child: its CPU is counted as ours (the shell
        # itself only sleeps; on a machine shared with other tests, a loose bound)
        assert descendants_cpu_seconds([root]) - before > 0.3
        assert sample.fraction > 0.1, sample
    finally:
        for process in psutil.Process(shell.pid).children(recursive=True):
            process.kill()
        shell.kill()
        shell.wait()


def test_a_helper_that_outlives_its_parent_is_stopped_and_its_cpu_counted(
    tmp_path: Path,
) -> None:
    """What CoqHammer's ``htimeout`` does: a helper in its own session whose parent
    exits goes on as an orphan, no longer a descendant of the prover."""
    marker = tmp_path / "helper.pid"
    burn = "while True: pass"
    middle = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', {burn!r}], start_new_session=True)\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(1.0)\n"  # then exit without waiting: the helper is orphaned
    )
    prover = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys, time\n"
            f"subprocess.run([sys.executable, '-c', {middle!r}])\ntime.sleep(60)",
        ],
        start_new_session=True,
    )
    helper: psutil.Process | None = None
    try:
        meter = DescendantMeter(psutil.Process(prover.pid))
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        meter.sample()  # seen while it is a descendant
        helper = psutil.Process(int(marker.read_text()))
        while time.monotonic() < deadline:  # until the middle process has exited
            if helper.pid not in {p.pid for p in _descendants(psutil.Process(prover.pid))}:
                break
            time.sleep(0.1)
        assert helper.pid not in {p.pid for p in _descendants(psutil.Process(prover.pid))}
        assert meter.stop_leftovers() == 1
        assert _ends(helper)
        assert meter.total() >= 0.3  # its CPU up to the kill counts
        assert prover.poll() is None  # the prover itself lives on
    finally:
        prover.kill()
        prover.wait()
        if helper is not None:
            with contextlib.suppress(psutil.Error):
                helper.kill()


def _ends(process: psutil.Process, seconds: float = 5.0) -> bool:
    """``process`` is gone (or a zombie nobody reaped yet) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_helper_reads_its_cpu_until_it_ends_and_a_gone_one_is_not_killed() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        found = helper(busy.pid)
        assert found is not None
        assert found.pid == busy.pid
        time.sleep(0.5)
        cpu = found.cpu_seconds()
        expected = psutil.Process(busy.pid).cpu_times()
        assert cpu is not None
        assert abs(cpu - (expected.user + expected.system)) < 0.05
        with_reaped = found.cpu_seconds(reaped=True)
        assert with_reaped is not None
        assert with_reaped >= cpu
        assert rss_bytes(psutil.Process(busy.pid)) == psutil.Process(busy.pid).memory_info().rss
        assert found.kill()
        busy.wait(timeout=10)
        assert found.cpu_seconds() is None
        assert not found.kill()
        assert helper(busy.pid) is None
    finally:
        with contextlib.suppress(ProcessLookupError):
            busy.kill()
        busy.wait(timeout=10)


def test_the_cpu_of_a_helper_s_ended_child_stays_in_the_tree() -> None:
    """An ATP reaped by its ``htimeout`` leaves its CPU in that parent's counters: the
    sum over the prover's descendants keeps it (it neither drops nor counts twice)."""
    busy = (
        "import time; end = time.process_time() + 0.6; "
        "all(iter(lambda: time.process_time() < end, False))"
    )
    inner = f"{sys.executable} -c '{busy}'; sleep 30"
    shell = subprocess.Popen(["sh", "-c", f'sh -c "{inner}"; sleep 30'])
    try:
        root = psutil.Process(shell.pid)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            names = [p.name() for p in root.children(recursive=True)]
            if "sleep" in names and not any("python" in n for n in names):
                break  # the busy child has ended and was reaped by the inner shell
            time.sleep(0.1)
        else:
            pytest.fail("the busy child did not end")
        assert descendants_cpu_seconds([root]) >= 0.5
    finally:
        for process in psutil.Process(shell.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                process.kill()
        shell.kill()
        shell.wait(timeout=10)
