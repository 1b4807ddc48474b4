"""proof_orchestrator: fill the holes of Coq projects with machine-checked proofs.

The prover-neutral surface is re-exported here: ``fill``, its options and
reports, goals, budgets, the ledger, the strategy seam and the errors. What
belongs to one prover stays in its package (the engine reaches it through the
backend registry): ``proof_orchestrator.coq.prover`` (``CoqProver``,
``CoqSettings``), ``proof_orchestrator.coq.session`` (``CoqSession``),
``proof_orchestrator.coq.verify`` (``CoqVerifier``),
``proof_orchestrator.coq.strategies.micro`` (``MicroStrategy``), and their
Lean counterparts under ``proof_orchestrator.lean``.
"""

from .errors import (
    FileChangedError,
    FileWriteError,
    LedgerError,
    LedgerUnavailable,
    OrchError,
    PathNotFound,
    ProjectError,
    ProverCrashed,
    ProverDesync,
    ProverError,
    ProverHung,
    ProverNotFound,
    ProverReplyTooLarge,
    ProverStartError,
    ScriptRejected,
    SessionClosed,
    SourceSyntaxError,
)
from .goals import DEFAULT_BUDGET, Budget, Goal, HoleKind, Outcome
from .ledger import Ledger
from .provers.base import ProofState, TacticResult, TacticStatus, Verdict, VerificationResult
from .run.pipeline import FileReport, FileStatus, FillOptions, FillReport, GoalReport, fill
from .strategies import Strategy, StrategyResult

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_BUDGET",
    "Budget",
    "FileChangedError",
    "FileReport",
    "FileStatus",
    "FileWriteError",
    "FillOptions",
    "FillReport",
    "Goal",
    "GoalReport",
    "HoleKind",
    "Ledger",
    "LedgerError",
    "LedgerUnavailable",
    "OrchError",
    "Outcome",
    "PathNotFound",
    "ProjectError",
    "ProofState",
    "ProverCrashed",
    "ProverDesync",
    "ProverError",
    "ProverHung",
    "ProverNotFound",
    "ProverReplyTooLarge",
    "ProverStartError",
    "ScriptRejected",
    "SessionClosed",
    "SourceSyntaxError",
    "Strategy",
    "StrategyResult",
    "TacticResult",
    "TacticStatus",
    "Verdict",
    "VerificationResult",
    "fill",
]
