"""The micro strategy: a curated, ordered list of short Coq scripts.

Each candidate is one sentence (combinations use ``;``), tried from the root
of the goal under Coq's ``Timeout``; the first one after which no goal
remains is the candidate proof. Candidates that depend on variables
(``induction n``, ``destruct b``) are generated for each variable of the goal,
found by a probing ``intros`` that is undone afterwards.

``lia`` lives in a library that a file may not load. Where ``Locate Ltac``
shows that ``Coq.micromega.Lia.lia`` is loaded at the hole, it is offered
under the name that reaches it there (``lia``, or ``Lia.lia`` when the module
is required but not imported). Where it is not, and the import ``lia`` is
allowed (``--allow-import``, on by default: Lia is part of Coq and declares no
axiom), micro tries :data:`LIA_WITH_IMPORT` last, in a side session that loads
Lia just before the statement; a proof found there carries the import
:data:`LIA_IMPORT`, which the patch adds after the file's last ``Require``
(the whole file is then verified as always). Without that permission a proof
never needs an import that the file does not already have.
"""

from __future__ import annotations

import abc
import math
import re
import time
from collections.abc import Sequence

from ...errors import PrefixError, SourceSyntaxError
from ...goals import Budget, Goal, Outcome
from ...provers.base import TacticStatus
from ...search.features import nearest_first
from ...strategies.base import StrategyDefaults, StrategyResult
from ..display import COQ
from ..learning import LEARNING
from ..script import passes_gate
from ..session import NO_MICROMEGA_CACHE, CoqSession
from ..syntax import one_sentence
from .closers import project_closers

__all__ = [
    "GENERIC_TACTICS",
    "LIA_IMPORT",
    "LIA_WITH_IMPORT",
    "PER_VARIABLE_TACTICS",
    "CachedStrategy",
    "FixedScripts",
    "InductionStrategy",
    "MicroStrategy",
    "lia_tactic",
    "nearest_first",
]

#: tried first, in this order; ``{lia}`` marks candidates that need lia
GENERIC_TACTICS: tuple[str, ...] = (
    "reflexivity",
    "trivial",
    "auto",
    "easy",
    "discriminate",
    "intros; subst; auto",
    "intros; simpl; auto",
    "intros; simpl; reflexivity",
    "intros; congruence",
    "{lia}",
    "intros; {lia}",
    "intros; simpl in *; {lia}",
    "intros; simpl in *; congruence",
    "auto with arith",
    "intros; split; auto",
    "intros; f_equal; auto",
    "intros; subst; simpl; auto with arith",
    "tauto",
    "intuition",
    "intros; intuition; subst; auto",
    "intros; intuition; {lia}",
    "intros; intuition; congruence",
    "intros; inversion_clear 1; auto",
    "eauto",
    "firstorder",
    "intros; repeat (f_equal; auto)",
    "intros; subst; simpl in *; intuition; try congruence; try discriminate",
    # case analysis on every boolean in sight, then compute
    "intros; repeat match goal with b : bool |- _ => destruct b end; simpl in *; "
    "try discriminate; auto",
    "intros; repeat match goal with b : bool |- _ => destruct b end; simpl in *; "
    "intuition; try discriminate; congruence",
)

#: tried for each variable ``{v}`` of the goal (``IH{v}`` is its induction hypothesis)
PER_VARIABLE_TACTICS: tuple[str, ...] = (
    "destruct {v}; reflexivity",
    "destruct {v}; simpl; auto",
    "destruct {v}; simpl; congruence",
    "destruct {v}; simpl; intuition; try discriminate; auto",
    "destruct {v}; intros; simpl in *; {lia}",
    "destruct {v}; eauto",
    "destruct {v}; simpl; intros; try discriminate; eauto",
    "induction {v}; simpl; auto",
    "induction {v}; simpl; congruence",
    "induction {v}; simpl; {lia}",
    "induction {v}; intros; simpl; auto",
    "induction {v}; intros; simpl in *; {lia}",
    "induction {v}; simpl; intros; try rewrite IH{v}; auto",
    "induction {v}; simpl; try rewrite IH{v}; reflexivity",
    "induction {v}; intros; simpl; f_equal; auto",
    "induction {v}; intros; simpl in *; congruence",
    "induction {v}; simpl; intuition; try congruence; try discriminate",
    "induction {v}; simpl; intuition; subst; auto",
    "induction {v}; simpl; intros; auto; match goal with H : _ = _ |- _ => injection H; auto end",
    "induction {v}; intros; simpl in *; intuition; try {lia}; try congruence",
    "induction {v}; intros; simpl; rewrite ?IH{v}; auto with arith",
    "induction {v}; intros; simpl in *; try rewrite IH{v}; try {lia}; auto",
)

_HYPOTHESIS = re.compile(r"^[ \t]*([A-Za-z_][\w']*(?:, [A-Za-z_][\w']*)*) : ", re.M)


