"""Verify repairs of broken proofs and write them: ``orch repair``'s and the MCP tools' one step.

The candidates were found on the *stand-in* (the file with its broken proofs
admitted, see the backend's ``repair`` feature), and are verified together
there (:func:`.checking.verify_candidates`: whole-file recompilation and the
axiom audit). The accepted ones are recorded in the ledger, then written into
the file as it was (every other proof byte for byte as it was), atomically,
only if the file still holds that text; with ``admit_broken``, the stand-in
is written instead, its unrepaired proofs admitted under a comment naming
their error. A repair changes a proof and nothing around it: a candidate that
needs an import or a helper lemma is not written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..backends import backend_for
from ..errors import FileChangedError, FileWriteError
from ..goals import GoalStatus
from ..ledger import Ledger
from ..project.patch import write_atomic
from ..provers.backend import ProjectTools
from .checking import verify_candidates
from .reports import Candidate, FileReport, FileStatus

__all__ = ["Repaired", "verify_and_write_repairs"]


@dataclass(slots=True)
class Repaired:
    """What :func:`verify_and_write_repairs` did."""

    #: the accepted candidates (whose proofs the file now holds, unless not written)
    accepted: list[Candidate] = field(default_factory=list)
    #: the file's text as the files that import it should see it (unrepaired proofs admitted)
    standin: str = ""
    written: bool = False


async def verify_and_write_repairs(
    path: Path,
    text: str,
    detection: Any,
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
    into ``path`` (which held ``text``); see the module's docstring."""
    feature = backend_for(path).repair()
    standin = detection.standin
    accepted = await verify_candidates(
        path,
        standin,
        candidates,
        tools.verifier,
        tools.declared_axioms(standin),
        ledger,
        run_id,
        "",
        file_report,
    )
    accepted = [c for c in accepted if not (c[1].imports or c[1].helpers)]
    kept = {goal_id for _, _, goal_id in accepted}
    for _, _, goal_id in candidates:
        if goal_id not in kept:
            ledger.set_goal_status(goal_id, GoalStatus.BROKEN)  # refused: the proof is still broken
    by_hole = {(b.hole.proof_start, b.hole.proof_end): b for b in detection.broken}
    repaired = [(by_hole[(h.proof_start, h.proof_end)], r.sentences) for h, r, _ in accepted]
    for hole, goal_report, goal_id in accepted:
        ledger.record_proof(
            run_id=run_id,
            goal_id=goal_id,
            fingerprint=hole.goal.fingerprint,
            sentences=goal_report.sentences,
            strategy=goal_report.strategy,
            prover_version="",
            diff="",
            written=False,
        )
    done = Repaired(accepted, feature.written_text(text, detection, repaired, True))
    final = feature.written_text(text, detection, repaired, admit_broken)
    if not write or final == text:
        return done
    try:
        write_atomic(path, final, text)
    except (FileChangedError, FileWriteError) as exc:
        changed = isinstance(exc, FileChangedError)
        file_report.status = FileStatus.CHANGED if changed else FileStatus.WRITE_FAILED
        file_report.message = str(exc)
        done.accepted = []
        return done
    done.written = file_report.written = True
    ids = [goal_id for _, _, goal_id in accepted]
    ledger.mark_written(run_id, ids)
    for goal_id in ids:
        ledger.set_goal_status(goal_id, GoalStatus.REPAIRED)
    return done
