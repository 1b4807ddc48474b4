"""Verify a file's candidates and commit the accepted ones: the one step every writer takes.

``orch fill``, ``bg``, ``golf``, ``repair`` and the MCP tools all write
through :func:`verify_and_write`, whose last part is the commit step,
:func:`commit`, in this order:

1. the candidates are verified together with the whole file
   (:func:`.checking.verify_candidates`: recompilation and the axiom audit),
   which also gives the file's new text, spliced once;
2. the accepted proofs are recorded in the ledger (not written);
3. the file's lock is taken (:func:`~..project.locks.file_lock`, which every
   orch writer takes);
4. the temporary file is written and fsynced, the file on disk is compared
   with the text the proofs were found for, under the lock, and replaced
   (:func:`~..project.patch.write_atomic`, whose docstring states the window
   an editor's save still has);
5. the ledger marks the proofs written.

A file therefore never holds a proof the ledger lacks, and a changed file is
never overwritten: its proofs stay in the ledger, not written, the file's
report says why (:attr:`~.reports.FileStatus.CHANGED`), and the next run
writes them (replayed from the ledger, checked again).

A proof may rest on other holes of the project (closed modulo them). Once a
file is written, the holes it no longer has are proved: every proof that
rested on them is updated in the ledger (:meth:`~..ledger.Ledger.close_holes`),
and those left resting on nothing become closed without being run again.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..backends import backend_for, scan_text
from ..errors import FileChangedError, FileWriteError
from ..goals import HoleUse
from ..ledger import Ledger
from ..project.locks import file_lock
from ..project.patch import Patch, apply_patches, write_atomic
from ..provers.backend import Hole, ProjectTools
from .checking import verify_candidates
from .reports import Candidate, FileReport, FileStatus

__all__ = ["Rewrite", "Written", "commit", "render", "verify_and_write"]


def render(path: Path, text: str, patches: Sequence[Patch]) -> str:
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
    """What :func:`commit` did: the accepted candidates and the file's new text."""

    accepted: list[Candidate]
    text: str
    #: the file on disk now holds ``text``
    written: bool = False
    #: why accepted proofs were not written (the file changed, the disk failed); the
    #: file's report says the same (status and message)
    error: FileChangedError | FileWriteError | None = None


class Rewrite(Protocol):
    """How a file's accepted candidates become its new text when that is not ``text``
    with their patches spliced in (``orch repair``: the stand-in is checked, the file
    as it was is written)."""

    #: the text the candidates are holes of, and that the whole-file check checks
    @property
    def checked(self) -> str: ...

    def admits(self, candidate: Candidate) -> bool:
        """Whether an accepted candidate may be written this way."""
        ...

    def render(self, text: str, accepted: Sequence[Candidate]) -> str:
        """``text`` (the file as it was read) with ``accepted`` in it."""
        ...


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
    holes: Sequence[Hole] | None = None,
    strict_holes: bool = False,
    rewrite: Rewrite | None = None,
) -> Written:
    """Verify ``candidates`` (found for ``text``) and commit the accepted ones into ``path``.

    With ``write`` false (``--dry-run``, or proofs that go to a git branch),
    the proofs are verified and recorded but the file is left as it is. A file
    that changed, or a write that failed, leaves the file untouched: the proofs
    stay in the ledger, not written, and :attr:`Written.error` and the file's
    report say why. ``holes`` are the holes of ``text`` as the run scanned them
    (scanned here when needed and not given); ``strict_holes`` refuses proofs
    that rest on holes; ``rewrite`` checks and renders otherwise (a repair).
    A file it imports that changed since it was built (a proof was written into
    it) is rebuilt first, with the files between them, and no other rebuild
    replaces them during the check.
    """
    checked = rewrite.checked if rewrite is not None else text
    async with (
        tools.builder.checking(path)
        if tools.builder is not None and rewrite is None
        else contextlib.nullcontext()
    ):
        verified = await verify_candidates(
            path,
            checked,
            candidates,
            tools.verifier,
            tools.declared_axioms(checked),
            ledger,
            run_id,
            version,
            file_report,
            strict_holes=strict_holes,
        )
    if rewrite is None:
        done = await commit(
            path,
            text,
            verified.text,
            verified.accepted,
            ledger,
            run_id,
            file_report,
            version=version,
            write=write,
        )
        if done.written:
            ledger.close_holes(str(path), proved_holes(path, text, done.accepted, holes))
        return done
    accepted = [item for item in verified.accepted if rewrite.admits(item)]
    return await commit(
        path,
        text,
        rewrite.render(text, accepted),
        accepted,
        ledger,
        run_id,
        file_report,
        version=version,
        write=write,
        diffs=False,
    )


async def commit(
    path: Path,
    text: str,
    final_text: str,
    accepted: Sequence[Candidate],
    ledger: Ledger,
    run_id: int,
    file_report: FileReport,
    *,
    version: str = "",
    write: bool = True,
    diffs: bool = True,
) -> Written:
    """Record ``accepted`` (verified proofs found for ``text``) in the ledger, then replace
    ``path`` with ``final_text`` under its lock if it still holds ``text``, and mark them
    written; see the module's docstring. ``diffs``: record each proof's own change to
    the file (its patch on ``text``)."""
    for item in accepted:
        report = item.report
        ledger.record_proof(
            run_id=run_id,
            goal_id=item.goal_id,
            fingerprint=item.hole.goal.fingerprint,
            sentences=report.sentences,
            strategy=report.strategy,
            prover_version=version,
            # the change this proof alone makes to the file
            diff=_diff(path, text, render(path, text, [item.patch])) if diffs else "",
            written=False,
            uses_holes=report.uses_holes,
        )
    done = Written(list(accepted), final_text)
    if not write or final_text == text:
        return done
    try:
        async with file_lock(path):
            write_atomic(path, final_text, text)
            done.written = file_report.written = True
            ledger.mark_written(run_id, [item.goal_id for item in accepted])
    except FileChangedError as exc:
        file_report.status = FileStatus.CHANGED
        file_report.message = f"{exc} ({len(accepted)} verified, not written)"
        done.error = exc
    except FileWriteError as exc:
        file_report.status = FileStatus.WRITE_FAILED
        file_report.message = str(exc)
        done.error = exc
    return done


def hole_name(hole: Hole) -> str:
    """The name a proof's :class:`~..goals.HoleUse` gives ``hole``: its declaration's
    (a Lean declaration with several ``sorry`` is one hole) or its qualified name."""
    return str(hole.declaration)


def proved_holes(
    path: Path, text: str, accepted: Sequence[Candidate], holes: Sequence[Hole] | None
) -> dict[str, tuple[HoleUse, ...]]:
    """The holes of ``text`` that the ``accepted`` proofs fill completely, each with
    the holes its proof rests on (what the proofs that used it rest on now)."""
    found = holes if holes is not None else scan_text(path, text)
    filled = {item.span for item in accepted}
    pending: dict[str, bool] = {}
    for hole in found:
        name = hole_name(hole)
        still = (hole.proof_start, hole.proof_end) not in filled
        pending[name] = pending.get(name, False) or still
    proved: dict[str, dict[tuple[str, str], HoleUse]] = {}
    for item in accepted:
        name = hole_name(item.hole)
        if not pending.get(name, True):
            into = proved.setdefault(name, {})
            for use in item.report.uses_holes:
                into.setdefault((use.file, use.name), use)
    return {name: tuple(uses.values()) for name, uses in proved.items()}