def goal_variables(goal_text: str) -> list[str]:
    """Names introduced above the ``====`` line of a goal display."""
    above = goal_text.split("=====", 1)[0]
    names: list[str] = []
    for match in _HYPOTHESIS.finditer(above):
        names.extend(name.strip() for name in match.group(1).split(","))
    return names


def expand(templates: Sequence[str], lia: str | None, variable: str | None = None) -> list[str]:
    """Fill in ``{lia}`` and ``{v}``; drop templates that need an unavailable lia."""
    out: list[str] = []
    for template in templates:
        if "{lia}" in template and lia is None:
            continue
        text = template.replace("{lia}", lia or "")
        if variable is not None:
            text = text.replace("{v}", variable)
        out.append(text + ".")
    return out


class _QuickTactics(StrategyDefaults, abc.ABC):
    """Try one-sentence scripts from the root, first completion wins."""

    name = "quick"
    #: runs in a light slot
    weight = "light"
    language = "coq"
    uses_slot = True
    needs_ledger = False

    @abc.abstractmethod
    async def scripts(self, session: CoqSession) -> list[str]:
        """The one-sentence scripts to try, in order."""

    #: candidates tried in one request (one round trip to the prover)
    batch_size = 8

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        """Try the scripts in batches; identify the first one that closes the goal.

        A batch is one sentence, ``first [ solve [ timeout T (s1) ] | ... ]``:
        Coq tries each script under its own timeout and stops at the first
        that leaves no goal. Only when a batch succeeds are its scripts tried
        one by one, to find the one that becomes the proof. This makes one
        round trip per batch instead of one per script.
        """
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        seconds = max(1, math.ceil(budget.tactic_seconds))
        tried = 0
        last_message = ""
        outcome = Outcome.FAILED
        # a script the gate would refuse is never tried: it would win the goal and
        # then be thrown away, ahead of a later script that the gate accepts
        scripts = [s for s in await self.scripts(session) if passes_gate(s)]
        index = 0
        while index < len(scripts):
            left = budget.cpu_seconds - (session.cpu_seconds() - cpu_start)
            if left <= 0:
                outcome = Outcome.TIMEOUT
                break
            # a batch whose scripts all ran out of time would cost a timeout each: the
            # sentence gets what is left instead (at least one script's timeout). Most
            # scripts fail at once; batches cut to what the worst case would pay for sent
            # 32 scripts one by one at a grant of 2 CPU s (a round trip each)
            batch = scripts[index : index + self.batch_size]
            index += len(batch)
            tried += len(batch)
            batch_started = time.monotonic()
            result = await session.run_tactic(
                _first_of(batch, seconds),
                session.root,
                timeout=max(float(seconds), min(seconds * len(batch), left)),
            )
            # a failed batch that took a whole tactic timeout had a script run out of time
            slow = time.monotonic() - batch_started >= 0.95 * seconds
            if result.status is TacticStatus.COMPLETE:
                for script in batch:
                    single = await session.run_tactic(script, session.root, timeout=seconds)
                    if single.status is TacticStatus.COMPLETE:
                        # ``exact/inst`` can leave no goal and a term the kernel refuses
                        closed, message = await session.kernel_accepts((script,), seconds + 5)
                        if not closed:
                            last_message = message
                            continue
                        return StrategyResult(
                            Outcome.CANDIDATE,
                            (script,),
                            tried,
                            session.cpu_seconds() - cpu_start,
                            time.monotonic() - started,
                            kernel_checked=True,
                        )
            elif result.status is TacticStatus.TIMEOUT or slow:
                outcome = Outcome.TIMEOUT  # some script ran out of time: a larger budget may help
            else:
                last_message = result.message
        return StrategyResult(
            outcome,
            (),
            tried,
            session.cpu_seconds() - cpu_start,
            time.monotonic() - started,
            last_message[-500:],
        )


def _first_of(scripts: Sequence[str], seconds: int) -> str:
    """One sentence that tries ``scripts`` in order, each under its own timeout."""
    branches = " | ".join(
        f"solve [ timeout {seconds} ({s.rstrip().removesuffix('.')}) ]" for s in scripts
    )
    return f"first [ {branches} ]."


async def lia_tactic(session: CoqSession) -> str | None:
    """How to call ``lia`` here (None if it is not loaded).

    Where only a qualified name reaches it (``Lia.lia``), it is parenthesised:
    a sentence starting with a capital is read as a vernacular command by the
    script gate.
    """
    name = await session.locate_ltac("Coq.micromega.Lia.lia")
    if name is None or "." not in name:
        return name
    return f"({name})"


#: the import that lets a proof use ``lia`` where the file does not load it
LIA_IMPORT = "From Coq Require Import Lia."
#: tried with :data:`LIA_IMPORT` where the file does not load Lia: the standard list's
#: ``lia`` and its most common openings
LIA_WITH_IMPORT = ("lia.", "intros; lia.", "intros; simpl in *; lia.", "intros; intuition lia.")
#: CPU seconds the scripts with Lia's import get at least (the side session that loads
#: it counts against them)
LIA_MIN_SECONDS = 1.5


