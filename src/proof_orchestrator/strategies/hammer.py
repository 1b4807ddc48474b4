"""CoqHammer: ``hammer`` (external ATPs, then proof reconstruction) and the ``sauto`` family.

``hammer`` needs its helper programs on ``PATH`` (Debian puts them in
``/usr/libexec/coq-hammer``; :func:`hammer_environment` adds that folder) and
runs two ATP strategies at a time on two cores (``Set Hammer GSMode 2``). When
it succeeds it prints the tactic that reconstructs the proof inside Coq
("Replace the hammer tactic with: ..."). That tactic, not ``hammer``, becomes
the stored proof: it is checked again on its own in the session, and later
checks need no external prover.

Both strategies run only where the file has CoqHammer loaded (``Locate Ltac``
finds ``Hammer.Tactics.Tactics.sauto``; ``hammer`` itself needs
``From Hammer Require Import Hammer``). A proof never adds an import: a file
without CoqHammer gets neither. ``orch eval`` loads CoqHammer in front of
every file it evaluates, which is what makes the peer comparison possible.
"""

from __future__ import annotations

import math
import os
import re
import time

from ..goals import Budget, Goal, Outcome
from ..provers.base import TacticStatus
from ..provers.coq import CoqSession
from .base import StrategyResult
from .micro import _QuickTactics

__all__ = [
    "HAMMER_LIBEXEC",
    "HAMMER_PREAMBLE",
    "SAUTO_TACTICS",
    "HammerStrategy",
    "SautoStrategy",
    "dependencies",
    "hammer_environment",
    "reconstruction",
    "replacements",
]

HAMMER_LIBEXEC = "/usr/libexec/coq-hammer"
#: sentences that load CoqHammer in front of a file (used by ``orch eval``)
HAMMER_PREAMBLE = ("From Hammer Require Import Hammer.", "Set Hammer GSMode 2.")
SAUTO_TACTICS = (
    "qauto.",
    "hauto.",
    "sauto.",
    "hauto lq: on.",
    "sauto lq: on.",
    "qauto l: on.",
    "hauto l: on.",
    "strivial.",
)
_REPLACE = re.compile(r"Replace the hammer tactic with:\s*(?P<tactic>[^<]+)")


def hammer_environment() -> None:
    """Put CoqHammer's helper programs on ``PATH`` for the provers this process starts."""
    path = os.environ.get("PATH", "")
    if os.path.isdir(HAMMER_LIBEXEC) and HAMMER_LIBEXEC not in path.split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([HAMMER_LIBEXEC, path]) if path else HAMMER_LIBEXEC


_DEPENDENCIES = re.compile(r"- dependencies:\s*(?P<names>[^<\n]+)")


def dependencies(output: str) -> list[str]:
    """The lemmas the ATP proof used, as ``hammer`` lists them."""
    match = _DEPENDENCIES.search(output)
    if match is None:
        return []
    return [n.strip() for n in match.group("names").split(",") if n.strip()]


def replacements(output: str) -> list[str]:
    """Tactics to store instead of ``hammer``: the one it printed, then the ``sauto`` family
    with the dependencies it found (some printed tactics do not parse on their own)."""
    found: list[str] = []
    printed = reconstruction(output)
    if printed:
        found.append(printed)
    names = dependencies(output)
    if names:
        use = ", ".join(names)
        found += [f"hauto use: {use}.", f"sauto use: {use}.", f"qauto use: {use}."]
        found.append(f"eauto using {use}.")
    return list(dict.fromkeys(found))


def reconstruction(output: str) -> str | None:
    """The tactic ``hammer`` says to use instead of itself, or None."""
    match = _REPLACE.search(output)
    if match is None:
        return None
    tactic = " ".join(match.group("tactic").split()).removesuffix(".").strip()
    return f"{tactic}." if tactic else None


async def _has_hammer_tactics(session: CoqSession) -> bool:
    return await session.locate_ltac("Hammer.Tactics.Tactics.sauto") is not None


class SautoStrategy(_QuickTactics):
    """The ``sauto`` family of CoqHammer's tactics (no external prover)."""

    name = "sauto"

    async def scripts(self, session: CoqSession) -> list[str]:
        if not await _has_hammer_tactics(session):
            return []
        return list(SAUTO_TACTICS)


class HammerStrategy:
    """``hammer`` with its ATPs; the stored proof is the reconstruction tactic."""

    name = "hammer"
    weight = "heavy"

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        del goal
        started = time.monotonic()
        cpu_start = session.cpu_seconds()

        def result(
            outcome: Outcome, script: tuple[str, ...] = (), message: str = ""
        ) -> StrategyResult:
            return StrategyResult(
                outcome,
                script,
                1,
                session.cpu_seconds() - cpu_start,
                time.monotonic() - started,
                message,
            )

        if not await _has_hammer_tactics(session):
            return result(Outcome.FAILED, message="CoqHammer is not loaded in this file")
        # two ATPs run at once: their time limit is half the CPU budget
        atp = max(1, math.floor(budget.cpu_seconds / 2))
        settings = await session.run_script(
            [f"Set Hammer ATPLimit {atp}.", f"Set Hammer ReconstrLimit {max(1, atp // 2)}."],
            session.root,
            timeout=5,
        )
        state = settings.state if settings.ok else session.root
        # the ATPs and the reconstruction together stay within the CPU budget
        found = await session.run_tactic(
            "hammer.",
            state,
            timeout=budget.cpu_seconds + 2,
            cpu_limit=budget.cpu_seconds - (session.cpu_seconds() - cpu_start),
        )
        if found.status is TacticStatus.TIMEOUT:
            return result(Outcome.TIMEOUT)
        if found.status is not TacticStatus.COMPLETE:
            return result(Outcome.FAILED, message=found.message[-300:])
        tactics = replacements(found.message)
        if not tactics:
            return result(Outcome.FAILED, message="hammer printed no reconstruction tactic")
        for tactic in tactics:
            left = budget.cpu_seconds - (session.cpu_seconds() - cpu_start)
            if left <= 0:
                return result(Outcome.TIMEOUT, message="no CPU left to replay the reconstruction")
            check = await session.run_tactic(
                tactic, session.root, timeout=max(5.0, atp), cpu_limit=left
            )
            if check.status is TacticStatus.COMPLETE:
                return result(Outcome.CANDIDATE, (tactic,))
        return result(Outcome.FAILED, message=f"no reconstruction of {tactics!r} replayed")
