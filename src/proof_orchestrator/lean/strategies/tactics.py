"""Quick tactics for Lean goals.

Each candidate is one tactic (combinations use ``<;>`` or ``;``), run from
the root proof state of the hole; the first one after which no goal remains
is the candidate. The list depends on the project: core Lean tactics always,
Mathlib's automation when the file imports Mathlib, Lean Copilot's
``search_proof`` when the project depends on LeanCopilot.

Tactics that *search* (``exact?``, ``apply?``, ``aesop?``, ``search_proof``)
print their answer as ``Try this: ...``. Such a tactic is never stored as a
proof: its suggestion is read from the reply, run from the root on its own,
and becomes the candidate only if it closes the goal by itself. The stored
proof is therefore fast to re-check and does not depend on a search.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from ...goals import Budget, Goal, Outcome
from ...provers.base import TacticStatus
from ...strategies.base import StrategyDefaults, StrategyResult
from ..session import LeanSession

__all__ = [
    "COPILOT_TACTICS",
    "CORE_TACTICS",
    "MATHLIB_TACTICS",
    "PER_VARIABLE_TACTICS",
    "LeanQuickStrategy",
    "forall_names",
    "goal_variables",
    "has_grind",
    "suggestions",
]

CORE_TACTICS: tuple[str, ...] = (
    "rfl",
    "trivial",
    "decide",
    "simp",
    "omega",
    "simp_all",
    "intros; simp_all",
    "constructor <;> simp_all",
    "intros; omega",
    "simp_all <;> omega",
    "exact?",
)
#: ``grind`` arrived in Lean v4.22; offered when the toolchain has it (or is unknown)
GRIND_SINCE = (4, 22)
MATHLIB_TACTICS: tuple[str, ...] = (
    "norm_num",
    "linarith",
    "positivity",
    "ring",
    "nlinarith [sq_nonneg (0 : ℤ)]",
    "aesop",
    "field_simp",
    "norm_num [*] at *",
    "simp; ring",
    "aesop?",
)
COPILOT_TACTICS: tuple[str, ...] = ("search_proof",)
#: tried for each variable ``{v}`` of an inductive type in the goal's context
PER_VARIABLE_TACTICS: tuple[str, ...] = (
    "induction {v} <;> simp_all",
    "cases {v} <;> simp_all",
    "induction {v} <;> simp_all <;> omega",
    "cases {v} <;> simp",
    "induction {v} <;> simp [*]",
)

#: tactics whose useful output is a "Try this:" suggestion
_SEARCHING = ("exact?", "apply?", "aesop?", "search_proof", "hint", "rw?", "simp?")
_INDUCTIVE = re.compile(r"^(?:ℕ|Nat|ℤ|Int|Bool|List\b.*|Option\b.*|Fin\b.*|Array\b.*)$")
_TRY_THIS = re.compile(r"Try th(?:is|ese):\s*(?P<body>.*)", re.S)


def has_grind(toolchain: str) -> bool:
    """Does ``leanprover/lean4:v4.X.Y`` have ``grind``? Unknown toolchains are assumed to."""
    match = re.search(r"v(\d+)\.(\d+)", toolchain)
    if match is None:
        return True
    return (int(match.group(1)), int(match.group(2))) >= GRIND_SINCE


def goal_variables(goal_text: str) -> list[str]:
    """Names in the goal's context whose type is a common inductive type."""
    names: list[str] = []
    for line in goal_text.split("⊢", 1)[0].splitlines():
        if " : " not in line:
            continue
        left, _, kind = line.partition(" : ")
        if _INDUCTIVE.match(kind.strip()):
            names.extend(n for n in left.split() if not n.endswith("✝"))
    return names


_FORALL = re.compile(r"^∀\s*(?P<binders>.*?),", re.S)


