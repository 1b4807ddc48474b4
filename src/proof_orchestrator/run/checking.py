"""Checking candidates: replaying a known proof in a session, and whole-file verification.

All of a file's candidates are verified together (one recompilation and the
axiom audit). When that fails, the verifier's diagnosis (the line the compiler
stopped at, or the lemmas with new assumptions) names the candidates to drop,
and the rest is verified again. Only when it names nobody are candidates
added one at a time.

A proof whose only new assumptions are holes of the project (other goals,
still ``Admitted``/``sorry``) is accepted *closed modulo* them: its report
names them (``GoalReport.uses_holes``). With ``strict_holes`` it is refused,
with the reason, as every new assumption is.
"""

from __future__ import annotations

import re
import time
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

from ..backends import backend_for
from ..errors import PrefixError, ProverError
from ..goals import Budget, GoalStatus, HoleUse, Outcome
from ..ledger import Ledger
from ..project.patch import apply_patches
from ..provers.backend import Hole
from ..provers.base import ProofSession, TacticStatus, Verdict, VerificationResult, Verifier
from .reports import LEDGER_REPLAY, Candidate, FileReport, GoalReport

_IDENTIFIER = re.compile(r"[A-Za-z_][\w'.]*")

__all__ = [
    "Verified",
    "blamed_candidates",
    "leans_on",
    "refuse_holes",
    "replay_script",
    "verify_candidates",
    "with_closure",
]


async def replay_script(
    hole: Hole,
    opening: AbstractAsyncContextManager[ProofSession],
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


@dataclass(slots=True)
class Verified:
    """What the whole-file check accepted, and the text it accepted them in."""

    accepted: list[Candidate]
    #: the checked text with every accepted patch in it (the text itself if none was):
    #: the file's new text, spliced once, by the check that accepted it
    text: str


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
    *,
    strict_holes: bool = False,
) -> Verified:
    """Keep the candidates that the whole-file check accepts; mark the others REJECTED.

    An accepted candidate's report says which holes its proof still rests on
    (``uses_holes``, empty for a closed proof); ``strict_holes`` refuses those.
    """
    if not candidates:
        return Verified([], text)
    cpu_before, compiles_before = verifier.cpu_seconds, verifier.compilations

    backend = backend_for(path)
    #: per accepted candidate (by span), the holes its proof used when it was checked
    used: dict[tuple[int, int], tuple[HoleUse, ...]] = {}
    #: the text of the last check that accepted, with every accepted patch in it
    verified_text = text

    def reject(item: Candidate, detail: str) -> None:
        goal_report = item.report
        goal_report.outcome = Outcome.REJECTED
        goal_report.message = detail[-1000:]
        ledger.record_attempt(
            run_id=run_id,
            goal_id=item.goal_id,
            fingerprint=goal_report.goal.fingerprint,
            strategy=goal_report.strategy,
            outcome=Outcome.REJECTED,
            tactic=backend.join_script(goal_report.sentences),
            prover_version=version,
            message=detail,
        )
        ledger.set_goal_status(item.goal_id, GoalStatus.REJECTED)

    def reason(item: Candidate, result: VerificationResult) -> str:
        refused = result.holes_used.get(item.hole.goal.qualified_name, ())
        if result.verdict is Verdict.NEW_ASSUMPTIONS and refused:  # --strict-holes
            return _hole_reason([use.label for use in refused])
        return result.detail

    async def check(chosen: list[Candidate]) -> VerificationResult:
        nonlocal verified_text
        patches = [item.patch for item in chosen]
        patched = apply_patches(text, patches, backend.import_insertion(text, patches))
        goals = [item.hole.goal for item in chosen]
        result = await verifier.verify(path, text, patched, goals, frozenset(axioms))
        if result.accepted:
            if strict_holes and any(result.holes_used.values()):
                return refuse_holes(result)
            for item in chosen:
                used[item.span] = result.holes_used.get(item.hole.goal.qualified_name, ())
            verified_text = patched
        return result

    # Verify everything at once; on failure, drop the candidates the verifier
    # blames (the lemma at the compiler's error line, or those with new
    # assumptions) and try again. Only when it blames nobody, fall back to
    # adding candidates one at a time, in file order (a lemma's proof may use
    # the holes above it), going round again while a round accepts something:
    # a candidate that used a hole accepted later in the round gets its retry.
    # ``accepted`` only grows on an accepting check, so the last accepting
    # check's text holds exactly the accepted patches.
    remaining = sorted(candidates, key=lambda item: item.hole.proof_start)
    accepted: list[Candidate] = []
    while remaining:
        result = await check(remaining)
        if result.accepted:
            accepted = remaining
            break
        blamed = blamed_candidates(path, text, remaining, result)
        if not blamed:
            failures: dict[tuple[int, int], str] = {}
            while remaining:
                still: list[Candidate] = []
                for item in remaining:
                    single = await check([*accepted, item])
                    if single.accepted:
                        accepted.append(item)
                    else:
                        still.append(item)
                        failures[item.span] = reason(item, single)
                if len(still) == len(remaining):
                    break
                remaining = still
            for item in remaining:
                reject(item, failures[item.span])
            break
        for item in blamed:
            reject(item, reason(item, result))
        dropped = {item.span for item in blamed}
        remaining = [item for item in remaining if item.span not in dropped]
    uses = with_closure(path, {item.span: item for item in accepted}, used)
    for item in accepted:
        item.report.outcome = Outcome.PROVED
        item.report.uses_holes = uses.get(item.span, ())
    file_report.verify_cpu_seconds = verifier.cpu_seconds - cpu_before
    file_report.verify_compiles = verifier.compilations - compiles_before
    return Verified(accepted, verified_text if accepted else text)


