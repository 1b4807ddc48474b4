"""The strategy seam."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..goals import Budget, Goal, Outcome

__all__ = ["Strategy", "StrategyDefaults", "StrategyResult"]


@dataclass(frozen=True, slots=True)
class StrategyResult:
    """What one strategy achieved on one goal.

    ``outcome`` is at best :attr:`Outcome.CANDIDATE`: the session accepted the
    script, but only the whole-file verifier can make it ``PROVED``.
    """

    outcome: Outcome
    sentences: tuple[str, ...] = ()
    tactics_tried: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    message: str = ""
    #: whole helper lemmas the script needs, to insert before the declaration
    helpers: tuple[str, ...] = ()
    #: imports the script needs (allowed ones only, see ``project.patch.ALLOWED_IMPORTS``)
    imports: tuple[str, ...] = ()
    #: model tokens, cost (USD) and waiting time of the attempt (the llm strategies)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    llm_seconds: float = 0.0
    #: what became of the model's replies (the llm strategies; recorded on the attempt)
    llm_checks: Mapping[str, Any] | None = None
    #: what the user could do to let a proof the strategy found through (an import to allow)
    hint: str = ""
    #: False when the strategy never ran (its goal's budget was spent before it started)
    started: bool = True
    #: CPU seconds of a one-time load for the prover process (CoqHammer reading its
    #: ATP library), counted apart from ``cpu_seconds`` and the goal's budget
    load_cpu_seconds: float = 0.0
    #: the strategy saw ``sentences`` close with ``Qed`` in its session already (the
    #: attempt runner's kernel check is then not repeated)
    kernel_checked: bool = False


class Strategy(Protocol):
    """A way of proving goals of one language.

    Its traits are declared data, read by the engine as they are: ``language``
    (the goals it works on), ``weight`` (which slots it uses), ``uses_slot``
    (False: it waits on its own limit, a model's, not on a CPU slot) and
    ``needs_ledger`` (it keeps state in the ledger, so it runs where the ledger
    is, never in a remote executor), ``min_grant_seconds`` (the least CPU an
    expensive strategy is worth starting with). ``prove`` receives a session of
    that language's prover. While ``off_reason()`` returns a reason, the engine
    skips the strategy without opening a session (the llm strategies, once their
    model server stopped answering). :class:`StrategyDefaults` gives the usual
    values of the last two.
    """

    #: a short stable name, used in the ledger and in reports
    name: str
    #: "light" (quick tactics) or "heavy" (search, hammer): which slots it uses
    weight: str
    #: the language of the goals it works on ("coq", "lean")
    language: str
    #: it runs in a CPU slot of the governor (a model call waits on its own limit)
    uses_slot: bool
    #: it needs the ledger (it runs on the driver, never in a remote executor)
    needs_ledger: bool
    #: a heavy strategy's goal budget keeps this much CPU for it while it waits
    min_grant_seconds: float

    def off_reason(self) -> str:
        """Why the strategy is off for the rest of the run ("" while it is on)."""

    def training_cpu_seconds(self) -> float:
        """CPU seconds its model has spent so far mining earlier proofs (replaying them)."""

    async def prove(self, session: Any, goal: Goal, budget: Budget) -> StrategyResult: ...


class StrategyDefaults:
    """The usual values of a :class:`Strategy`'s optional traits, to inherit: no CPU
    floor, never off."""

    #: no floor: the strategy starts with whatever its goal's budget grants
    min_grant_seconds: float = 0.0

    def off_reason(self) -> str:
        return ""

    def training_cpu_seconds(self) -> float:
        return 0.0
