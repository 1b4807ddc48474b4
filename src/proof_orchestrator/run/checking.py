"""Checking candidates: replaying a known proof in a session, and whole-file verification.

All of a file's candidates are verified together (one recompilation and the
axiom audit). When that fails, the verifier's diagnosis (the line the compiler
stopped at, or the lemmas with new assumptions) names the candidates to drop,
and the rest is verified again. Only when it names nobody are candidates
added one at a time.
"""

from __future__ import annotations

import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from ..backends import backend_for, scan_text
from ..errors import PrefixError, ProverError
from ..goals import Budget, Outcome
from ..ledger import Ledger
from ..project.patch import Patch, apply_patches
from ..provers.base import TacticStatus, Verdict, VerificationResult, Verifier
from .reports import LEDGER_REPLAY, Candidate, FileReport, GoalReport

__all__ = ["blamed_candidates", "replay_script", "verify_candidates", "waits_on_holes"]


async def replay_script(
    hole: Any,
    opening: AbstractAsyncContextManager[Any],
    sentences: tuple[str, ...],
    budget: Budget,
) -> GoalReport | None:
    """Re-run a proof from the ledger in a session (``opening`` opens it at ``hole``).

    None if the proof no longer closes the goal.
    """
    started = time.monotonic()
    try:
        async with opening as session:
            result = await session.run_script(sentences, session.root, timeout=budget.cpu_seconds)
            cpu = session.cpu_seconds()
    except (ProverError, PrefixError):
        return None
    if result.status is not TacticStatus.COMPLETE:
        return None
    return GoalReport(
        hole.goal,
        Outcome.CANDIDATE,
        LEDGER_REPLAY,
        sentences,
        len(sentences),
        cpu,
        time.monotonic() - started,
    )


async def verify_candidates(
    path: Path,
    text: str,
    candidates: list[Candidate],
    verifier: Verifier,
    axioms: set[str],
    ledger: Ledger,
    run_id: int,
    version: str,
    file_report: FileReport,
    holes: list[Any] | None = None,
) -> list[Candidate]:
    """Keep the candidates that the whole-file check accepts; mark the others REJECTED."""
    if not candidates:
        return []
    cpu_before = verifier.cpu_seconds

    backend = backend_for(path)
    # the file's holes as the run scanned them (scanned here only when not given)
    found = holes if holes is not None else scan_text(path, text)
    hole_names = {h.goal.qualified_name for h in found}

    def reject(item: Candidate, detail: str) -> None:
        _, goal_report, goal_id = item
        goal_report.outcome = Outcome.REJECTED
        goal_report.message = detail[-1000:]
        ledger.record_attempt(
            run_id=run_id,
            goal_id=goal_id,
            fingerprint=goal_report.goal.fingerprint,
            strategy=goal_report.strategy,
            outcome=Outcome.REJECTED,
            tactic=" ".join(goal_report.sentences),
            prover_version=version,
            message=detail,
        )
        ledger.set_goal_status(goal_id, "rejected")

    def reason(item: Candidate, result: VerificationResult) -> str:
        waits = waits_on_holes(item, result, path.stem, hole_names)
        if not waits:
            return result.detail
        return (
            "the proof uses " + ", ".join(sorted(waits)) + ", which has no verified proof "
            "in this file (its Admitted would become an assumption)"
        )

    async def check(chosen: list[Candidate]) -> VerificationResult:
        patches = [Patch(h, r.sentences, r.helpers, r.imports) for h, r, _ in chosen]
        patched = apply_patches(text, patches, backend.import_insertion(text, patches))
        goals = [h.goal for h, _, _ in chosen]
        return await verifier.verify(path, text, patched, goals, frozenset(axioms))

    # Verify everything at once; on failure, drop the candidates the verifier
    # blames (the lemma at the compiler's error line, or those with new
    # assumptions) and try again. Only when it blames nobody, fall back to
    # adding candidates one at a time, in file order (a lemma's proof may use
    # the holes above it), going round again while a round accepts something:
    # a candidate that used a hole accepted later in the round gets its retry.
    remaining = sorted(candidates, key=lambda item: item[0].proof_start)
    accepted: list[Candidate] = []
    while remaining:
        result = await check(remaining)
        if result.accepted:
            accepted = remaining
            break
        blamed = blamed_candidates(path, text, remaining, result)
        if not blamed:
            failures: dict[int, str] = {}
            while remaining:
                still: list[Candidate] = []
                for item in remaining:
                    single = await check([*accepted, item])
                    if single.accepted:
                        accepted.append(item)
                    else:
                        still.append(item)
                        failures[id(item)] = reason(item, single)
                if len(still) == len(remaining):
                    break
                remaining = still
            for item in remaining:
                reject(item, failures[id(item)])
            break
        for item in blamed:
            reject(item, reason(item, result))
        remaining = [item for item in remaining if all(item is not b for b in blamed)]
    for _, goal_report, _ in accepted:
        goal_report.outcome = Outcome.PROVED
    file_report.verify_cpu_seconds = verifier.cpu_seconds - cpu_before
    return accepted


def waits_on_holes(
    item: Candidate, result: VerificationResult, module: str, hole_names: set[str]
) -> set[str]:
    """The holes of the file that alone stand behind ``item``'s new assumptions.

    Empty when the verdict is not about assumptions, or when anything else
    (a real axiom, a hole of another file) is among them.
    """
    if result.verdict is not Verdict.NEW_ASSUMPTIONS:
        return set()
    name = item[0].goal.qualified_name
    keys = [
        entry.split(": ", 1)[1] for entry in result.new_assumptions if entry.startswith(f"{name}: ")
    ]
    holes = {f"{module}.{hole}": hole for hole in hole_names if hole != name}
    if not keys or any(key not in holes for key in keys):
        return set()
    return {holes[key] for key in keys}


def blamed_candidates(
    path: Path, text: str, chosen: list[Candidate], result: VerificationResult
) -> list[Candidate]:
    """The candidates that a failed verification points at."""
    if result.verdict is Verdict.NEW_ASSUMPTIONS:
        names = set(result.offending)
        return [item for item in chosen if item[0].goal.qualified_name in names]
    if result.error_line is None:
        return []
    patches = [Patch(h, r.sentences, r.helpers, r.imports) for h, r, _ in chosen]
    at, imports = backend_for(path).import_insertion(text, patches)
    added = imports.count("\n")
    if added:
        # the imports' own lines: blame the proofs that need them
        first_import = text.count("\n", 0, at) + (2 if at else 1)
        if first_import <= result.error_line < first_import + added:
            return [item for item, patch in zip(chosen, patches, strict=True) if patch.imports]
    # find the patched proof (or its helpers) that contains the error line
    ordered = sorted(zip(chosen, patches, strict=True), key=lambda pair: pair[0][0].proof_start)
    shift = 0
    for item, patch in ordered:
        hole = item[0]
        replacement = patch.replacement()
        inserted = patch.insertion(text).count("\n")
        above = added if hole.statement_start >= at else 0
        first = text.count("\n", 0, hole.statement_start) + 1 + shift + above
        last = (
            text.count("\n", 0, hole.proof_start)
            + 1
            + shift
            + above
            + inserted
            + replacement.count("\n")
        )
        if first <= result.error_line <= last:
            return [item]
        shift += (
            inserted + replacement.count("\n") - text.count("\n", hole.proof_start, hole.proof_end)
        )
    return []
