"""What this process's prover sessions cost outside the attempts they served.

An attempt is charged the CPU its session's process used while it ran. The
rest of a process's life is not an attempt's: starting it, loading a file's
text up to a hole (the libraries it requires, the proofs before the hole),
and what a cancelled request finished after its attempt ended. These counters
let a report split the process tree's CPU (``orch fill --json``'s
``prover_processes``) instead of leaving it as "other".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

__all__ = ["PROVER_PROCESSES", "ProverProcessStats"]


@dataclass(slots=True)
class ProverProcessStats:
    #: interactive prover processes started
    started: int = 0
    #: their CPU from start to the first prompt
    start_cpu_seconds: float = 0.0
    #: times a process was brought to a session's prefix (a ``BackTo`` and the rest)
    loads: int = 0
    #: sentences those loads sent
    sentences_loaded: int = 0
    #: CPU of those loads (the libraries required, the proofs before the hole)
    load_cpu_seconds: float = 0.0
    #: of those, the loads into a process that held none of the prefix (a new process,
    #: or one that served another file), and their CPU
    cold_loads: int = 0
    cold_load_cpu_seconds: float = 0.0
    #: cancelled requests ended by interrupting the process, which then lived on
    interrupted: int = 0
    #: processes stopped
    closed: int = 0
    #: why they were stopped: "released" (the pool let them go: full, worn out, shut),
    #: or the fault that ended them ("ProverDesync": a request was cancelled, ...)
    closed_because: dict[str, int] = field(default_factory=dict)
    #: CPU of the stopped processes over their whole life, helpers included
    closed_lifetime_cpu_seconds: float = 0.0

    def as_dict(self) -> dict[str, float | int | dict[str, int]]:
        found = asdict(self)
        for key, value in found.items():
            if isinstance(value, float):
                found[key] = round(value, 3)
        return found


#: this process's prover processes (reported by ``orch fill --json`` and ``orch bank``)
PROVER_PROCESSES = ProverProcessStats()
