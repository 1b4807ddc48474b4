"""Verify a file's candidates and write the accepted ones: the one step every command takes.

The candidates are verified together with the whole file (:func:`.checking.
verify_candidates`: recompilation and the axiom audit); the accepted proofs are
recorded in the ledger first, then the file is replaced atomically, only if
it still holds the text the proofs were found for, and the ledger marks them
written. A file therefore never holds a proof the ledger lacks.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backends import backend_for
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
) -> Written:
    """Verify ``candidates`` (found for ``text``) and write the accepted ones into ``path``.

    With ``write`` false (``--dry-run``, or proofs that go to a git branch),
    the proofs are verified and recorded but the file is left as it is.
    :class:`~..errors.FileChangedError` and :class:`~..errors.FileWriteError`
    leave the file untouched; the proofs stay in the ledger, not written.
    """
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
        holes,
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
        )
    written = False
    if accepted and write:
        write_atomic(path, final_text, text)
        written = True
        ledger.mark_written(run_id, [goal_id for _, _, goal_id in accepted])
    return Written(accepted, final_text, written)
