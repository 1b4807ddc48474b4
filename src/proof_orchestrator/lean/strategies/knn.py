"""The k-NN tactic model for Lean, mined with the REPL's ``allTactics``.

The REPL's file mode with ``allTactics`` returns every tactic of a file with
the goals it ran on: exactly the (goal, tactic) pairs the model learns from,
without replaying anything. For a hole, the model holds

* the pairs of the finished declarations (no ``sorry``) of the hole's file
  that start *before* the hole's declaration (position-faithful: never the
  declaration under proof, never anything after it);
* the pairs of the finished declarations of the project's own modules that
  the file imports (directly or not; package and core sources are not mined);
* the ledger's verified Lean proofs: the statement stands for the first goal
  and the script's first tactic for its tactic.

The features are :func:`proof_orchestrator.search.features.features` with
Lean's goal syntax. A file is mined once per text; models are cached per
(file, text before the hole).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ProverError, SourceSyntaxError
from ...search.features import TacticModel, features
from ..display import LEAN
from ..holes import command_spans, lex
from ..session import LeanSession
from .premises import header_imports, import_closure

__all__ = ["LeanModels", "MinedTactic", "finished_lines", "mined_tactics"]

#: at most this many imported project files are mined for one hole
MAX_IMPORTED = 16


@dataclass(frozen=True, slots=True)
class MinedTactic:
    """One ``allTactics`` entry: the first goal it ran on, the tactic, its 1-based line."""

    goal: str
    tactic: str
    line: int


def mined_tactics(entries: Sequence[Mapping[str, Any]]) -> list[MinedTactic]:
    """The (first goal, tactic, line) of each ``tactics`` entry of an ``allTactics`` reply.

    The REPL prints all the goals of the state in ``goals``, separated by blank
    lines; the tactic works on the first. Entries without goals or holding a
    ``sorry`` are left out.
    """
    found: list[MinedTactic] = []
    for entry in entries:
        tactic = str(entry.get("tactic", "")).strip()
        goals = str(entry.get("goals", "")).strip()
        pos = entry.get("pos")
        line = int(pos.get("line", 0)) if isinstance(pos, dict) else 0
        if not tactic or not goals or "sorry" in tactic:
            continue
        found.append(MinedTactic(goals.split("\n\n", 1)[0], tactic, line))
    return found


def finished_lines(text: str, end: int | None = None) -> list[tuple[int, int]]:
    """(first, last) 1-based lines of the commands of ``text`` that hold no ``sorry``,
    among those that start before offset ``end``."""
    spans: list[tuple[int, int]] = []
    for start, stop in command_spans(text):
        if end is not None and start >= end:
            break
        if any(t.text in ("sorry", "admit") for t in lex(text[start:stop])):
            continue
        spans.append((text.count("\n", 0, start) + 1, text.count("\n", 0, stop) + 1))
    return spans


def _inside(line: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(first <= line <= last for first, last in spans)


class LeanModels:
    """k-NN models of Lean holes, mined with ``allTactics`` (see the module's docstring)."""

    def __init__(self, proved: Sequence[tuple[str, Sequence[str]]] = (), size: int = 64) -> None:
        self._seed = [(features(s, LEAN), script[0]) for s, script in proved if script]
        #: (file, text digest) -> every mined entry of that text (the newest ``4 * size``)
        self._mined: OrderedDict[tuple[str, str], list[MinedTactic]] = OrderedDict()
        self._models: OrderedDict[tuple[str, str], TacticModel] = OrderedDict()
        self.size = size
        #: CPU seconds spent mining (elaborating files in the REPL)
        self.cpu_seconds = 0.0
        self.built = 0
        self.reused = 0

    async def model_for(self, session: LeanSession) -> TacticModel:
        """The model at ``session``'s hole."""
        file = session.hole.goal.file
        end = session.hole.decl_start
        key = (str(file), _digest(session.source[:end]))
        cached = self._models.get(key)
        if cached is not None:
            self.reused += 1
            self._models.move_to_end(key)
            return cached
        before = session.cpu_seconds()
        try:
            model = TacticModel(LEAN, list(self._seed))
            try:
                spans = finished_lines(session.source, end)
            except SourceSyntaxError:
                spans = []
            for entry in await self._mine(session, file, session.source):
                if _inside(entry.line, spans):
                    model.add(entry.goal, entry.tactic)
            for path in self._imported(session):
                try:
                    text = path.read_text(encoding="utf-8")
                    imported_spans = finished_lines(text)
                except (OSError, UnicodeDecodeError, SourceSyntaxError):
                    continue
                for entry in await self._mine(session, path, text):
                    if _inside(entry.line, imported_spans):
                        model.add(entry.goal, entry.tactic)
        finally:
            self.cpu_seconds += session.cpu_seconds() - before
        self.built += 1
        self._models[key] = model
        while len(self._models) > self.size:
            self._models.popitem(last=False)
        return model

    def _imported(self, session: LeanSession) -> list[Path]:
        """The project's own source files in the import closure of the hole's file."""
        root = session.prover.project.root
        closure = import_closure(header_imports(session.source), [root], MAX_IMPORTED)
        return [path for _, path in closure]

    async def _mine(self, session: LeanSession, path: Path, text: str) -> list[MinedTactic]:
        """Every tactic of ``text`` (the content of ``path``), from the REPL, once per text."""
        key = (str(path), _digest(text))
        known = self._mined.get(key)
        if known is not None:
            self._mined.move_to_end(key)
            return known
        root = session.prover.project.root
        entries: Sequence[Mapping[str, Any]] = ()
        try:
            on_disk = path.read_text(encoding="utf-8") == text
        except (OSError, UnicodeDecodeError):
            on_disk = False
        try:
            if on_disk:
                try:
                    where = str(path.resolve().relative_to(root.resolve()))
                except ValueError:
                    where = str(path.resolve())
                entries = await session.all_tactics(where)
            else:
                # the text the session has is not what the file holds: mine a private copy
                with tempfile.TemporaryDirectory(prefix="orch-lean-mine-") as folder:
                    copy = Path(folder) / path.name
                    copy.write_text(text, encoding="utf-8")
                    entries = await session.all_tactics(str(copy))
        except ProverError:
            entries = ()
        mined = self._mined[key] = mined_tactics(entries)
        while len(self._mined) > 4 * self.size:
            self._mined.popitem(last=False)
        return mined


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
