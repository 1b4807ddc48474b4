"""Count the whole process tree of a benchmarked command, orphans included.

CoqHammer's ``htimeout`` starts a session of its own; when the process that
started it ends first, its ATP is orphaned. Linux gives an orphan to the
nearest ancestor that asked for it (``PR_SET_CHILD_SUBREAPER``), else to init.
Given to init, its CPU reaches no counter of the benchmarked command's
(``/usr/bin/time`` and ``getrusage`` count only what the command's own
processes reaped), though the command's provers started it.

A benchmark that calls :func:`become_subreaper` before it starts the command
gets those orphans as its own children; :func:`reap_orphans`, called while the
command runs and once it has ended, waits for each one that has ended, so its
CPU lands in the benchmark's ``RUSAGE_CHILDREN`` with the command's. Every
process the command started is then counted once, by the kernel.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ORPHAN_CPU", "TreeRun", "become_subreaper", "reap_orphans", "run_counting_orphans"]

#: ``prctl`` option: orphaned descendants become this process's children
PR_SET_CHILD_SUBREAPER = 36

#: CPU seconds of the orphans reaped here, by command name (CoqHammer's ATPs that outlived
#: their coqtop, say): they are in the process tree's CPU, and in no figure orch reports
ORPHAN_CPU: dict[str, float] = {}


def become_subreaper() -> bool:
    """Make orphaned descendants children of this process (Linux only; False elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _children() -> list[int]:
    found: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def reap_orphans(keep: int | None) -> int:
    """Reap this process's ended children other than ``keep``; how many children are left.

    Each one reaped adds its CPU to :data:`ORPHAN_CPU` under its command name."""
    left = 0
    for pid in _children():
        if pid == keep:
            continue
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            name = "?"
        try:
            done, _, usage = os.wait4(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        if done == 0:
            left += 1
        else:
            ORPHAN_CPU[name] = ORPHAN_CPU.get(name, 0.0) + usage.ru_utime + usage.ru_stime
    return left


@dataclass
class TreeRun:
    """A command's exit code and output, with the CPU of its whole tree (orphans too)."""

    returncode: int
    stdout: str
    stderr: str
    wall_seconds: float
    #: user + system CPU of the command and every descendant, reaped here or below
    tree_cpu_seconds: float
    #: whether the orphans came here (False: they went to init and are not counted)
    subreaper: bool
    #: CPU of the orphans reaped here, by command name
    orphans: dict[str, float] = field(default_factory=dict)


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def run_counting_orphans(cmd: Sequence[str], cwd: Path, *, settle_seconds: float = 30.0) -> TreeRun:
    """Run ``cmd`` to its end, reaping orphans every half second; the tree's CPU.

    After the command ends, orphans still running get ``settle_seconds`` to end
    (an ATP at its own time limit) before the figure is read.
    """
    subreaper = become_subreaper()
    reap_orphans(None)  # what earlier commands left is not this one's
    ORPHAN_CPU.clear()
    before = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN))
    started = time.monotonic()
    process = subprocess.Popen(
        list(cmd), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    # read the pipes in threads so that a chatty command never blocks on a full pipe
    output: dict[str, str] = {}

    def drain(name: str, stream: object) -> None:
        output[name] = stream.read()  # type: ignore[attr-defined]

    readers = [
        threading.Thread(target=drain, args=("stdout", process.stdout), daemon=True),
        threading.Thread(target=drain, args=("stderr", process.stderr), daemon=True),
    ]
    for reader in readers:
        reader.start()
    while process.poll() is None:
        reap_orphans(process.pid)
        time.sleep(0.5)
    wall = time.monotonic() - started
    for reader in readers:
        reader.join()
    deadline = time.monotonic() + settle_seconds
    while reap_orphans(None) and time.monotonic() < deadline:
        time.sleep(0.2)
    after = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN))
    return TreeRun(
        returncode=process.returncode,
        stdout=output.get("stdout", ""),
        stderr=output.get("stderr", ""),
        wall_seconds=wall,
        tree_cpu_seconds=after - before,
        subreaper=subreaper,
        orphans=dict(ORPHAN_CPU),
    )
