"""What the agent service's tools return: plain records, serialised by the MCP server."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BrokenInfo",
    "EarlierError",
    "GoalInfo",
    "HoleInfo",
    "Premise",
    "ProvedNeighbour",
    "RunResult",
    "SubmitResult",
    "SubmitStatus",
    "TicketInfo",
    "TryResult",
    "TryStatus",
    "ticket_info",
]


@dataclass
class BrokenInfo:
    """A proof that no longer checks (``broken_proofs``): its id is a hole id for
    ``submit_proof``."""

    id: int
    file: str
    line: int
    name: str
    statement: str
    #: unknown_reference, type_mismatch, remaining_goals, tactic_failure or timeout
    kind: str
    #: the sentence where the prover stopped, and its error
    failing: str
    error: str
    #: the old proof, as it is in the file
    old_script: str


@dataclass
class HoleInfo:
    id: int
    file: str
    line: int
    name: str
    statement: str
    #: open / proved / failed (the ledger's status of the goal)
    status: str
    attempts: int


@dataclass
class Premise:
    name: str
    statement: str


@dataclass
class ProvedNeighbour:
    statement: str
    proof: str


@dataclass
class EarlierError:
    strategy: str
    script: str
    message: str


@dataclass
class GoalInfo:
    hole_id: int
    name: str
    statement: str
    #: the goal as the prover prints it: hypotheses, the bar, the conclusion
    goal: str
    premises: list[Premise] = field(default_factory=list)
    nearest_proofs: list[ProvedNeighbour] = field(default_factory=list)
    earlier_errors: list[EarlierError] = field(default_factory=list)


class TryStatus(enum.StrEnum):
    """How ``try_tactics`` ended (the words an agent reads)."""

    #: no goal is left
    COMPLETE = "complete"
    #: goals remain
    GOALS = "goals"
    #: the prover refused a sentence
    ERROR = "error"
    #: a sentence or the CPU budget ran out of time
    TIMEOUT = "timeout"
    #: the script gate refused the script before the prover saw it
    REJECTED = "rejected"


class SubmitStatus(enum.StrEnum):
    """How ``submit_proof``, ``run_strategies`` and the helper and repair tools ended."""

    #: the whole file checked with the proof and its audit passed
    VERIFIED = "verified"
    #: the gate, the whole-file check or the audit refused it
    REJECTED = "rejected"
    #: ``run_strategies`` only: no strategy found a proof
    FAILED = "failed"


@dataclass
class TryResult:
    status: TryStatus
    goals: list[str] = field(default_factory=list)
    error: str = ""
    #: the sentence the prover refused (empty unless status is error or timeout)
    failing_sentence: str = ""
    cpu_seconds: float = 0.0


@dataclass
class SubmitResult:
    #: verified or rejected
    status: SubmitStatus
    reason: str = ""
    #: the file written (empty when rejected, or with --git)
    written: str = ""
    #: the branch made (with --git)
    branch: str = ""
    script: list[str] = field(default_factory=list)


@dataclass
class RunResult:
    #: verified / rejected / failed (no strategy found a proof)
    status: SubmitStatus
    strategy: str = ""
    script: list[str] = field(default_factory=list)
    reason: str = ""
    #: outcome of each strategy that ran
    outcomes: dict[str, str] = field(default_factory=dict)
    cpu_seconds: float = 0.0


@dataclass
class TicketInfo:
    id: int
    name: str
    statement: str
    state: str
    priority: float
    claimed_by: str
    parent_hole_id: int | None


def ticket_info(ticket: Any) -> TicketInfo:
    return TicketInfo(
        ticket.id,
        ticket.name,
        ticket.statement,
        ticket.state,
        float(ticket.priority),
        ticket.claimed_by or "",
        ticket.parent_goal_id,
    )
