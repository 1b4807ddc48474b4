"""The ``repair`` strategy for Lean: a broken proof repaired from its old tactics.

It works in the goal's session on the stand-in file (each broken proof
``sorry``, see :mod:`..broken`), from the proof state the REPL gives for that
``sorry``, in this order, each script run to the end (no goal left, nothing
papered over) within the budget:

1. **Names.** When Lean's error names an unknown identifier, the old script
   with that name replaced by each declaration of the file and the project
   whose name resembles it, closest spelling first.
2. **From where it broke.** The old tactics are replayed one by one up to the
   one where Lean stopped (or the first that fails in the replay, which may
   come earlier: the REPL checks each tactic on its own). From that state:
   the rest of the old script without the failing tactic; the failing tactic
   in variants that survive the usual changes (``simp`` first, ``unfold`` of
   the file's definitions, ``rw`` as ``simp only``, ``exact e`` as ``simpa
   using e``, ``apply e`` with ``simp_all`` after it), each followed by the
   rest of the old script or alone; then closers.

A script it finds is a candidate like any strategy's: the whole-file check and
the axiom audit decide. The statement is never touched. Search tactics
(``exact?``) are not used here: the fill lineup, which runs next on the same
goal, reads their suggestions.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence

from ...goals import Budget, Goal, Outcome
from ...provers.base import ProofState, TacticStatus
from ...strategies.base import StrategyDefaults, StrategyResult
from ...strategies.repairing import similar_names
from ..broken import BrokenProof, relative_sentence
from ..session import LeanSession

__all__ = ["CLOSERS", "MATHLIB_CLOSERS", "LeanRepairStrategy", "unknown_identifier", "variants"]

_UNKNOWN = re.compile(
    r"[Uu]nknown (?:identifier|constant|declaration) [`'‘]?(?P<name>[^\s`'’]+?)[`'’]?(?:\s|$)"
)
_IDENT = re.compile(r"[^\W\d][\w'.!?]*")
#: tactics that close what a replayed script leaves, tried in order
CLOSERS: tuple[str, ...] = ("rfl", "trivial", "decide", "simp", "simp_all", "omega")
#: ... and, in a file that imports Mathlib, these after them
MATHLIB_CLOSERS: tuple[str, ...] = ("norm_num", "linarith", "aesop")
#: the most candidate names tried for an unknown identifier
_NAME_CANDIDATES = 8


def unknown_identifier(error: str) -> str | None:
    """The name Lean could not find, from its error message."""
    found = _UNKNOWN.search(error + " ")
    return found.group("name").rstrip(".") if found else None


def _replace_name(sentence: str, old: str, new: str) -> str:
    return re.sub(rf"(?<![\w'.]){re.escape(old)}(?![\w'])", new, sentence)


def variants(tactic: str, unfold: Sequence[str]) -> Iterator[tuple[str, ...]]:
    """Forms of one tactic that survive the usual changes to what it relies on."""
    body = tactic.strip()
    if not body or body.startswith(("·", ".", "case ", "next")):
        return
    yield ("try simp at *", body)
    for name in unfold:
        yield (f"try unfold {name} at *", body)
    if re.match(r"(?:rw|rewrite|rwa)\s*\[", body):
        yield (re.sub(r"^(?:rw|rewrite|rwa)", "simp only", body),)
    if body.startswith("exact "):
        yield (f"simpa using {body.removeprefix('exact ').strip()}",)
    if body.startswith("apply "):
        yield (f"{body} <;> simp_all",)
    if re.match(r"simp\b(?!_all)", body):
        yield (re.sub(r"^simp\b", "simp_all", body),)
    yield (f"{body} <;> simp_all",)


class LeanRepairStrategy(StrategyDefaults):
    """Repair one broken Lean proof from its old tactics (see the module's docstring)."""

    name = "repair"
    weight = "light"
    language = "lean"
    uses_slot = True
    needs_ledger = False

    def __init__(
        self,
        broken: BrokenProof,
        names: Sequence[str] = (),
        definitions: Sequence[str] = (),
    ) -> None:
        self.broken = broken
        #: declarations in scope (the file's, the project's): replacements for a lost name
        self.names = tuple(dict.fromkeys(names))
        #: definitions of the file and the project (``unfold`` candidates)
        self.definitions = frozenset(definitions)

    def _renamed(self) -> list[tuple[str, ...]]:
        missing = unknown_identifier(self.broken.error)
        if missing is None:
            return []
        return [
            tuple(_replace_name(s, missing, new) for s in self.broken.script)
            for new in similar_names(missing, self.names, _NAME_CANDIDATES)
        ]

    def _output(self, script: Sequence[str]) -> tuple[str, ...]:
        """``script`` in the form every strategy's scripts have (continuation lines relative)."""
        return tuple(relative_sentence(s, self.broken.hole.block_column) for s in script)

    def _closers(self, session: LeanSession) -> tuple[str, ...]:
        header = session.chain[0] if session.chain else ""
        mathlib = bool(re.search(r"^import Mathlib", header, re.M))
        return CLOSERS + (MATHLIB_CLOSERS if mathlib else ())

    async def prove(self, session: LeanSession, goal: Goal, budget: Budget) -> StrategyResult:
        del goal
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        seconds = max(1.0, budget.tactic_seconds)
        tried = 0
        broken = self.broken

        def spent() -> float:
            return session.cpu_seconds() - cpu_start

        def result(
            outcome: Outcome, script: Sequence[str] = (), message: str = ""
        ) -> StrategyResult:
            return StrategyResult(
                outcome,
                self._output(script),
                tried,
                spent(),
                time.monotonic() - started,
                message[:1000],
            )

        async def closes(script: Sequence[str], state: ProofState) -> bool:
            nonlocal tried
            tried += 1
            done = await session.run_script(script, state, timeout=seconds)
            return done.status is TacticStatus.COMPLETE

        for script in self._renamed():
            if spent() >= budget.cpu_seconds:
                return result(Outcome.TIMEOUT)
            if await closes(script, session.root):
                return result(Outcome.CANDIDATE, script)
        # replay the old tactics up to where Lean stopped, one by one
        state = session.root
        stop = broken.failing_index
        cause = f"Lean's error: {broken.error}"
        left: tuple[str, ...] = ()
        for index, tactic in enumerate(broken.script[: broken.failing_index]):
            tried += 1
            step = await session.run_tactic(tactic, state, timeout=seconds)
            if step.status is TacticStatus.COMPLETE:
                if index + 1 < len(broken.script):
                    # the old proof closes earlier than it did (the tactics after it are surplus)
                    return result(Outcome.CANDIDATE, broken.script[: index + 1])
                # the old proof itself, which Lean refused as a whole: its last tactic varies
                stop = index
                cause = f"the REPL runs the old proof to its end, Lean refuses it: {broken.error}"
                break
            if not step.ok:
                stop = index
                cause = f"the replay stops at {tactic!r}: {step.message or 'it fails'}"
                break
            state, left = step.state, step.goals
        else:
            if broken.failing_index == len(broken.script) and left:
                goals = "; ".join(" ".join(g.split()) for g in left)
                cause = f"the old proof leaves goals ({goals[:300]}); Lean's error: {broken.error}"
        prefix = broken.script[:stop]
        failing = broken.script[stop] if stop < len(broken.script) else ""
        rest = broken.script[stop + 1 :]
        goal_text = broken.goal_text
        unfold = [n for n in dict.fromkeys(_IDENT.findall(goal_text)) if n in self.definitions]
        tails: list[tuple[str, ...]] = []
        if rest:
            tails.append(rest)
        for variant in variants(failing, unfold) if failing else ():
            if rest:
                tails.append((*variant, *rest))
            tails.append(variant)
        tails += [(closer,) for closer in self._closers(session)]
        for tail in dict.fromkeys(tails):
            if spent() >= budget.cpu_seconds:
                return result(Outcome.TIMEOUT, message=cause)
            if await closes(tail, state):
                return result(Outcome.CANDIDATE, (*prefix, *tail))
        return result(
            Outcome.FAILED,
            message=f"{cause}; no variant of the old proof closes it ({tried} tried)",
        )
