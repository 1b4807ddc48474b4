"""proof_orchestrator: fill the holes of Coq projects with machine-checked proofs.

The public surface is re-exported here; submodules are implementation detail.
"""

from .coq.session import CoqProver, CoqSession, CoqSettings
from .coq.strategies.micro import MicroStrategy
from .coq.verify import CoqVerifier
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
    "CoqProver",
    "CoqSession",
    "CoqSettings",
    "CoqVerifier",
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
    "MicroStrategy",
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