def forall_names(goal_text: str) -> list[str]:
    """Names bound by the leading ``∀`` of the goal's conclusion (``∀ (n m : Nat) {x}, ...``)."""
    conclusion = goal_text.split("⊢", 1)[-1].strip()
    match = _FORALL.match(conclusion)
    if match is None:
        return []
    binders = match.group("binders")
    names: list[str] = []
    for group in re.findall(r"[({\[]([^(){}\[\]]*?)\s*:", binders) or [binders.split(":")[0]]:
        names.extend(n for n in group.split() if re.fullmatch(r"[^\W\d][\w']*", n))
    return names


def suggestions(message: str) -> list[str]:
    """The scripts a ``Try this:`` message offers, best first.

    Handles ``Try this: exact foo``, the newer ``Try this:\\n  [apply] exact foo``
    and bullet lists of several suggestions.
    """
    found: list[str] = []
    for match in _TRY_THIS.finditer(message):
        body = match.group("body")
        items = re.split(r"\n\s*(?:•|-)\s+", "\n" + body) if "•" in body else [body]
        for item in items:
            text = re.sub(r"^\s*\[apply\]\s*", "", item.strip("\n"))
            lines = [line.rstrip() for line in text.splitlines() if line.strip()]
            if not lines:
                continue
            indent = min(len(line) - len(line.lstrip()) for line in lines[1:]) if lines[1:] else 0
            script = "\n".join([lines[0].strip(), *(line[indent:] for line in lines[1:])])
            if script and script not in found:
                found.append(script)
    return found


class LeanQuickStrategy(StrategyDefaults):
    """One tactic at a time from the root; a search tactic's suggestion becomes the proof."""

    name = "lean-quick"
    weight = "light"
    language = "lean"
    uses_slot = True
    needs_ledger = False

    def __init__(self, *, max_variables: int = 4) -> None:
        self.max_variables = max_variables

    def tactics(self, session: LeanSession) -> list[str]:
        header = session.chain[0] if session.chain else ""
        tactics = list(CORE_TACTICS)
        if has_grind(session.prover.project.toolchain):
            tactics.append("grind")
        if re.search(r"^import Mathlib", header, re.M):
            tactics += MATHLIB_TACTICS
        if session.prover.project.depends_on("LeanCopilot") or "LeanCopilot" in header:
            tactics += COPILOT_TACTICS
        bound = forall_names(session.goal_text)
        prefix = f"intro {' '.join(bound)}; " if bound else ""
        variables = [*goal_variables(session.goal_text), *bound]
        for variable in variables[: self.max_variables]:
            tactics += [prefix + t.replace("{v}", variable) for t in PER_VARIABLE_TACTICS]
        return list(dict.fromkeys(tactics))

    async def prove(self, session: LeanSession, goal: Goal, budget: Budget) -> StrategyResult:
        del goal
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        tried = 0
        outcome = Outcome.FAILED
        last = ""

        def result(kind: Outcome, script: Sequence[str] = ()) -> StrategyResult:
            return StrategyResult(
                kind,
                tuple(script),
                tried,
                session.cpu_seconds() - cpu_start,
                time.monotonic() - started,
                last[-500:],
            )

        for tactic in self.tactics(session):
            if session.cpu_seconds() - cpu_start >= budget.cpu_seconds:
                return result(Outcome.TIMEOUT)
            tried += 1
            reply = await session.run_tactic(tactic, session.root, timeout=budget.tactic_seconds)
            if reply.status is TacticStatus.TIMEOUT:
                outcome = Outcome.TIMEOUT
                continue
            if not reply.ok:
                last = reply.message
                continue
            searching = tactic.split()[0] in _SEARCHING
            if not searching:
                if reply.status is TacticStatus.COMPLETE:
                    return result(Outcome.CANDIDATE, [tactic])
                continue
            for script in suggestions(reply.message):
                tried += 1
                concrete = await session.run_tactic(
                    script, session.root, timeout=budget.tactic_seconds
                )
                if concrete.status is TacticStatus.COMPLETE:
                    return result(Outcome.CANDIDATE, [script])
        return result(outcome)