def _hole_reason(labels: list[str]) -> str:
    return (
        "the proof uses " + ", ".join(sorted(set(labels))) + ", which has no verified proof "
        "yet (its Admitted/sorry would become an assumption; --strict-holes refuses such proofs)"
    )


def refuse_holes(result: VerificationResult) -> VerificationResult:
    """An accepted result whose proofs use holes, as ``--strict-holes`` sees it: refused,
    the lemmas that use holes blamed, with the old kind of reason."""
    entries = tuple(
        f"{name}: {use.label}" for name, found in result.holes_used.items() for use in found
    )
    labels = [entry.split(": ", 1)[1] for entry in entries]
    return VerificationResult(
        Verdict.NEW_ASSUMPTIONS,
        _hole_reason(labels),
        entries,
        result.cpu_seconds,
        offending=tuple(name for name, found in result.holes_used.items() if found),
        holes_used=result.holes_used,
    )


def with_closure(
    path: Path,
    accepted: dict[tuple[int, int], Candidate],
    used: dict[tuple[int, int], tuple[HoleUse, ...]],
) -> dict[tuple[int, int], tuple[HoleUse, ...]]:
    """The holes each accepted proof rests on once all of ``accepted`` are in the file.

    A proof checked before a hole it used was accepted (one at a time, a later
    round) rests on what that hole's proof rests on instead.
    """
    own = {(str(path), item.hole.goal.qualified_name): key for key, item in accepted.items()}

    def resolve(key: tuple[int, int], seen: frozenset[tuple[int, int]]) -> tuple[HoleUse, ...]:
        found: dict[tuple[str, str], HoleUse] = {}
        for use in used.get(key, ()):
            other = own.get((use.file, use.name))
            if other is None:
                found[use.file, use.name] = use
            elif other not in seen:
                for deeper in resolve(other, seen | {other}):
                    found[deeper.file, deeper.name] = deeper
        return tuple(sorted(found.values(), key=lambda use: use.label))

    return {key: resolve(key, frozenset({key})) for key in accepted}


def leans_on(sentences: tuple[str, ...], names: frozenset[str]) -> bool:
    """Whether a script names one of ``names`` (other holes): a proof that likely rests
    on them. Only a preference between candidates (the verifier decides)."""
    if not names:
        return False
    words = {w.rstrip(".") for s in sentences for w in _IDENTIFIER.findall(s)}
    return any(w in names or w.rsplit(".", 1)[-1] in names for w in words)


def blamed_candidates(
    path: Path, text: str, chosen: list[Candidate], result: VerificationResult
) -> list[Candidate]:
    """The candidates that a failed verification points at."""
    if result.verdict is Verdict.NEW_ASSUMPTIONS:
        names = set(result.offending)
        return [item for item in chosen if item.hole.goal.qualified_name in names]
    if result.error_line is None:
        return []
    patches = [item.patch for item in chosen]
    at, imports = backend_for(path).import_insertion(text, patches)
    added = imports.count("\n")
    if added:
        # the imports' own lines: blame the proofs that need them
        first_import = text.count("\n", 0, at) + (2 if at else 1)
        if first_import <= result.error_line < first_import + added:
            return [item for item in chosen if item.patch.imports]
    # find the patched proof (or its helpers) that contains the error line
    ordered = sorted(chosen, key=lambda item: item.hole.proof_start)
    shift = 0
    for item in ordered:
        hole, patch = item.hole, item.patch
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
