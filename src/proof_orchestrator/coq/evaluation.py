"""The Coq side of ``orch eval``: finished proofs as goals, the peers, the position-faithful check.

:mod:`proof_orchestrator.workflows.evaluate` runs the evaluation (the arms,
their order, the portfolio through the engine, the summary); what is Coq's
is here: the ``Qed`` proofs of a file are the goals, the peers, and the check
of an arm's candidate in the goal's own session (the gate, ``Qed``, then the
audit of :mod:`.audit`, position-faithful: the trust base is the axioms of the
``Qed`` proofs *before* the goal, :class:`~.audit.TrustBase`).

CoqHammer is loaded in front of every file (``From Hammer Require Import
Hammer``), so that ``hammer`` can run; the files to evaluate must not be among
the ~200 library modules it loads, or their lemmas would be in scope
(:meth:`CoqEvaluation.clashes`). Where CoqHammer in front breaks a file
(``ssrbool`` breaks MSetWeakList.v), the ``hammer`` arms load it just before
the statement, as fill's side sessions do, and say so in their note. The
portfolio works in the file as ``orch fill`` does, without CoqHammer in front.

The peers (``--baseline``):

* ``hammer``: CoqHammer as its users run it, ``Timeout B hammer.`` with
  CoqHammer's defaults (``Set Hammer GSMode 2`` on two cores, as its
  documentation advises), B the budget. Its CPU time is measured like every
  arm's, its ATPs included; it is not cut at the CPU budget (Coq's
  ``Timeout`` is wall-clock, as for a user);
* ``hammer-capped``: ``hammer`` as the portfolio runs it, ATP limit half the
  budget, reconstruction limit a quarter, killed when coqtop and its ATPs
  together reach the budget;
* ``tactics``: a standard tactic list (``auto``, ``intuition``, ``lia``,
  ``congruence``, ``firstorder``, ``intros; subst; auto``, ``simpl; auto``),
  each under its own timeout (``tactic_seconds``), the whole list tried
  whatever the budget, with Lia loaded in front of the file instead of
  CoqHammer.
"""

from __future__ import annotations

import functools
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import OrchError, PrefixError, ScriptRejected
from ..goals import Budget, Goal, HoleKind, Outcome
from ..provers.base import TacticStatus
from ..provers.settings import CoqSettings
from ..strategies.base import StrategyResult
from .audit import (
    TrustBase,
    as_parameter,
    is_parameter,
    library_axiom,
    listed_axioms,
    located_constant,
    unexplained,
)
from .holes import CoqHole, declared_axioms, functor_parameters, qed_proofs
from .project import project_for
from .prover import CoqProver
from .script import check_script
from .session import NO_MICROMEGA_CACHE, CoqSession
from .strategies.hammer import (
    HAMMER_PREAMBLE,
    HammerStrategy,
    hammer_environment,
    reconstruction,
)
from .strategies.micro import _QuickTactics

__all__ = [
    "TACTICS_BASELINE",
    "TACTICS_PREAMBLE",
    "CoqEvaluation",
    "FileEvaluation",
    "GoalAudit",
]

#: the ``tactics`` baseline: a standard tactic list, each tactic under its own timeout
TACTICS_BASELINE = (
    "auto.",
    "intuition.",
    "lia.",
    "congruence.",
    "firstorder.",
    "intros; subst; auto.",
    "simpl; auto.",
)
#: what the ``tactics`` baseline loads in front of the file (CoqHammer is not loaded
#: for it, so its ``auto`` sees the file's hints, not those of CoqHammer's libraries)
TACTICS_PREAMBLE = ("From Coq Require Import Lia.", *NO_MICROMEGA_CACHE)


class _FixedTactics(_QuickTactics):
    name = "tactics"

    async def scripts(self, session: CoqSession) -> list[str]:
        lia = await session.locate_ltac("Coq.micromega.Lia.lia")
        return [t for t in TACTICS_BASELINE if "lia" not in t or lia is not None]


async def _in_hammer_libraries(prover: CoqProver, files: Sequence[Path]) -> list[str]:
    """Logical names that CoqHammer's load brings in, among the evaluated stdlib files."""

    probe = Goal(Path("probe.v"), 0, "probe", "Lemma probe : True.", HoleKind.ADMITTED, "probe")
    async with prover.session_at(probe, [*HAMMER_PREAMBLE, "Lemma probe : True."]) as session:
        loaded = set(re.findall(r"\b(Coq(?:\.[\w']+)+)", await session.query("Print Libraries.")))
    clashes = []
    for path in files:
        parts = path.resolve().parts
        if "theories" in parts:
            logical = "Coq." + ".".join(parts[parts.index("theories") + 1 :])[: -len(".v")]
            if logical in loaded:
                clashes.append(f"{path} ({logical})")
    return clashes


def _arm_clock(session: CoqSession) -> Callable[[], float]:
    """CPU seconds spent since now: the prover's and this thread's."""
    prover_start, own_start = session.cpu_seconds(), time.process_time()
    return lambda: session.cpu_seconds() - prover_start + time.process_time() - own_start


