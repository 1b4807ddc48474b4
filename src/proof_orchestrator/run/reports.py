"""What a fill run reports: per goal, per file, per run; and the options it takes."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Settings
from ..goals import Budget, Goal, HoleUse, Outcome
from ..project.patch import Patch
from ..provers.backend import Hole
from ..provers.settings import CoqSettings, LeanSettings

__all__ = [
    "CANDIDATE_REPLAY",
    "LEDGER_REPLAY",
    "UNCHECKED",
    "Candidate",
    "FileReport",
    "FileStatus",
    "FillOptions",
    "FillReport",
    "GoalCallback",
    "GoalReport",
    "summarize",
]

#: the strategy name under which verified proofs replayed from the ledger are recorded
LEDGER_REPLAY = "ledger-replay"
#: ... and candidates found by an earlier, interrupted run
CANDIDATE_REPLAY = "candidate-replay"


class FileStatus(enum.StrEnum):
    #: processed (whether or not anything was proved)
    DONE = "done"
    #: the file did not compile before any change; skipped
    DOES_NOT_COMPILE = "does_not_compile"
    #: the file changed on disk during the run; nothing written
    CHANGED = "changed"
    #: the file could not be read or split into sentences
    UNREADABLE = "unreadable"
    #: queued: its goals are being searched, its candidates not written yet
    PENDING = "pending"
    #: the run was interrupted while this file was in progress
    INTERRUPTED = "interrupted"
    #: the prover this file needs (Coq or Lean) is not installed; skipped
    NO_PROVER = "no_prover"
    #: writing the proofs failed (disk full, I/O error); the file is unchanged
    WRITE_FAILED = "write_failed"
    #: a file it imports could not be built; not checked
    NOT_BUILT = "not_built"
    #: the whole-file check of its candidates could not run (the prover failed on
    #: it); nothing written, the proofs stay candidates in the ledger
    CHECK_FAILED = "check_failed"


#: a file with holes in one of these was not checked (``orch fill`` exits 3)
UNCHECKED = frozenset(
    {
        FileStatus.DOES_NOT_COMPILE,
        FileStatus.NOT_BUILT,
        FileStatus.NO_PROVER,
        FileStatus.CHECK_FAILED,
    }
)


@dataclass(slots=True)
class GoalReport:
    goal: Goal
    outcome: Outcome
    strategy: str = ""
    sentences: tuple[str, ...] = ()
    tactics_tried: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    message: str = ""
    #: where the goal is in its file (for patching it elsewhere, e.g. in a git worktree)
    hole: Hole | None = None
    #: helper lemmas the proof needs, inserted before the declaration (the market)
    helpers: tuple[str, ...] = ()
    #: imports the proof needs, added after the file's ``Require``s (``--allow-import``)
    imports: tuple[str, ...] = ()
    #: the holes a verified proof still rests on (empty: closed; else closed modulo them)
    uses_holes: tuple[HoleUse, ...] = ()


@dataclass(slots=True)
class FileReport:
    path: Path
    status: FileStatus
    goals: list[GoalReport] = field(default_factory=list)
    message: str = ""
    written: bool = False
    verify_cpu_seconds: float = 0.0
    #: compiler runs those seconds paid for (one for the batch, more when a check failed
    #: or its audit could not decide in one run)
    verify_compiles: int = 0
    #: the file's text when it was read (the proofs were found for this text)
    original_text: str = ""


@dataclass(slots=True)
class FillReport:
    files: list[FileReport] = field(default_factory=list)
    run_id: int | None = None
    wall_seconds: float = 0.0
    interrupted: bool = False
    prover_version: str = ""
    #: per remote worker (Ray executor): pid, attempts served, CPU of its process tree
    worker_stats: list[dict[str, Any]] = field(default_factory=list)
    #: what publishing the live state cost: publishes, failures, CPU seconds, interval
    live_publisher: dict[str, float] = field(default_factory=dict)
    #: per Ray node: attempts, warm share, prover CPU, lost (the Ray executor only)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    #: per strategy: the goal passes it was planned in, explored in, rested from (scheduler.shares)
    strategy_plan: dict[str, dict[str, int]] = field(default_factory=dict)
    #: the build before the search: files built, reused, failed; its CPU and wall seconds
    build: dict[str, float] = field(default_factory=dict)
    #: one line per file that could not be built: ``theories/x.v:12: error: ...``
    build_failures: list[str] = field(default_factory=list)
    #: what the user should run or fix, one sentence per project that needs it
    next_steps: list[str] = field(default_factory=list)

    @property
    def unchecked(self) -> list[FileReport]:
        """Files with holes that could not be checked (not built, not compiling, no prover)."""
        return [f for f in self.files if f.status in UNCHECKED]

    @property
    def goals(self) -> list[GoalReport]:
        return [g for f in self.files for g in f.goals]

    @property
    def proved(self) -> int:
        return sum(1 for g in self.goals if g.outcome is Outcome.PROVED)

    @property
    def errors(self) -> int:
        """Goals whose every attempt (retried once) ended in a prover error."""
        return sum(1 for g in self.goals if g.outcome is Outcome.ERROR)

    @property
    def cpu_seconds(self) -> float:
        return sum(g.cpu_seconds for g in self.goals) + sum(
            f.verify_cpu_seconds for f in self.files
        )


@dataclass(frozen=True, slots=True)
class FillOptions:
    dry_run: bool = False
    #: reuse proofs from the ledger instead of searching again
    reuse: bool = True
    coq: CoqSettings = field(default_factory=CoqSettings)
    lean: LeanSettings = field(default_factory=LeanSettings)
    orch: Settings = field(default_factory=Settings)
    command: str = "fill"
    #: lemma names (short or qualified) the user wants first: +10 priority each
    prioritize: frozenset[str] = frozenset()
    #: extra priority per declaration name (the blueprint's critical path)
    weights: dict[str, float] = field(default_factory=dict)

    @property
    def budget(self) -> Budget:
        """The first budget of every strategy on every goal: the settings' ``budget`` and
        ``tactic_timeout`` (held there only, so they cannot disagree)."""
        return Budget(cpu_seconds=self.orch.budget, tactic_seconds=self.orch.tactic_timeout)


GoalCallback = Callable[[GoalReport], None]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A proof found for a hole, before the whole-file check: what a file's writer writes.

    ``patch`` is built once, from the report, when the candidate is made
    (:meth:`of`); the check and the writer splice that same patch.
    """

    #: the hole (of any backend), in the text the proof was found for
    hole: Any
    #: the goal's report: its script, helpers and imports, and the check's verdict
    report: GoalReport
    #: the goal's id in the ledger
    goal_id: int
    patch: Patch

    @classmethod
    def of(cls, hole: Any, report: GoalReport, goal_id: int) -> Candidate:
        return cls(
            hole, report, goal_id, Patch(hole, report.sentences, report.helpers, report.imports)
        )

    @property
    def span(self) -> tuple[int, int]:
        """Where the hole's proof is in its text: the candidate's key within a file
        (two candidates of one file never share it, their patches would overlap)."""
        return (self.hole.proof_start, self.hole.proof_end)


