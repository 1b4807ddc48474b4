"""Repairs of broken proofs through the one verify-and-commit step (``orch repair``, MCP).

The candidates were found on the *stand-in* (the file with its broken proofs
admitted, see the backend's ``repair`` feature), and are verified together
there (:func:`.checking.verify_candidates`: whole-file recompilation and the
axiom audit) by :func:`~.writing.verify_and_write`, the same step as every
other writer's, with a :class:`RepairRewrite`. The accepted ones are recorded
in the ledger, then committed into the file as it was (every other proof byte
for byte as it was), under its lock, only if the file still holds that text
(:func:`~.writing.commit`); with ``admit_broken``, the stand-in
is written instead, its unrepaired proofs admitted under a comment naming
their error. A repair changes a proof and nothing around it: a candidate that
needs an import or a helper lemma is not written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..backends import backend_for
from ..goals import GoalStatus
from ..ledger import Ledger
from ..provers.abilities import Detection, Repair
from ..provers.backend import ProjectTools
from .reports import Candidate, FileReport
from .writing import verify_and_write

__all__ = ["RepairRewrite", "Repaired", "verify_and_write_repairs"]


@dataclass(slots=True)
class Repaired:
    """What :func:`verify_and_write_repairs` did."""

    #: the accepted candidates (whose proofs the file now holds, unless not written)
    accepted: list[Candidate] = field(default_factory=list)
    #: the file's text as the files that import it should see it (unrepaired proofs admitted)
    standin: str = ""
    written: bool = False


@dataclass(frozen=True, slots=True)
class RepairRewrite:
    """Repairs as :func:`~.writing.verify_and_write` writes them (a :class:`~.writing.Rewrite`):
    checked in the stand-in, written into the file as it was."""

    #: the backend's ``repair`` side
    feature: Repair
    #: what it found in the file: the broken proofs and the stand-in
    detection: Detection
    #: write the stand-in: the proofs left broken admitted under a comment
    admit_broken: bool = False

    @property
    def checked(self) -> str:
        return str(self.detection.standin)

    def admits(self, candidate: Candidate) -> bool:
        # a repair changes a proof and nothing around it
        return not (candidate.patch.imports or candidate.patch.helpers)

    def render(self, text: str, accepted: Sequence[Candidate]) -> str:
        return self.text(text, accepted, self.admit_broken)

    def text(self, text: str, accepted: Sequence[Candidate], admit_broken: bool) -> str:
        """``text`` with ``accepted`` in it, the rest as it was or (``admit_broken``) admitted."""
        by_hole = {(b.hole.proof_start, b.hole.proof_end): b for b in self.detection.broken}
        repaired = [(by_hole[item.span], item.report.sentences) for item in accepted]
        return str(self.feature.written_text(text, self.detection, repaired, admit_broken))


async def verify_and_write_repairs(
    path: Path,
    text: str,
    detection: Detection,
    candidates: list[Candidate],
    tools: ProjectTools,
    ledger: Ledger,
    run_id: int,
    file_report: FileReport,
    *,
    write: bool = True,
    admit_broken: bool = False,
) -> Repaired:
    """Verify ``candidates`` (holes of ``detection.standin``) and write the accepted ones
    into ``path`` (which held ``text``) through the one commit step; see the module's
    docstring. A file that changed, or a write that failed, accepts nothing here (the
    proofs are in the ledger, not written; the file's report says why)."""
    rewrite = RepairRewrite(backend_for(path).repair(), detection, admit_broken)
    done = await verify_and_write(
        path, text, candidates, tools, ledger, run_id, "", file_report, write=write, rewrite=rewrite
    )
    kept = {item.goal_id for item in done.accepted}
    for item in candidates:
        if item.goal_id not in kept:
            # refused: the proof is still broken
            ledger.set_goal_status(item.goal_id, GoalStatus.BROKEN)
    if done.error is not None:
        return Repaired([], rewrite.text(text, done.accepted, True))
    if done.written:
        for item in done.accepted:
            ledger.set_goal_status(item.goal_id, GoalStatus.REPAIRED)
    return Repaired(done.accepted, rewrite.text(text, done.accepted, True), done.written)
