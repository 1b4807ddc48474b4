"""``orch golf``: shorten finished Coq proofs, keeping only what verifies.

For each ``Qed`` proof of the given files, in a session at the lemma:

1. one closing tactic from the quick-tactic list that is shorter than the
   whole script and closes the goal on its own replaces it (the list is tried
   shortest first);
2. otherwise, steps are dropped one at a time, from the last to the first,
   whenever the rest still closes the goal (bullets and braces stay, so the
   proof keeps its shape).

A file that does not compile as it is is reported and left alone.

A shorter script is preferred only if it does not call an external prover
where the old one did not (``hammer`` counts as external; its
reconstruction tactics do not). Every shortened proof then goes through the
same whole-file check and axiom audit as a new proof, and the file is written
once, atomically. Lengths are counted in characters of the script (sentences
joined by spaces) and in sentences.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..backends import backend_for
from ..errors import (
    OrchError,
    PrefixError,
    ProverError,
    ScriptRejected,
    SourceSyntaxError,
    UnreadableSource,
)
from ..goals import Outcome, RunStatus
from ..ledger import Ledger
from ..project.source import read_source
from ..provers.abilities import Golf
from ..run.reports import Candidate, FileReport, FileStatus, FillOptions, GoalReport
from ..run.toolbox import Toolbox
from ..run.writing import verify_and_write
from ..scheduler.governor import CpuGovernor

__all__ = ["GolfReport", "GolfedProof", "golf_files"]


def _golf(path: Path) -> Golf:
    """The golf side of ``path``'s backend (Coq's; :class:`OrchError` for a language
    whose proofs are not golfed)."""
    backend = backend_for(path)
    golf = backend.golf()
    if golf is None:
        raise OrchError(f"{path}: orch golf shortens Coq proofs only, not {backend.language}")
    return golf


@dataclass(slots=True)
class GolfedProof:
    file: Path
    name: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    #: the whole-file check accepted the shorter proof (and the file was written)
    accepted: bool = False
    cpu_seconds: float = 0.0


@dataclass(slots=True)
class GolfReport:
    proofs: int = 0
    #: total script length of every proof looked at, before and after (characters)
    chars_before: int = 0
    chars_after: int = 0
    sentences_before: int = 0
    sentences_after: int = 0
    shortened: list[GolfedProof] = field(default_factory=list)
    files: list[FileReport] = field(default_factory=list)
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0

    def summary(self) -> dict[str, object]:
        return {
            "proofs": self.proofs,
            "shortened": sum(1 for p in self.shortened if p.accepted),
            "chars_before": self.chars_before,
            "chars_after": self.chars_after,
            "sentences_before": self.sentences_before,
            "sentences_after": self.sentences_after,
            "cpu_seconds": round(self.cpu_seconds, 3),
            "wall_seconds": round(self.wall_seconds, 3),
            "proofs_shortened": [
                {
                    "file": str(p.file),
                    "name": p.name,
                    "before": " ".join(p.before),
                    "after": " ".join(p.after),
                }
                for p in self.shortened
                if p.accepted
            ],
        }


async def golf_files(
    files: Sequence[Path],
    ledger: Ledger,
    options: FillOptions,
    *,
    names: frozenset[str] = frozenset(),
    on_proof: Callable[[GolfedProof | None], None] | None = None,
) -> GolfReport:
    """Shorten the ``Qed`` proofs of ``files`` (only ``names`` if given); write what verifies."""
    report = GolfReport()
    started = time.monotonic()
    governor = CpuGovernor.for_settings(options.orch, 1)
    run_id = ledger.start_run("golf", {"paths": [str(p) for p in files]}, "")
    toolbox = Toolbox(options, governor.gate)
    try:
        for path in files:
            try:
                golf = _golf(path)
                text = read_source(path)
                found = golf.finished_proofs(path, text)
            except (UnreadableSource, SourceSyntaxError, OrchError, ValueError) as exc:
                report.files.append(FileReport(path, FileStatus.UNREADABLE, message=str(exc)))
                continue
            proofs = [
                (hole, script)
                for hole, script in found
                if script and (not names or hole.goal.name in names)
            ]
            file_report = FileReport(path, FileStatus.DONE, original_text=text)
            report.files.append(file_report)
            if not proofs:
                continue
            tools = toolbox.for_path(path)
            compiles, output = await tools.verifier.compiles(path, text)
            if not compiles:
                file_report.status = FileStatus.DOES_NOT_COMPILE
                file_report.message = output.strip()[-1500:]
                continue
            candidates: list[Candidate] = []
            golfed: dict[str, GolfedProof] = {}
            for hole, script in proofs:
                report.proofs += 1
                report.chars_before += golf.script_length(script)
                report.sentences_before += len(script)
                best = script
                cpu = 0.0
                try:
                    async with tools.open_session(hole, text) as session:
                        best = await golf.shorten(session, script, options.budget.tactic_seconds)
                        cpu = session.cpu_seconds()
                    best = tools.gate(best) if best != script else best
                except (ProverError, PrefixError, ScriptRejected):
                    best = script
                report.cpu_seconds += cpu
                if golf.script_length(best) < golf.script_length(script):
                    goal_id = ledger.upsert_goal(hole.goal)
                    goal_report = GoalReport(hole.goal, Outcome.CANDIDATE, "golf", best, hole=hole)
                    goal_report.cpu_seconds = cpu
                    candidates.append(Candidate.of(hole, goal_report, goal_id))
                    golfed[hole.goal.name] = GolfedProof(
                        path, hole.goal.name, script, best, cpu_seconds=cpu
                    )
                else:
                    report.chars_after += golf.script_length(script)
                    report.sentences_after += len(script)
                    if on_proof:
                        on_proof(None)
            done = await verify_and_write(
                path,
                text,
                candidates,
                tools,
                ledger,
                run_id,
                "",
                file_report,
                write=not options.dry_run,
                # a shorter proof must not come to rest on a hole the old one did not use
                strict_holes=True,
            )
            accepted = done.accepted
            file_report.written = done.written
            # a file that changed (or could not be written) keeps its old proofs: none is
            # shortened (its report says why)
            kept = {item.hole.goal.name for item in accepted} if done.error is None else set()
            for item in candidates:
                reopened, goal_id = item.hole, item.goal_id
                proof = golfed[reopened.goal.name]
                proof.accepted = reopened.goal.name in kept
                final = proof.after if proof.accepted else proof.before
                report.chars_after += golf.script_length(final)
                report.sentences_after += len(final)
                report.shortened.append(proof)
                if on_proof:
                    on_proof(proof)
                ledger.record_attempt(
                    run_id=run_id,
                    goal_id=goal_id,
                    fingerprint=reopened.goal.fingerprint,
                    strategy="golf",
                    outcome=Outcome.PROVED if proof.accepted else Outcome.REJECTED,
                    tactic=backend_for(path).join_script(proof.after),
                    cpu_seconds=proof.cpu_seconds,
                    message=(
                        f"length {golf.script_length(proof.before)}"
                        f" -> {golf.script_length(proof.after)}"
                    ),
                )
    finally:
        await toolbox.aclose()
        report.wall_seconds = time.monotonic() - started
        ledger.finish_run(run_id, RunStatus.FINISHED, report.summary())
    return report