async def _run_arm(
    arm: str, session: CoqSession, hole: CoqHole, budget: Budget
) -> tuple[StrategyResult | None, str]:
    """A peer's first candidate (or None) and the strategy that found it."""
    if arm == "hammer":
        return await _hammer_as_users_run_it(session, budget), "hammer"
    if arm == "hammer-capped":
        found = await HammerStrategy().prove(session, hole.goal, budget)
        return (found, "hammer") if found.outcome is Outcome.CANDIDATE else (None, "")
    if arm == "tactics":
        # each tactic under its own timeout, the whole list whatever the arms' budget
        whole = len(TACTICS_BASELINE) * max(1, math.ceil(budget.tactic_seconds))
        found = await _FixedTactics().prove(
            session, hole.goal, Budget(whole, budget.tactic_seconds, budget.grace_seconds)
        )
        return (found, "tactics") if found.outcome is Outcome.CANDIDATE else (None, "")
    raise OrchError(f"unknown arm {arm!r}")


async def _hammer_as_users_run_it(session: CoqSession, budget: Budget) -> StrategyResult | None:
    """``Timeout B hammer.`` in the session, CoqHammer's settings untouched; None if it fails.

    As a user would, the proof kept is the reconstruction tactic hammer prints
    ("Replace the hammer tactic with: ..."), which the ``Qed`` check then runs
    without the ATPs; ``hammer.`` itself only when it printed none.
    """
    spent = _arm_clock(session)
    started = time.monotonic()
    found = await session.run_tactic("hammer.", session.root, timeout=budget.cpu_seconds)
    if found.status is not TacticStatus.COMPLETE:
        return None
    script = reconstruction(found.message) or "hammer."
    return StrategyResult(Outcome.CANDIDATE, (script,), 1, spent(), time.monotonic() - started)


_SETTINGS = CoqSettings(max_idle=2)


def _prefix(
    prover: CoqProver, text: str, hole: CoqHole, arm: str = "hammer", *, late: bool = False
) -> list[str]:
    """The sentences a peer's session runs: its preamble in front of the file's prefix,
    or (``late``) just before the goal's statement."""
    front = TACTICS_PREAMBLE if arm == "tactics" else HAMMER_PREAMBLE
    codes = prover._prefix_codes(text, hole.prefix_end)
    if late:
        return [*codes[:-1], *front, *codes[-1:]]
    return [*front, *codes]


#: the note of a ``hammer`` arm whose CoqHammer was loaded just before the statement
LOADED_LATE = "CoqHammer loaded before the statement (the file does not load with it in front)"


async def _checked(
    session: CoqSession,
    found: StrategyResult | None,
    hole: CoqHole,
    audit: GoalAudit,
    budget: Budget,
) -> tuple[bool, str, tuple[str, ...]]:
    """(solved, note, script): the gate, then ``Qed`` and the axiom audit in ``session``."""
    if found is None:
        return False, "", ()
    try:
        script = check_script(found.sentences)
    except ScriptRejected as exc:
        return False, f"rejected: {exc}", ()
    ok, assumptions = await session.qed_check(script, hole.goal.name, budget.tactic_seconds + 5)
    # the file's own axioms and, inside a functor, its parameters (``O.lt_trans``; after
    # ``Import O`` printed unqualified, so asked with ``Locate``)
    extra = unexplained(assumptions, audit.declared, audit.parameters) if ok else ["(Qed failed)"]
    if ok and audit.parameters:
        extra = [
            name
            for name in extra
            if "." in name
            or not is_parameter(
                as_parameter(
                    name,
                    located_constant(await session.query(f"Locate {name}.")),
                    audit.parameters,
                ),
                audit.parameters,
            )
        ]
    if ok and extra:
        trusted = await audit.trust.before(session, audit.index)
        extra = [name for name in extra if name not in trusted]
    if ok and extra:
        own = await audit.original_axioms(session, hole.goal.name, budget.tactic_seconds + 5)
        extra = [name for name in extra if name not in own]
    if ok and extra and audit.trust_library_axioms:
        # an axiom an installed library declares (the same rule as the verifier's)
        extra = [
            name
            for name in extra
            if not library_axiom(located_constant(await session.query(f"Locate {name}.")) or name)
        ]
    solved = ok and not extra
    return solved, "" if solved else "rejected: " + ", ".join(extra), script


@dataclass(slots=True)
class GoalAudit:
    """What a goal's proof may assume: the file's own axioms (short names) and its trust base."""

    declared: frozenset[str]
    trust: TrustBase
    #: the goal's place among the file's ``Qed`` proofs
    index: int
    #: the parameters of the functors the goal is in (see :func:`.holes.functor_parameters`)
    parameters: frozenset[str] = frozenset()
    #: the goal's original proof (its sentences, opener and ``Qed`` excluded)
    original: tuple[str, ...] = ()
    #: trust an axiom an installed library declares (False: ``--strict-axioms``)
    trust_library_axioms: bool = True
    _own: frozenset[str] | None = None

    async def original_axioms(
        self, session: CoqSession, name: str, timeout: float
    ) -> frozenset[str]:
        """The axioms the goal's original proof rests on, replayed once in ``session``.

        A re-proof may use what the library's author accepted for this very
        statement: the first lemma of a file about the reals rests on the reals'
        axioms, though no earlier proof in the file is there to trust them.
        """
        if self._own is None:
            ok, output = await session.qed_check(self.original, name, timeout)
            self._own = frozenset(listed_axioms(output)) if ok else frozenset()
        return self._own


