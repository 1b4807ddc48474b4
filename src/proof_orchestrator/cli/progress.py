"""The live terminal views of the long commands: a progress bar with ETA and a table."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from ..goals import Outcome
from ..provers.build import BuildStep
from ..run.live import LiveBoard
from ..run.pipeline import GoalReport
from ..workflows.evaluate import GoalRow
from .common import console


def progress_bar(own_eta: bool = False) -> Progress:
    """The bar of a long command. With ``own_eta`` the ETA is the task's ``eta`` field
    (the run's own estimate, :mod:`proof_orchestrator.run.pace`), else Rich's guess
    from the bar's recent speed."""
    eta = TextColumn("ETA {task.fields[eta]}") if own_eta else TimeRemainingColumn()
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("proved {task.fields[proved]}"),
        TimeElapsedColumn(),
        *([eta] if own_eta else [TextColumn("ETA"), eta]),
    )


def eta_text(seconds: float | None) -> str:
    """``-:--:--`` until there is an estimate, else ``H:MM:SS``."""
    if seconds is None:
        return "-:--:--"
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


@contextlib.contextmanager
def live_view(view: Any) -> Iterator[Live]:
    """Show ``view`` (a Rich renderable) on stderr, refreshed once a second.

    Each render of the table costs milliseconds of the orchestrator's CPU; the
    bar's clock ticks in seconds, so more would only be spent on the terminal.
    """
    with Live(view, console=console, refresh_per_second=1, transient=False) as live:
        yield live
    if not console.is_terminal:
        console.line()  # Rich leaves the last line of a non-terminal render open


class BuildProgress:
    """The build's bar: files compiled of those to compile, the one under way."""

    def __init__(self, progress: Progress | None = None) -> None:
        self.progress = progress or Progress(
            TextColumn("[bold]build"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[file]}"),
            TimeElapsedColumn(),
        )
        self.task: Any = None

    def __rich__(self) -> Any:
        return self.progress.get_renderable() if self.task is not None else Group()

    def step(self, step: BuildStep) -> None:
        if self.task is None:
            self.task = self.progress.add_task("build", total=step.total, file="")
        self.progress.update(
            self.task,
            total=max(step.total, step.index),
            completed=step.index if step.done else step.index - 1,
            file=("" if step.ok else "[red]failed: [/]") + step.path.name,
        )


class Tracker:
    """Live terminal view: a progress bar with ETA and a table of wins per strategy."""

    def __init__(self, description: str) -> None:
        self.progress = progress_bar(own_eta=True)
        self.task = self.progress.add_task(description, total=None, proved=0, eta=eta_text(None))
        #: the running fill's live board, whose ETA the bar shows (the dashboard's too)
        self.board: LiveBoard | None = None
        self.proved = 0
        self.expected = 0
        self.wins: dict[str, int] = {}
        self.cpu: dict[str, float] = {}
        #: the build before the search (shown once it starts)
        self.build = BuildProgress()

    def files(self, files: list[tuple[Path, int]]) -> None:
        """Add a run's holes to the total (bank rounds and executor comparisons run several)."""
        self.expected += sum(n for _, n in files)
        self.progress.update(self.task, total=self.expected)

    def goal(self, report: GoalReport) -> None:
        if report.outcome is Outcome.PROVED:
            self.proved += 1
            self.wins[report.strategy] = self.wins.get(report.strategy, 0) + 1
        if report.strategy:
            self.cpu[report.strategy] = self.cpu.get(report.strategy, 0.0) + report.cpu_seconds
        self.progress.update(self.task, advance=1, proved=self.proved)

    def follow(self, board: LiveBoard) -> None:
        self.board = board

    def __rich__(self) -> Group:
        if self.board is not None:
            self.progress.update(self.task, eta=eta_text(self.board.eta_seconds()))
        table = Table(title="wins by strategy", title_justify="left")
        for column in ("strategy", "proofs", "CPU s"):
            table.add_column(column)
        for name in sorted(self.cpu, key=lambda n: -self.wins.get(n, 0)):
            table.add_row(name, str(self.wins.get(name, 0)), f"{self.cpu[name]:.1f}")
        return Group(self.build, self.progress.get_renderable(), table)

    def live(self) -> contextlib.AbstractContextManager[Live]:
        return live_view(self)


class EvalTracker:
    """Live view of ``orch eval``: goals done with ETA, and the solved count of each arm."""

    def __init__(self) -> None:
        self.progress = progress_bar()
        self.task = self.progress.add_task("eval", total=None, proved=0)
        self.solved: dict[str, int] = {}
        self.arm_cpu: dict[str, float] = {}
        self.unloadable = 0

    def total(self, goals: int, arms: Sequence[str]) -> None:
        self.progress.update(self.task, total=goals)
        self.solved = dict.fromkeys(arms, 0)
        self.arm_cpu = dict.fromkeys(arms, 0.0)

    def goal(self, row: GoalRow) -> None:
        self.unloadable += bool(row.unloadable)
        for arm, result in row.arms.items():
            self.solved[arm] = self.solved.get(arm, 0) + int(result.solved)
            self.arm_cpu[arm] = self.arm_cpu.get(arm, 0.0) + result.cpu_seconds
        self.progress.update(self.task, advance=1, proved=self.solved.get("portfolio", 0))

    def __rich__(self) -> Group:
        table = Table(title="solved per arm", title_justify="left")
        for column in ("arm", "solved", "CPU s"):
            table.add_column(column)
        for arm, count in self.solved.items():
            table.add_row(arm, str(count), f"{self.arm_cpu.get(arm, 0.0):.0f}")
        if self.unloadable:
            table.caption = f"{self.unloadable} goal(s) unloadable, not scored"
        return Group(self.progress.get_renderable(), table)

    def live(self) -> contextlib.AbstractContextManager[Live]:
        return live_view(self)
