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

import difflib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..coq.holes import declared_axioms, qed_proofs
from ..coq.project import project_for
from ..coq.script import check_script
from ..coq.session import CoqSession, PrefixError
from ..coq.strategies.micro import GENERIC_TACTICS, expand
from ..coq.syntax import one_sentence
from ..errors import ProverError, ScriptRejected, SourceSyntaxError, UnreadableSource
from ..goals import Outcome
from ..ledger import Ledger
from ..project.patch import Patch, apply_patches, write_atomic
from ..project.source import read_source
from ..provers.base import TacticStatus
from ..run.checking import verify_candidates
from ..run.reports import Candidate, FileReport, FileStatus, FillOptions, GoalReport
from ..run.tools import ProjectTools
from ..scheduler.governor import CpuGovernor

__all__ = ["GolfReport", "GolfedProof", "golf_files", "script_length"]

#: tactics that call a program outside Coq
EXTERNAL = ("hammer",)


def script_length(sentences: Sequence[str]) -> int:
    return len(" ".join(s.strip() for s in sentences))


def _external(sentences: Sequence[str]) -> bool:
    return any(word in s.split() for s in sentences for word in EXTERNAL)


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


async def _closes(session: CoqSession, sentences: Sequence[str], timeout: float) -> bool:
    try:
        result = await session.run_script(sentences, session.root, timeout=timeout)
    except (ProverError, ValueError):
        return False
    return result.status is TacticStatus.COMPLETE


async def shorten(
    session: CoqSession, sentences: tuple[str, ...], tactic_seconds: float
) -> tuple[str, ...]:
    """The shortest script found that still closes the goal (``sentences`` if none)."""
    best = sentences
    lia = await session.locate_ltac("Coq.micromega.Lia.lia")
    singles = sorted(expand(GENERIC_TACTICS, lia), key=len)
    for single in singles:
        if len(single) >= script_length(best):
            break
        if await _closes(session, [single], tactic_seconds) and (
            not _external([single]) or _external(best)
        ):
            best = (single,)
            break
    if len(best) > 1:
        for index in range(len(best) - 1, -1, -1):
            if one_sentence(best[index]).is_bullet_or_brace:
                continue  # the proof's structure stays as it was
            trial = best[:index] + best[index + 1 :]
            if trial and await _closes(session, trial, tactic_seconds):
                best = trial
    return best


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
    governor = CpuGovernor(
        options.orch.cpu_target, 1, memory_budget_mb=options.orch.memory_budget_mb
    )
    run_id = ledger.start_run("golf", {"paths": [str(p) for p in files]}, "")
    tools_by_flags: dict[tuple[str, ...], ProjectTools] = {}
    try:
        for path in files:
            try:
                text = read_source(path)
                found = qed_proofs(path, text)
            except (UnreadableSource, SourceSyntaxError) as exc:
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
            project = project_for(path)
            tools = tools_by_flags.get(project.flags)
            if tools is None:
                tools = tools_by_flags[project.flags] = ProjectTools(project, options, governor)
            compiles, output = await tools.verifier.compiles(path, text)
            if not compiles:
                file_report.status = FileStatus.DOES_NOT_COMPILE
                file_report.message = output.strip()[-1500:]
                continue
            candidates: list[Candidate] = []
            golfed: dict[str, GolfedProof] = {}
            for hole, script in proofs:
                report.proofs += 1
                report.chars_before += script_length(script)
                report.sentences_before += len(script)
                best = script
                cpu = 0.0
                try:
                    async with tools.prover.session(hole.goal, text, hole.prefix_end) as session:
                        best = await shorten(session, script, options.budget.tactic_seconds)
                        cpu = session.cpu_seconds()
                    best = check_script(best) if best != script else best
                except (ProverError, PrefixError, ScriptRejected):
                    best = script
                report.cpu_seconds += cpu
                if script_length(best) < script_length(script):
                    goal_id = ledger.upsert_goal(hole.goal)
                    goal_report = GoalReport(hole.goal, Outcome.CANDIDATE, "golf", best, hole=hole)
                    goal_report.cpu_seconds = cpu
                    candidates.append((hole, goal_report, goal_id))
                    golfed[hole.goal.name] = GolfedProof(
                        path, hole.goal.name, script, best, cpu_seconds=cpu
                    )
                else:
                    report.chars_after += script_length(script)
                    report.sentences_after += len(script)
                    if on_proof:
                        on_proof(None)
            accepted = await verify_candidates(
                path,
                text,
                candidates,
                tools.verifier,
                set(declared_axioms(text)),
                ledger,
                run_id,
                "",
                file_report,
            )
            kept = {h.goal.name for h, _, _ in accepted}
            for reopened, _, goal_id in candidates:
                proof = golfed[reopened.goal.name]
                proof.accepted = reopened.goal.name in kept
                final = proof.after if proof.accepted else proof.before
                report.chars_after += script_length(final)
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
                    tactic=" ".join(proof.after),
                    cpu_seconds=proof.cpu_seconds,
                    message=f"length {script_length(proof.before)} -> {script_length(proof.after)}",
                )
            if accepted and not options.dry_run:
                new_text = apply_patches(text, [Patch(h, r.sentences) for h, r, _ in accepted])
                write_atomic(path, new_text, text)
                file_report.written = True
                for done, goal_report, goal_id in accepted:
                    alone = apply_patches(text, [Patch(done, goal_report.sentences)])
                    ledger.record_proof(
                        run_id=run_id,
                        goal_id=goal_id,
                        fingerprint=done.goal.fingerprint,
                        sentences=goal_report.sentences,
                        strategy="golf",
                        prover_version="",
                        diff="".join(
                            difflib.unified_diff(
                                text.splitlines(keepends=True), alone.splitlines(keepends=True)
                            )
                        ),
                        written=True,
                    )
    finally:
        for tools in tools_by_flags.values():
            await tools.aclose()
        report.wall_seconds = time.monotonic() - started
        ledger.finish_run(run_id, "finished", report.summary())
    return report
