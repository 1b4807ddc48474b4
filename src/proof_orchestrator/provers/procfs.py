"""A prover's processes read straight from ``/proc``: CPU, memory and identity.

The orchestrator reads these counters tens of thousands of times in a run
(after every prover reply, ten times a second while a request runs, once a
tick for the CPU governor). psutil builds a ``Process`` by reading the
process's ``stat`` and the machine's ``/proc/stat`` (for the boot time), and
opens, reads and closes a file for every counter: about 155 µs for a new
handle and its CPU, 43 µs for the CPU of a known one. One ``read`` of
``/proc/PID/stat`` takes 13 µs, and a ``pread`` of a file kept open less.
Where ``/proc`` cannot be read, everything here falls back to psutil.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field

import psutil

__all__ = ["CpuReader", "Helper", "helper", "rss_bytes"]

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

#: indices in the fields of ``/proc/PID/stat`` after the command name (0 is the state)
_UTIME, _STIME, _CUTIME, _CSTIME, _STARTTIME = 11, 12, 13, 14, 19


def _fields(data: bytes) -> list[bytes]:
    """The fields after the command name, which is in parentheses and may hold spaces."""
    return data[data.rindex(b")") + 2 :].split()


def _read(path: str) -> bytes:
    """One read of a small ``/proc`` file (raises ``OSError`` as ``open`` and ``read`` do)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def _stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` (see :func:`_fields`); None when it cannot be read."""
    try:
        data = _read(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = _fields(data) if data else []
    return fields if len(fields) > _STARTTIME else None


class CpuReader:
    """CPU of one process and of the children it reaped, read again and again cheaply.

    A prover's CPU is read after every reply. This keeps ``/proc/PID/stat``
    open and re-reads it from offset 0, which the kernel answers with fresh
    counters. Where ``/proc`` is not there, it asks psutil.
    """

    def __init__(self, process: psutil.Process) -> None:
        self.process = process
        self._fd: int | None = None
        try:
            self._fd = os.open(f"/proc/{process.pid}/stat", os.O_RDONLY)
        except OSError:
            self._fd = None

    def seconds(self) -> tuple[float, float] | None:
        """``(own, reaped children)`` CPU seconds, user + system; None once the process is gone."""
        if self._fd is None:
            try:
                t = self.process.cpu_times()
            except psutil.Error:
                return None
            return t.user + t.system, t.children_user + t.children_system
        try:
            data = os.pread(self._fd, 4096, 0)
        except OSError:
            return None  # reaped: the kernel no longer answers for this pid
        if not data:
            return None
        fields = _fields(data)
        own = int(fields[_UTIME]) + int(fields[_STIME])
        reaped = int(fields[_CUTIME]) + int(fields[_CSTIME])
        return own / _CLOCK_TICKS, reaped / _CLOCK_TICKS

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@dataclass(frozen=True, slots=True)
class Helper:
    """A process below a prover (CoqHammer's ATPs), named by its pid and its start
    time: a pid alone may name another process once this one is gone."""

    pid: int
    #: its start, in clock ticks after boot (from ``/proc``) or psutil's create time
    started: float
    #: the psutil handle where ``/proc`` cannot be read; None on Linux
    handle: psutil.Process | None = field(default=None, compare=False)

    def cpu_seconds(self, *, reaped: bool = False) -> float | None:
        """Its own CPU (user + system) now, with ``reaped`` also that of the children
        it has reaped (an ATP under ``htimeout``); None once it is gone."""
        if self.handle is not None:
            try:
                t = self.handle.cpu_times()
            except psutil.Error:
                return None
            return t.user + t.system + (t.children_user + t.children_system if reaped else 0.0)
        fields = _stat(self.pid)
        if fields is None or float(fields[_STARTTIME]) != self.started:
            return None
        ticks = int(fields[_UTIME]) + int(fields[_STIME])
        if reaped:
            ticks += int(fields[_CUTIME]) + int(fields[_CSTIME])
        return ticks / _CLOCK_TICKS

    def kill(self) -> bool:
        """SIGKILL it, unless it is gone (or its pid names another process now)."""
        if self.handle is not None:
            try:
                self.handle.kill()
            except psutil.Error:
                return False
            return True
        fields = _stat(self.pid)
        if fields is None or float(fields[_STARTTIME]) != self.started:
            return False
        try:
            os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return False
        return True


def helper(pid: int) -> Helper | None:
    """The process ``pid`` as a :class:`Helper`; None when it is gone."""
    fields = _stat(pid)
    if fields is not None:
        return Helper(pid, float(fields[_STARTTIME]))
    try:
        handle = psutil.Process(pid)
        return Helper(pid, handle.create_time(), handle)
    except psutil.Error:
        return None


def rss_bytes(process: psutil.Process) -> int | None:
    """Resident memory of ``process`` in bytes (``/proc/PID/statm``); None when it is gone."""
    try:
        data = _read(f"/proc/{process.pid}/statm")
    except FileNotFoundError:
        return None
    except OSError:  # no /proc here
        try:
            return int(process.memory_info().rss)
        except psutil.Error:
            return None
    parts = data.split()
    return int(parts[1]) * _PAGE_SIZE if len(parts) > 1 else None
