"""Proofs found in this run, visible at once to the goals that may learn from them.

A candidate proof of a hole is an example for the goals that can see that
hole's lemma: the goals below it in its file, and the goals of the files that
import its file. It joins at once, before its file is verified (a candidate
the verifier later refuses only ever served as a suggestion: every proof a
strategy builds from it is checked by the prover like any other). The
registry is per process; :attr:`FoundProofs.version` changes with every
addition, so the caches of what a position sees can tell they are stale.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .examples import ProofExample

__all__ = ["FOUND", "FoundProofs"]


@dataclass(frozen=True, slots=True)
class _Found:
    file: str
    line: int
    example: ProofExample


@functools.lru_cache(maxsize=4096)
def _key(path: Path | str) -> str:
    """The file's resolved path (kept: a goal's imports are asked about at every attempt)."""
    try:
        return os.path.realpath(path)
    except OSError:
        return str(path)


class FoundProofs:
    """The proofs found so far, by file."""

    def __init__(self) -> None:
        self._by_file: dict[str, list[_Found]] = {}
        #: bumped at every addition
        self.version = 0

    def add(self, file: Path, line: int, example: ProofExample) -> None:
        found = self._by_file.setdefault(_key(file), [])
        if any(f.example.name == example.name and f.line == line for f in found):
            return
        found.append(_Found(_key(file), line, example))
        self.version += 1

    def visible(self, file: Path, line: int, imported: Iterable[Path]) -> list[ProofExample]:
        """The proofs found above ``line`` in ``file`` and anywhere in the ``imported`` files."""
        own = [f.example for f in self._by_file.get(_key(file), ()) if f.line < line]
        others = [f.example for path in imported for f in self._by_file.get(_key(path), ())]
        return [*own, *others]


#: the proofs found by this process's runs
FOUND = FoundProofs()
