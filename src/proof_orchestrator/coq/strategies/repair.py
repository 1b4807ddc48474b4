"""The ``repair`` strategy: a broken proof repaired from its old script (``orch repair``).

It works in the goal's session on the stand-in file (earlier broken proofs
admitted, see :mod:`..broken`), in this order, each script checked by Coq to
the end (no goal left) within the budget:

1. **Names.** When the error names an unknown reference, the old script with
   that name replaced by each name in scope that resembles it (the file's and
   the project's lemmas, closest spelling first).
2. **From where it broke.** The old script is replayed up to the sentence where
   Coq stopped; from there, that sentence is tried in variants that survive
   the usual changes (``simpl``/``cbn``/``unfold`` first, where a definition
   no longer unfolds; ``eapply``/``eauto`` where a lemma gained or reordered a
   hypothesis; ``auto`` with the lemmas the script and the file name, where a
   hint disappeared), followed by the rest of the old script, or with
   automation to close what is left.
3. **Whole-script variants** of the same kinds, from the start.

What it finds is a candidate like any strategy's: the whole-file check and the
axiom audit decide. The statement is never touched.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

from ...goals import Budget, Goal, Outcome
from ...provers.base import ProofState, TacticStatus
from ...strategies.base import StrategyDefaults, StrategyResult
from ...strategies.repairing import similar_names
from ..broken import BrokenProof
from ..session import CoqSession
from .knn import FileModels
from .lemma_search import LemmaSearch, plain_goal
from .repair_variants import (
    argument_variants,
    refused_name,
    reintroductions,
    sentence_variants,
    without_names,
)
from .search import SearchStrategy

__all__ = ["RepairStrategy", "unknown_reference"]

_UNKNOWN = re.compile(
    r"(?:The (?:reference|variable) |Unknown constant |Unknown inductive |No such hint )"
    r"([\w'.]+)"
)
_IDENT = re.compile(r"[A-Za-z_][\w']*(?:\.[A-Za-z_][\w']*)*")
#: tactics that close what a replayed script leaves, tried in order
_CLOSERS = (
    "auto",
    "eauto",
    "easy",
    "intuition",
    "firstorder",
    "congruence",
    "simpl in *; auto",
    "intros; subst; auto",
    "auto with *",
)
#: the most candidate names tried for an unknown reference
_NAME_CANDIDATES = 8
#: how many times a script is run again without a name Coq refused in its ``using``
_REFUSED_RETRIES = 4
#: the least CPU seconds left for a search from where the old proof broke
_MIN_SEARCH_SECONDS = 1.0
#: the most old tactics a search from there tries first at every node
_PREFERRED = 6
_BULLETS = frozenset({"-", "+", "*", "--", "++", "**", "{", "}"})
#: the most lemmas handed to ``eauto using``
_USING = 12


def unknown_reference(error: str) -> str | None:
    """The name Coq could not find, from its error message."""
    found = _UNKNOWN.search(error)
    return found.group(1).rstrip(".") if found else None


def _replace_name(sentence: str, old: str, new: str) -> str:
    return re.sub(rf"(?<![\w'.]){re.escape(old)}(?![\w'])", new, sentence)


class RepairStrategy(StrategyDefaults):
    """Repair one broken proof from its old script (see the module's docstring)."""

    name = "repair"
    weight = "light"
    language = "coq"
    uses_slot = True
    needs_ledger = False

    def __init__(
        self,
        broken: BrokenProof,
        names: Sequence[str] = (),
        definitions: Sequence[str] = (),
        opaque: Iterable[str] = (),
        models: FileModels | None = None,
    ) -> None:
        self.broken = broken
        #: lemma names in scope (the file's, the project's): replacements and ``using``
        self.names = tuple(dict.fromkeys(names))
        #: definitions of the file and the project (``unfold`` candidates)
        self.definitions = frozenset(definitions)
        #: constants made ``Opaque`` (``unfold`` refuses them; ``cbv delta`` does not)
        self.opaque = frozenset(opaque)
        #: the k-NN model of the file's earlier proofs, for a search from where it broke
        self.models = models if models is not None else FileModels()
        #: names Coq refused in a ``using`` list (not in scope, not usable as a hint)
        self._refused: set[str] = set()

    def _renamed(self) -> list[tuple[str, ...]]:
        missing = unknown_reference(self.broken.error)
        if missing is None:
            return []
        return [
            tuple(_replace_name(s, missing, new) for s in self.broken.script)
            for new in similar_names(missing, self.names, _NAME_CANDIDATES)
        ]

    def _using(self, goal_text: str) -> str:
        """Lemmas for ``eauto using``: those the old script names, then the file's and the
        project's whose names share the most words with the goal."""
        script = " ".join(self.broken.script)
        named = [n for n in _IDENT.findall(script) if n in self.names]
        words = set(_IDENT.findall(goal_text))
        ranked = sorted(
            (n for n in self.names if n not in named),
            key=lambda n: -len(words & set(re.split(r"[_.']", n))),
        )
        return ", ".join(list(dict.fromkeys([*named, *ranked]))[:_USING])

    def _unfold(self, goal_text: str) -> list[str]:
        named = [n for n in dict.fromkeys(_IDENT.findall(goal_text)) if n in self.definitions]
        return list(dict.fromkeys([*named, *sorted(self.opaque)]))

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        seconds = max(1.0, budget.tactic_seconds)
        tried = 0

        def spent() -> float:
            return session.cpu_seconds() - cpu_start

        def result(
            outcome: Outcome, script: tuple[str, ...] = (), message: str = ""
        ) -> StrategyResult:
            return StrategyResult(
                outcome, script, tried, spent(), time.monotonic() - started, message
            )

        async def closes(script: Sequence[str], state: ProofState) -> tuple[str, ...] | None:
            """The script as it closed the goal (without names Coq refused in a
            ``using`` list), or None."""
            nonlocal tried
            script = tuple(without_names(s, self._refused) for s in script)
            for _ in range(_REFUSED_RETRIES):
                tried += 1
                done = await session.run_script(script, state, timeout=seconds)
                if done.status is TacticStatus.COMPLETE:
                    return script
                refused = refused_name(done.message)
                if refused is None or refused in self._refused:
                    return None
                self._refused.add(refused)
                shorter = tuple(without_names(s, self._refused) for s in script)
                if shorter == script:
                    return None
                script = shorter
            return None

        def candidates_from(
            prefix: tuple[str, ...], variants: Iterable[str], rest: tuple[str, ...]
        ) -> Iterator[tuple[str, ...]]:
            for variant in variants:
                if rest:
                    yield (*prefix, variant, *rest)
                yield (*prefix, variant)

        broken = self.broken
        root = session.root
        for script in self._renamed():
            if spent() >= budget.cpu_seconds:
                return result(Outcome.TIMEOUT)
            if (closed := await closes(script, root)) is not None:
                return result(Outcome.CANDIDATE, closed)
        prefix = broken.script[: broken.failing_index]
        rest = broken.script[broken.failing_index + 1 :]
        state = root
        goal_text = goal.statement
        if prefix:
            replayed = await session.run_script(prefix, root, timeout=seconds)
            if replayed.ok:
                state = replayed.state
                goal_text = " ".join(replayed.goals) or goal_text
            else:
                prefix = ()
        using = self._using(goal_text)
        failing = broken.failing if broken.failing_index < len(broken.script) else ""
        # where it broke: the failing sentence in variants, then closers there
        opaque = self.opaque
        local = list(
            candidates_from(
                (), sentence_variants(failing, self._unfold(goal_text), using, opaque), rest
            )
        )
        local += [(f"{c}.",) for c in _CLOSERS] + [(f"eauto using {using}.",)] * bool(using)
        for tail in dict.fromkeys(local):
            if spent() >= budget.cpu_seconds:
                return result(Outcome.TIMEOUT)
            if (closed := await closes(tail, state)) is not None:
                return result(Outcome.CANDIDATE, (*prefix, *closed))
        # an unknown name: the lemmas Coq's ``Search`` finds for the goal where it was used
        missing = unknown_reference(broken.error)
        if missing is not None and broken.failing_index < len(broken.script):
            tail = broken.script[broken.failing_index :]
            for name in await self._by_shape(session, state, seconds):
                if spent() >= budget.cpu_seconds:
                    return result(Outcome.TIMEOUT)
                renamed = tuple(_replace_name(s, missing, name) for s in tail)
                if (closed := await closes(renamed, state)) is not None:
                    return result(Outcome.CANDIDATE, (*prefix, *closed))
        # the statement changed under its own proof: its premises in the old order
        for reintroduced in reintroductions(goal.statement):
            if spent() >= budget.cpu_seconds:
                return result(Outcome.TIMEOUT)
            if (closed := await closes((reintroduced, *broken.script), root)) is not None:
                return result(Outcome.CANDIDATE, closed)
        # the whole script, each sentence in turn given its variants
        unfold = self._unfold(goal.statement)
        lemmas = frozenset(self.names)
        for index, sentence in enumerate(broken.script):
            head, tail = broken.script[:index], broken.script[index + 1 :]
            variants = [
                *argument_variants(sentence, lemmas),
                *(
                    ()
                    if index == broken.failing_index
                    else sentence_variants(sentence, unfold, using, opaque)
                ),
            ]
            for variant in dict.fromkeys(variants):
                if spent() >= budget.cpu_seconds:
                    return result(Outcome.TIMEOUT)
                if (closed := await closes((*head, variant, *tail), root)) is not None:
                    return result(Outcome.CANDIDATE, closed)
        # best-first search from where it broke, the old proof's remaining tactics first
        left = budget.cpu_seconds - spent()
        if left >= _MIN_SEARCH_SECONDS and state is not root:
            remaining = [t for t in rest if t.strip().rstrip(".") not in _BULLETS]
            steps = await SearchStrategy(self.models).search_from(
                session, state, replace(budget, cpu_seconds=left), remaining[:_PREFERRED]
            )
            if steps is not None:
                return result(Outcome.CANDIDATE, (*prefix, *steps))
        return result(
            Outcome.FAILED, message=f"no variant of the old proof closes it ({tried} tried)"
        )

    async def _by_shape(self, session: CoqSession, state: ProofState, seconds: float) -> list[str]:
        """Lemmas in scope that fit the goal at ``state``, by Coq's ``Search`` over its
        constants (the statement where a lost name was used)."""
        await session.run_tactic("idtac.", state, timeout=seconds)  # the session there
        plain = await plain_goal(session)
        if plain is None:
            return []
        found = await LemmaSearch(k=_NAME_CANDIDATES).premises(session, plain)
        return [name for name, _ in found]
