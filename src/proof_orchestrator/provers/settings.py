"""The knobs of each prover backend, as plain data (defaults named here).

They live below the backends so that the run's options (:class:`~..run.reports.FillOptions`)
can carry them without importing a prover package.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil

__all__ = ["CoqSettings", "LeanSettings"]


@dataclass(frozen=True, slots=True)
class CoqSettings:
    """Knobs of the Coq backend, with their defaults."""

    coqtop: str = "coqtop"
    coqc: str = "coqc"
    #: seconds to wait for coqtop's first prompt
    start_timeout: float = 60.0
    #: per-sentence guard while loading a file's prefix (long Qed's live there)
    load_timeout: float = 600.0
    #: added to a tactic's timeout before the process is declared hung
    grace: float = 5.0
    #: a process serves at most this many sessions
    max_uses: int = 200
    #: a process above this resident size is retired after its session (one that has
    #: read CoqHammer's ATP library on the stdlib holds about 1.7 GiB)
    rss_cap: int = 3 * 1024**3
    #: idle processes kept per prover, besides the warm ones: enough for each file whose
    #: goals come in turn to keep the one that has loaded it
    max_idle: int = 8
    #: most resident memory of those idle processes together, MiB (None: a quarter of
    #: the machine's memory); one is always kept
    idle_memory_mb: int | None = None
    #: idle processes kept that hold a costly cache (CoqHammer's ATP library, about 10 CPU s
    #: and 1.7 GiB on the stdlib): as many as hammer attempts run at once on two cores
    max_warm: int = 2
    #: address-space cap of one coqtop, MiB (None: ``ORCH_PROVER_MEMORY_MB`` or 4 GiB)
    memory_mb: int | None = None

    def idle_memory_bytes(self) -> int:
        if self.idle_memory_mb is not None:
            return self.idle_memory_mb * 1024**2
        return int(psutil.virtual_memory().total // 4)


@dataclass(frozen=True, slots=True)
class LeanSettings:
    """Knobs of the Lean backend."""

    #: the REPL command line; None: ``ORCH_LEAN_REPL``, the ``orch lean setup`` record, ``repl``
    repl: tuple[str, ...] | None = None
    #: seconds for loading the header and the text before a declaration (Mathlib imports are slow)
    load_timeout: float = 900.0
    #: a tactic gets at least this many wall seconds before the REPL is declared hung
    tactic_floor: float = 10.0
    #: seconds for one whole-file check
    verify_timeout: float = 1800.0
    #: a REPL serves at most this many requests, then is replaced
    max_requests: int = 2000
    #: a REPL above this resident size is retired after its session
    rss_cap: int = 12 * 1024**3
    #: idle REPLs kept per import header
    max_idle: int = 2
    #: address-space cap of one REPL, MiB (None: three quarters of the machine's memory)
    memory_mb: int | None = None
