"""Verify a file's candidates and write the accepted ones: the one step every command takes.

The candidates are verified together with the whole file (:func:`.checking.
verify_candidates`: recompilation and the axiom audit); the accepted proofs are
recorded in the ledger first, then the file is replaced atomically, only if
it still holds the text the proofs were found for, and the ledger marks them
written. A file therefore never holds a proof the ledger lacks.

A proof may rest on other holes of the project (closed modulo them). Once a
file is written, the holes it no longer has are proved: every proof that
rested on them is updated in the ledger (:meth:`~..ledger.Ledger.close_holes`),
and those left resting on nothing become closed without being run again.
"""

from __future__ import annotations

import contextlib
import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends import backend_for, scan_text
from ..goals import HoleUse
from ..ledger import Ledger
from ..project.patch import Patch, apply_patches, write_atomic
from ..provers.backend import ProjectTools
from .checking import verify_candidates
from .reports import Candidate, FileReport

__all__ = ["Written", "patches_of", "render", "verify_and_write"]


def patches_of(candidates: list[Candidate]) -> list[Patch]:
    return [Patch(hole, r.sentences, r.helpers, r.imports) for hole, r, _ in candidates]


def render(path: Path, text: str, patches: list[Patch]) -> str:
    """``text`` with ``patches`` spliced in (imports where the file's backend puts them)."""
    return apply_patches(text, patches, backend_for(path).import_insertion(text, patches))


def _diff(path: Path, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=str(path),
            tofile=str(path),
        )
    )


@dataclass(slots=True)
class Written:
    """What :func:`verify_and_write` did: the accepted candidates and the file's new text."""

    accepted: list[Candidate]
    text: str
    #: the file on disk now holds ``text``
    written: bool


async def verify_and_write(
    path: Path,
    text: str,
    candidates: list[Candidate],
    tools: ProjectTools,
    ledger: Ledger,
    run_id: int,
    version: str,
    file_report: FileReport,
    *,
    write: bool = True,
    holes: list[Any] | None = None,
    strict_holes: bool = False,
) -> Written:
    """Verify ``candidates`` (found for ``text``) and write the accepted ones into ``path``.

    With ``write`` false (``--dry-run``, or proofs that go to a git branch),
    the proofs are verified and recorded but the file is left as it is.
    :class:`~..errors.FileChangedError` and :class:`~..errors.FileWriteError`
    leave the file untouched; the proofs stay in the ledger, not written.
    ``holes`` are the holes of ``text`` as the run scanned them (scanned here
    when needed and not given); ``strict_holes`` refuses proofs that rest on holes.
    A file it imports that changed since it was built (a proof was written into
    it) is rebuilt first, with the files between them, and no other rebuild
    replaces them during the check.
    """
    async with (
        tools.builder.checking(path) if tools.builder is not None else contextlib.nullcontext()
    ):
        accepted = await verify_candidates(
            path,
            text,
            candidates,
            tools.verifier,
            tools.declared_axioms(text),
            ledger,
            run_id,
            version,
            file_report,
            strict_holes=strict_holes,
        )
    final_text = render(path, text, patches_of(accepted))
    for item in accepted:
        hole, goal_report, goal_id = item
        ledger.record_proof(
            run_id=run_id,
            goal_id=goal_id,
            fingerprint=hole.goal.fingerprint,
            sentences=goal_report.sentences,
            strategy=goal_report.strategy,
            prover_version=version,
            # the change this proof alone makes to the file
            diff=_diff(path, text, render(path, text, patches_of([item]))),
            written=False,
            uses_holes=goal_report.uses_holes,
        )
    written = False
    if accepted and write:
        write_atomic(path, final_text, text)
        written = True
        ledger.mark_written(run_id, [goal_id for _, _, goal_id in accepted])
        ledger.close_holes(str(path), proved_holes(path, text, accepted, holes))
    return Written(accepted, final_text, written)


def hole_name(hole: Any) -> str:
    """The name a proof's :class:`~..goals.HoleUse` gives ``hole``: its declaration's
    (a Lean declaration with several ``sorry`` is one hole) or its qualified name."""
    return str(hole.declaration)


def proved_holes(
    path: Path, text: str, accepted: list[Candidate], holes: list[Any] | None
) -> dict[str, tuple[HoleUse, ...]]:
    """The holes of ``text`` that the ``accepted`` proofs fill completely, each with
    the holes its proof rests on (what the proofs that used it rest on now)."""
    found = holes if holes is not None else scan_text(path, text)
    filled = {(hole.proof_start, hole.proof_end) for hole, _, _ in accepted}
    pending: dict[str, bool] = {}
    for hole in found:
        name = hole_name(hole)
        still = (hole.proof_start, hole.proof_end) not in filled
        pending[name] = pending.get(name, False) or still
    proved: dict[str, dict[tuple[str, str], HoleUse]] = {}
    for hole, goal_report, _ in accepted:
        name = hole_name(hole)
        if not pending.get(name, True):
            into = proved.setdefault(name, {})
            for use in goal_report.uses_holes:
                into.setdefault((use.file, use.name), use)
    return {name: tuple(uses.values()) for name, uses in proved.items()}