@functools.lru_cache(maxsize=8)
def _functor_parameters(text: str) -> dict[str, frozenset[str]]:
    return functor_parameters(text)


class FileEvaluation:
    """One file under evaluation: its ``Qed`` proofs, a prover with CoqHammer in front,
    the trust base as the goals advance."""

    def __init__(self, path: Path, text: str, *, strict_axioms: bool = False) -> None:
        self.path = path
        self.text = text
        self.strict_axioms = strict_axioms
        #: (hole, original proof sentences) of every ``Qed`` proof, in file order
        self.proofs = qed_proofs(path, text)
        project = project_for(path)
        self.prover = CoqProver(project.flags_for(path), cwd=str(project.root), settings=_SETTINGS)
        self.trust = TrustBase([proved.goal.qualified_name for proved, _ in self.proofs])
        #: where (``prefix_end``) the file stopped loading with CoqHammer in front
        self._late_from: int | None = None

    def audit_for(self, index: int) -> GoalAudit:
        hole, original = self.proofs[index]
        return GoalAudit(
            declared_axioms(self.text[: hole.statement_start]),
            self.trust,
            index,
            _functor_parameters(self.text).get(hole.goal.qualified_name, frozenset()),
            original,
            trust_library_axioms=not self.strict_axioms,
        )

    async def check(
        self, session: Any, found: StrategyResult | None, index: int, budget: Budget
    ) -> tuple[bool, str, tuple[str, ...]]:
        """(solved, note, script) for an arm's candidate, checked in ``session``."""
        hole = self.proofs[index][0]
        return await _checked(session, found, hole, self.audit_for(index), budget)

    async def baseline(
        self, arm: str, index: int, budget: Budget
    ) -> tuple[str, float, bool, str, tuple[str, ...]]:
        """A peer on goal ``index``: (strategy, CPU seconds, solved, note, script)."""
        hole = self.proofs[index][0]
        late = arm != "tactics" and self._front_fails(hole)
        try:
            return await self._baseline(arm, index, budget, late=late)
        except PrefixError:
            if late or arm == "tactics":
                raise
        # CoqHammer in front of the file breaks it (``Require ssrbool`` changes what
        # ``discriminate`` does in MSetWeakList.v); a user would load it lower down:
        # just before the statement, as fill's side sessions do
        self._late_from = min(self._late_from or hole.prefix_end, hole.prefix_end)
        return await self._baseline(arm, index, budget, late=True)

    def _front_fails(self, hole: CoqHole) -> bool:
        """Whether an earlier goal showed the prefix up to ``hole`` fails with CoqHammer
        in front."""
        return self._late_from is not None and hole.prefix_end >= self._late_from

    async def _baseline(
        self, arm: str, index: int, budget: Budget, *, late: bool
    ) -> tuple[str, float, bool, str, tuple[str, ...]]:
        hole = self.proofs[index][0]
        prefix = _prefix(self.prover, self.text, hole, arm, late=late)
        async with self.prover.session_at(hole.goal, prefix) as session:
            spent = _arm_clock(session)
            found, strategy = await _run_arm(arm, session, hole, budget)
            cpu = spent()
            solved, note, script = await _checked(
                session, found, hole, self.audit_for(index), budget
            )
        if late:
            note = "; ".join(n for n in (LOADED_LATE, note) if n)
        return strategy, cpu, solved, note, script

    async def aclose(self) -> None:
        await self.prover.aclose()


class CoqEvaluation:
    """What ``orch eval`` needs of Coq (the backend's ``evaluation`` feature)."""

    #: the peers this backend can run
    baselines = ("hammer", "hammer-capped", "tactics")

    @staticmethod
    def prepare() -> None:
        """Make CoqHammer's ATP helpers findable by every prover started from now on."""
        hammer_environment()

    @staticmethod
    async def clashes(files: Sequence[Path]) -> list[str]:
        """The evaluated files that CoqHammer's load already brings in (not position-faithful)."""
        probe = CoqProver(settings=_SETTINGS)
        try:
            return await _in_hammer_libraries(probe, files)
        finally:
            await probe.aclose()

    @staticmethod
    def goal_names(path: Path, text: str) -> list[str]:
        """The names of the file's ``Qed`` proofs, in file order (the goals)."""
        return [hole.goal.name for hole, _ in qed_proofs(path, text)]

    @staticmethod
    def open_file(path: Path, text: str, *, strict_axioms: bool = False) -> FileEvaluation:
        return FileEvaluation(path, text, strict_axioms=strict_axioms)
