"""What learning cost in this process: modules mined or read back, examples, CPU seconds."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["MINING", "MiningStats"]


@dataclass(slots=True)
class MiningStats:
    #: modules whose sources were read and mined (a cold cache, or a changed file)
    modules_mined: int = 0
    #: modules read back from the cache
    modules_cached: int = 0
    #: the most examples one position could see
    examples: int = 0
    #: CPU seconds of this process spent mining, reading the cache and indexing examples
    cpu_seconds: float = 0.0
    #: loaded modules whose source was not found (compiled only): nothing to learn there
    without_source: int = 0

    def as_dict(self) -> dict[str, float | int]:
        found = asdict(self)
        found["cpu_seconds"] = round(self.cpu_seconds, 3)
        return found


#: this process's learning costs (reported by ``orch fill --json`` and ``orch bank``)
MINING = MiningStats()
