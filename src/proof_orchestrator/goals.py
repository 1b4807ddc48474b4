"""Plain data shared by every room: goals, outcomes, budgets and bandit arms."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DEFAULT_BUDGET",
    "ArmStats",
    "BreakKind",
    "Budget",
    "Goal",
    "GoalStatus",
    "HoleKind",
    "HoleUse",
    "Outcome",
    "RunStatus",
    "fingerprint_of",
]


class Outcome(enum.StrEnum):
    """How one attempt (one strategy on one goal) ended."""

    #: the prover accepted the script in the session and the whole-file check passed
    PROVED = "proved"
    #: the prover accepted the script in the session; whole-file check not run yet
    CANDIDATE = "candidate"
    #: the whole-file recompilation or the axiom audit rejected the candidate
    REJECTED = "rejected"
    #: every tactic tried failed within the budget
    FAILED = "failed"
    #: the budget ran out before the strategy finished
    TIMEOUT = "timeout"
    #: the prover broke (crash, hang, desync) during the attempt
    ERROR = "error"
    #: the attempt was cancelled (Ctrl-C or another strategy won)
    CANCELLED = "cancelled"
    #: an agent read the goal (``orch mcp``'s ``goal``); no proof was tried
    INSPECTED = "inspected"
    #: the strategy cannot run on this goal (its reason in the message); not an attempt
    SKIPPED = "skipped"


class GoalStatus(enum.StrEnum):
    """Where a goal of the ledger stands."""

    #: a hole that no written proof fills yet
    OPEN = "open"
    #: a verified proof fills it
    PROVED = "proved"
    #: the last pass over it found no proof
    FAILED = "failed"
    #: its candidates failed the whole-file check or the axiom audit
    REJECTED = "rejected"
    #: the prover broke on it, its retry too
    ERROR = "error"
    #: a finished proof that no longer checks (``orch repair``, the MCP ``broken`` tools)
    BROKEN = "broken"
    #: a broken proof whose verified repair was written
    REPAIRED = "repaired"


class RunStatus(enum.StrEnum):
    """How a run of the ledger ended."""

    #: still going (or its process died without saying)
    RUNNING = "running"
    #: it went through its work
    FINISHED = "finished"
    #: Ctrl-C, SIGTERM or a cancellation stopped it
    INTERRUPTED = "interrupted"
    #: a broken part (ledger unreachable, disk full) stopped it
    FAILED = "failed"


class HoleKind(enum.StrEnum):
    """What marks a declaration as unproved."""

    #: the proof ends with ``Admitted.``
    ADMITTED = "admitted"
    #: the proof contains ``admit`` (and therefore also ends with ``Admitted.``)
    ADMIT = "admit"
    #: a Lean ``sorry``
    SORRY = "sorry"
    #: not a hole: a finished ``Qed`` proof, opened to be shortened (``orch golf``)
    PROVED = "proved"
    #: a ``Qed`` proof that no longer checks (an edit or an upgrade broke it): ``orch repair``
    BROKEN = "broken"


class BreakKind(enum.StrEnum):
    """Why a proof that used to check no longer does (the prover's error, classified)."""

    #: a name the proof uses no longer exists (renamed, removed)
    UNKNOWN_REFERENCE = "unknown_reference"
    #: a term no longer has the type the proof gives it (hypotheses reordered or added)
    TYPE_MISMATCH = "type_mismatch"
    #: the proof's tactics run out before the goals do (a hint or an unfolding lost)
    REMAINING_GOALS = "remaining_goals"
    #: a tactic fails
    TACTIC_FAILURE = "tactic_failure"
    #: a tactic no longer ends in time
    TIMEOUT = "timeout"


@dataclass(frozen=True, slots=True)
class Budget:
    """CPU-second limits for one attempt.

    ``cpu_seconds`` bounds the CPU spent by the prover process tree on one goal
    by one strategy; ``tactic_seconds`` is the per-tactic timeout handed to the
    prover (Coq ``Timeout``); ``grace_seconds`` is added on top of a tactic
    timeout before the session is declared hung and killed.
    """

    cpu_seconds: float = 10.0
    tactic_seconds: float = 2.0
    grace_seconds: float = 5.0

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "tactic_seconds", "grace_seconds"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"Budget.{name} must be positive, got {value!r}")


#: the budget used when nothing else is configured
DEFAULT_BUDGET = Budget()


@dataclass(slots=True)
class ArmStats:
    """What the scheduler's bandit learnt about one strategy on one goal class.

    It lives here, not in ``scheduler.bandit``, because the ledger stores it too.
    """

    pulls: int = 0
    successes: int = 0
    failures: float = 0.0
    cpu_seconds: float = 0.0
    reward: float = 0.0

    @property
    def mean_cpu(self) -> float:
        return self.cpu_seconds / self.pulls if self.pulls else 0.0


def _normalise(text: str) -> str:
    return " ".join(text.split())


def fingerprint_of(statement: str, context: tuple[str, ...] = ()) -> str:
    """A stable identifier of a goal: whitespace-normalised statement + context.

    The declaration's name is not part of ``statement`` here, so renaming a
    lemma keeps its fingerprint; changing an import or an enclosing section
    variable changes it.
    """
    digest = hashlib.sha256()
    digest.update(_normalise(statement).encode())
    for item in context:
        digest.update(b"\x00")
        digest.update(_normalise(item).encode())
    return digest.hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Goal:
    """One hole in one file.

    ``statement`` is the declaration sentence as written (``Lemma foo : ...``);
    ``start``/``end`` are character offsets of the proof that will be replaced
    (from the first proof sentence to the end of ``Admitted.``).
    """

    file: Path
    line: int
    name: str
    statement: str
    kind: HoleKind
    fingerprint: str
    language: str = "coq"
    #: enclosing ``Module``/``Section`` names, outermost first
    scope: tuple[tuple[str, str], ...] = field(default=())
    #: a broken proof's script as it was before it broke (``orch repair``): evidence
    #: for the strategies (the k-NN model learns its steps), never trusted as a proof
    old_script: tuple[str, ...] = field(default=())

    @property
    def qualified_name(self) -> str:
        """The name as seen from outside the file (modules qualify, sections do not)."""
        modules = [name for kind, name in self.scope if kind == "module"]
        return ".".join([*modules, self.name])

    def label(self) -> str:
        return f"{self.file.name}:{self.line} {self.name}"


@dataclass(frozen=True, slots=True)
class HoleUse:
    """A hole of the project that a verified proof rests on.

    Its ``Admitted`` (Coq) or ``sorry`` (Lean) is an assumption of the proof
    until it is proved too: the proof is *closed modulo* that hole.
    """

    #: the file that holds the hole
    file: str
    #: its name in that file (qualified by its modules or namespaces; a Lean declaration)
    name: str
    #: the hole's goal fingerprint
    fingerprint: str
    #: how the prover named it in the audit (``b``, ``Lib.B.b``)
    label: str

    def as_dict(self) -> dict[str, str]:
        return {
            "file": self.file,
            "name": self.name,
            "fingerprint": self.fingerprint,
            "label": self.label,
        }

    @classmethod
    def from_dict(cls, value: dict[str, str]) -> HoleUse:
        return cls(value["file"], value["name"], value.get("fingerprint", ""), value["label"])