class FixedScripts(_QuickTactics):
    """A fixed list of one-sentence scripts, tried in batches."""

    def __init__(self, name: str, scripts: Sequence[str]) -> None:
        self.name = name
        self._scripts = list(scripts)

    async def scripts(self, session: CoqSession) -> list[str]:
        del session
        return self._scripts


class MicroStrategy(_QuickTactics):
    """Closing tactics and small combinations (:data:`GENERIC_TACTICS`), with the
    project's own closers (:mod:`.closers`) after the first few; then, where the file
    does not load Lia and its import is allowed, ``lia`` with that import."""

    name = "micro"
    #: generic tactics tried before the project's closers
    cheap_first = 5
    #: project closers tried at most
    closers = 8

    def __init__(self, allow_lia_import: bool = False) -> None:
        self.allow_lia_import = allow_lia_import

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        found = await super().prove(session, goal, budget)
        if found.outcome is Outcome.CANDIDATE or not self.allow_lia_import:
            return found
        if await lia_tactic(session) is not None:
            return found  # loaded here: its scripts were tried already
        started = time.monotonic()
        left = max(LIA_MIN_SECONDS, budget.cpu_seconds - found.cpu_seconds)
        try:
            async with session.side_session((LIA_IMPORT, *NO_MICROMEGA_CACHE)) as side:
                with_lia = await FixedScripts(self.name, LIA_WITH_IMPORT).prove(
                    side, goal, Budget(left, budget.tactic_seconds, budget.grace_seconds)
                )
                cpu = side.cpu_seconds()
        except PrefixError:
            return found  # Lia does not load there: what micro found without it stands
        wall = found.wall_seconds + time.monotonic() - started
        tried = found.tactics_tried + with_lia.tactics_tried
        if with_lia.outcome is Outcome.CANDIDATE:
            return StrategyResult(
                Outcome.CANDIDATE,
                with_lia.sentences,
                tried,
                found.cpu_seconds + cpu,
                wall,
                imports=(LIA_IMPORT,),
            )
        outcome = (
            Outcome.TIMEOUT
            if Outcome.TIMEOUT in (found.outcome, with_lia.outcome)
            else found.outcome
        )
        return StrategyResult(outcome, (), tried, found.cpu_seconds + cpu, wall, found.message)

    async def scripts(self, session: CoqSession) -> list[str]:
        generic = expand(GENERIC_TACTICS, await lia_tactic(session))
        known = set(generic)
        own = [c for c in await project_closers(session) if c not in known]
        return [*generic[: self.cheap_first], *own[: self.closers], *generic[self.cheap_first :]]


class InductionStrategy(_QuickTactics):
    """Case analysis and induction on each variable (:data:`PER_VARIABLE_TACTICS`)."""

    name = "induction"

    def __init__(self, *, max_variables: int = 6) -> None:
        self.max_variables = max_variables

    async def scripts(self, session: CoqSession) -> list[str]:
        lia = await lia_tactic(session)
        probe = await session.run_tactic("intros.", session.root, timeout=2)
        variables: list[str] = []
        if probe.ok:
            variables = goal_variables(probe.goals[0] if probe.goals else "")
        await session.back_to(session.root)
        scripts: list[str] = []
        for variable in variables[: self.max_variables]:
            scripts.extend(expand(PER_VARIABLE_TACTICS, lia, variable))
        return list(dict.fromkeys(scripts))


#: the one-sentence proofs of the nearest visible statements that ``cached`` tries first
NEAREST_VISIBLE = 8


class CachedStrategy(_QuickTactics):
    """Replay what proved the nearest goals before, then the ledger's most successful scripts.

    First the one-sentence proofs of the visible statements most like the goal
    (:mod:`..learning`: the file's own above it, the project files it imports,
    the libraries its session loads). Then ``proved``, (statement, script)
    pairs of verified proofs; the ones whose statements are most similar to the
    goal's (cosine over the k-NN model's hashed features) are tried first. The
    same fingerprint is replayed by the worker before any strategy runs.
    """

    name = "cached"

    def __init__(
        self, scripts: Sequence[str], proved: Sequence[tuple[str, Sequence[str]]] = ()
    ) -> None:
        self._scripts = [s for s in scripts if s.count(".") >= 1 and "\n" not in s]
        self._proved = list(proved)

    async def scripts(self, session: CoqSession) -> list[str]:
        goal = session.goal
        visible = await LEARNING.visible(session)
        near = visible.nearest(
            goal.statement, NEAREST_VISIBLE, exclude=(goal.name,), max_sentences=1
        )
        ordered = nearest_first(goal.statement, self._proved, self._scripts, COQ)
        return [
            s
            for s in dict.fromkeys([*(e.script[0] for _, e in near), *ordered])
            if _is_one_sentence(s)
        ]


def _is_one_sentence(text: str) -> bool:
    try:
        one_sentence(text)
    except SourceSyntaxError:
        return False
    return True