def summarize(report: FillReport) -> dict[str, object]:
    per_strategy: dict[str, dict[str, float]] = {}
    for g in report.goals:
        if not g.strategy:
            continue
        entry = per_strategy.setdefault(
            g.strategy, {"proved": 0, "attempted": 0, "cpu_seconds": 0.0}
        )
        entry["attempted"] += 1
        entry["cpu_seconds"] += g.cpu_seconds
        if g.outcome is Outcome.PROVED:
            entry["proved"] += 1
    return {
        "files": len(report.files),
        "goals": len(report.goals),
        "proved": report.proved,
        # proved, but resting on other holes still open (closed once they are proved)
        "proved_modulo_holes": sum(
            1 for g in report.goals if g.outcome is Outcome.PROVED and g.uses_holes
        ),
        "errors": report.errors,
        "cpu_seconds": round(report.cpu_seconds, 3),
        "wall_seconds": round(report.wall_seconds, 3),
        "interrupted": report.interrupted,
        "per_strategy": per_strategy,
        "strategy_plan": report.strategy_plan,
        "build": report.build,
        "unchecked_files": len(report.unchecked),
        # verified proofs that stay in the ledger, not written (a later run writes them)
        "not_written": [
            {"path": str(f.path), "status": f.status.value, "message": f.message}
            for f in report.files
            if f.status in (FileStatus.CHANGED, FileStatus.WRITE_FAILED)
        ],
    }
