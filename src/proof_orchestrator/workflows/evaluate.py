"""``orch eval``: hide each finished proof and re-prove it, ours against peers, in one run.

The workflow is the language's neutral part; what is a prover's own (which
proofs are the goals, the peers and how they run, the check of a candidate in
the goal's own session, the position-faithful audit) is its backend's
:class:`~proof_orchestrator.provers.abilities.Evaluation`, Coq's in
:mod:`proof_orchestrator.coq.evaluation` (a language without one is refused).

For every finished proof of the given files, in file order, a session is
opened just after the lemma's statement, with only what precedes it in scope
(the file's earlier lemmas with their proofs, and the libraries loaded so far):
position-faithful. Files that a peer's own load already brings in are refused
(their lemmas would be in scope).

Each goal is attempted by each *arm*, in an order shuffled per goal, each with
the same CPU budget:

* ``portfolio``: what ``orch fill`` runs on the goal, the same code
  (:meth:`GoalRun.search <proof_orchestrator.run.worker.GoalRun.search>`): the
  default profile's strategies, ranked by the same bandit (learning as the
  evaluation goes, from an empty ledger), the cheap ones first and the
  expensive ones sharing what is left of the goal's budget. It works in the
  file as ``orch fill`` does. One pass, no revisit; its candidate is checked
  like any arm's (in the goal's own session, then the axiom audit);
* a peer of the backend (``--baseline NAME``: Coq's ``hammer``,
  ``hammer-capped`` and ``tactics``, described in
  :mod:`proof_orchestrator.coq.evaluation`);
* ``solo:NAME`` (``--baseline solo:search``, ...): one strategy of the
  portfolio's lineup alone, through the same code as ``portfolio`` with a
  lineup of one and the whole budget: where a member proves a goal the
  portfolio does not, the result lists it under ``portfolio_lost``.

``portfolio=False`` (``--no-portfolio``) runs the peers only.

A proof counts only after the prover accepts it in the session and the
backend's audit shows no axiom other than those the file declares itself and
its trust base as ``orch fill``'s audit allows it, here position-faithful
(the proofs *before* the goal). The report gives, per arm, the solved count
and rate, CPU seconds and PAR-2 (the mean of the CPU time of solved goals and
twice the budget for the others), and, for the portfolio, which strategy
proved what.

An arm's CPU time is the prover's (its process tree) plus this process's own,
all threads (search, ranking, features, and the premise index, which is built
in a worker thread). For the portfolio it also counts the replays that mine
the file's earlier proofs for the strategies' models (reported as training
time too) and the attempts cancelled when another strategy won. With
``workers > 1`` files are evaluated in separate processes, so each process's
CPU time belongs to one arm at a time. Rows are appended to a journal as they
finish, so a crash loses at most the goal in progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..backends import backend_for
from ..config import Settings
from ..errors import OrchError, PrefixError, ProverError
from ..goals import Budget, Outcome
from ..ledger import Ledger
from ..provers.abilities import Evaluation
from ..provers.backend import Hole
from ..run.attempts import FileState, GoalItem
from ..run.lineup import build_lineup
from ..run.reports import FileReport, FileStatus, FillOptions, FillReport, GoalReport
from ..run.toolbox import Toolbox
from ..run.worker import GoalRun
from ..scheduler.governor import CpuGovernor
from ..strategies.base import StrategyResult
from .eval_rows import ArmResult, GoalRow, read_journal, row_json

__all__ = [
    "EvalError",
    "GoalRow",
    "evaluate",
    "par2",
    "write_result",
]

#: the prefix of the arms that run one strategy of the portfolio's lineup alone
SOLO = "solo:"


class EvalError(OrchError):
    """The files cannot be evaluated as asked."""


def _evaluation(path: Path) -> Evaluation:
    """The evaluation side of ``path``'s backend; :class:`EvalError` for a language that
    has none (Lean: its peers are not run here)."""
    try:
        backend = backend_for(path)
    except ValueError as exc:
        raise EvalError(f"{path}: not a prover's file ({exc})") from exc
    evaluation = backend.evaluation()
    if evaluation is None:
        raise EvalError(f"{path}: orch eval has no peers to run for {backend.language} files")
    return evaluation


def par2(rows: Sequence[GoalRow], arm: str, budget: float) -> float:
    """Mean of the CPU time of solved goals and twice the budget for the others."""
    if not rows:
        return 0.0
    total = sum(
        r.arms[arm].cpu_seconds if r.arms[arm].solved else 2 * budget for r in rows if arm in r.arms
    )
    return total / len(rows)


class FillPortfolio:
    """The portfolio arm: ``orch fill``'s pass over a goal, run on the evaluation's goals.

    One :class:`~proof_orchestrator.run.worker.GoalRun` per process, with the
    default profile's strategies and a ledger of its own (a scratch SQLite
    file, empty at the start, as for a project ``orch fill`` has not seen).
    The CPU governor is not sampled: ``portfolio`` strategies run at once, as
    many as ``orch fill`` races on one goal, and nothing is throttled.
    """

    def __init__(self, budget: Budget, workdir: Path, only: str | None = None) -> None:
        name = f"eval-ledger-{only}.sqlite" if only else "eval-ledger.sqlite"
        self.ledger = Ledger(f"sqlite:///{workdir / name}")
        settings = Settings(
            cpu_target=1.0,
            budget=budget.cpu_seconds,
            budget_cap=budget.cpu_seconds,
            tactic_timeout=budget.tactic_seconds,
        )
        self.options = FillOptions(reuse=False, orch=settings, command="eval")
        governor = CpuGovernor.for_settings(settings)
        governor.limit = settings.portfolio
        report = FillReport()
        report.run_id = self.ledger.start_run(
            "eval", {"budget_cpu_seconds": budget.cpu_seconds}, ""
        )
        strategies = build_lineup(settings, self.ledger)
        if only is not None:
            names = [s.name for s in strategies]
            strategies = [s for s in strategies if s.name == only]
            if not strategies:
                self.ledger.close()
                raise EvalError(
                    f"no strategy {only!r} in the lineup ({', '.join(dict.fromkeys(names))})"
                )
        self.run = GoalRun(self.ledger, self.options, strategies, report, governor, None)
        self.governor = governor
        self._tools = Toolbox(self.options, governor.gate)

    def tools(self, path: Path) -> Any:
        return self._tools.for_path(path)

    def mined_cpu_seconds(self) -> float:
        """CPU seconds the strategies' models have spent replaying earlier proofs so far."""
        return sum(s.training_cpu_seconds() for s in self.run.strategies.values())

    async def prove(
        self, path: Path, text: str, hole: Hole
    ) -> tuple[StrategyResult | None, str, float, str]:
        """(the candidate or None, its strategy, the CPU seconds the pass used, an error).

        The error is set when every attempt, retried once, ended in a prover error.
        """
        tools = self.tools(path)
        own = time.process_time()
        state = FileState(path, text, tools, FileReport(path, FileStatus.PENDING), 1)
        report = GoalReport(hole.goal, Outcome.FAILED, hole=hole)
        goal_id = self.ledger.upsert_goal(hole.goal)
        item = GoalItem(hole, state, goal_id, report, self.options.budget.cpu_seconds)
        outcome = await self.run.search(item)
        # the mining replays are charged by the caller (they are the training time too)
        cpu = report.cpu_seconds + time.process_time() - own
        if outcome.winner is not None:
            return outcome.results[outcome.winner], outcome.winner, cpu, ""
        ran = [r for r in outcome.results.values() if r.started]
        if ran and all(r.outcome is Outcome.ERROR for r in ran):
            # each distinct message once (a prefix that fails, fails every strategy alike)
            return None, "", cpu, "; ".join(dict.fromkeys(r.message for r in ran))[:1000]
        return None, "", cpu, ""

    async def aclose(self) -> None:
        await self._tools.aclose()
        self.ledger.close()


class Portfolios:
    """The ``portfolio`` arm and the ``solo:NAME`` arms of one process, made when first used."""

    def __init__(self, budget: Budget, workdir: Path) -> None:
        self.budget = budget
        self.workdir = workdir
        self._arms: dict[str, FillPortfolio] = {}

    def arm(self, arm: str) -> FillPortfolio:
        if arm not in self._arms:
            only = arm[len(SOLO) :] if arm.startswith(SOLO) else None
            self._arms[arm] = FillPortfolio(self.budget, self.workdir, only)
        return self._arms[arm]

    async def aclose(self) -> None:
        for portfolio in self._arms.values():
            await portfolio.aclose()


def _is_portfolio(arm: str) -> bool:
    return arm == "portfolio" or arm.startswith(SOLO)


#: (file, [(index of the Qed proof in the file, arm order)])
_FileJobs = tuple[Path, list[tuple[int, list[str]]]]


async def evaluate(
    paths: Sequence[Path],
    *,
    budget: float = 10.0,
    baselines: Sequence[str] = (),
    seed: int = 0,
    limit: int | None = None,
    sample: int | None = None,
    only: Sequence[str] = (),
    tactic_seconds: float = 1.0,
    on_goal: Callable[[GoalRow], None] | None = None,
    workers: int = 1,
    journal: Path | None = None,
    on_total: Callable[[int, Sequence[str]], None] | None = None,
    portfolio: bool = True,
    strict_axioms: bool = False,
    resume: Path | None = None,
) -> dict[str, Any]:
    """Run the evaluation; returns the result (also meant to be written as JSON).

    ``sample`` picks that many goals at random (seeded by ``seed``) among all the
    files' goals; ``limit`` then keeps the first ones. ``only``, when given,
    keeps the goals of those lemma names (before ``sample`` and ``limit``).

    ``journal``, when given, gets one JSON line per finished goal; ``on_total``
    is told the number of goals and the arms once the files are read.
    ``strict_axioms`` audits every arm's proofs as ``orch fill --strict-axioms``
    does: an axiom of a loaded library is trusted only when the file's own
    proofs (the earlier ones, or the goal's original) rest on it.

    ``resume``: the journal of an earlier run of the same files and options that
    stopped; the goals it holds rows for (with the same arms) are not run again,
    their rows are counted as they are.
    """
    files = [p.resolve() for p in paths]
    # one evaluation side per language of the files
    kits = list({type(kit): kit for kit in map(_evaluation, files)}.values())
    known = list(dict.fromkeys(b for kit in kits for b in kit.baselines))
    unknown = {b for b in baselines if b not in known and not b.startswith(SOLO)}
    if unknown:
        raise EvalError(
            f"unknown baseline(s): {', '.join(sorted(unknown))} "
            f"({', '.join(known)}, or {SOLO}NAME for a strategy of the lineup)"
        )
    if not portfolio and not baselines:
        raise EvalError("nothing to run: no portfolio and no baseline")
    for solo in {b for b in baselines if b.startswith(SOLO)}:
        # an unknown strategy name fails here, before any goal is tried
        with tempfile.TemporaryDirectory(prefix="orch-eval-") as scratch:
            FillPortfolio(Budget(budget), Path(scratch), solo[len(SOLO) :]).ledger.close()
    for kit in kits:
        kit.prepare()
    arms = ["portfolio"] * portfolio + list(dict.fromkeys(baselines))
    rng = random.Random(seed)
    started = time.monotonic()
    clashes = [c for kit in kits for c in await kit.clashes(files)]
    if clashes:
        raise EvalError(
            "not position-faithful: a peer's own load already brings in "
            + ", ".join(clashes)
            + ". Evaluate files that it does not load."
        )
    names = {p: _evaluation(p).goal_names(p, p.read_text(encoding="utf-8")) for p in files}
    goals = [
        (path, index)
        for path in files
        for index, name in enumerate(names[path])
        if not only or name in only
    ]
    if sample is not None and sample < len(goals):
        # a seeded random subset, kept in file order (earlier proofs stay earlier)
        chosen = set(random.Random(f"sample:{seed}").sample(range(len(goals)), sample))
        goals = [g for i, g in enumerate(goals) if i in chosen]
    if limit is not None:
        goals = goals[:limit]
    earlier = read_journal(resume) if resume is not None else {}
    resumed: dict[Path, list[GoalRow]] = {}
    jobs: list[_FileJobs] = []
    for path in files:
        picks = []
        occurrences: Counter[str] = Counter()  # a name can come twice (two modules)
        for goal_path, index in goals:
            if goal_path != path:
                continue
            order = list(arms)
            rng.shuffle(order)
            name = names[path][index]
            occurrences[name] += 1
            done = earlier.get((str(path), name, occurrences[name]))
            if done is not None and set(done.arms) == set(arms):
                resumed.setdefault(path, []).append(done)
                continue
            picks.append((index, order))
        if picks:
            jobs.append((path, picks))
    if on_total is not None:
        on_total(sum(len(picks) for _, picks in jobs), arms)

    def finished(row: GoalRow) -> None:
        if journal is not None:
            with journal.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row_json(row)) + "\n")
        if on_goal is not None:
            on_goal(row)

    if workers <= 1:
        # one portfolio for every file: its bandit learns across them, as in one fill run
        with tempfile.TemporaryDirectory(prefix="orch-eval-") as workdir:
            shared = Portfolios(Budget(budget, tactic_seconds, 5.0), Path(workdir))
            try:
                per_file = [
                    await _evaluate_file(
                        path, picks, budget, tactic_seconds, finished, shared, strict_axioms
                    )
                    for path, picks in jobs
                ]
            finally:
                await shared.aclose()
    else:
        per_file = await _in_processes(
            jobs, budget, tactic_seconds, finished, workers, strict_axioms
        )
    new_rows = {path: file_rows for (path, _), file_rows in zip(jobs, per_file, strict=True)}
    # a file's resumed rows are the first of its goals (each file runs in order)
    rows = [r for path in files for r in (*resumed.get(path, ()), *new_rows.get(path, ()))]
    wall = time.monotonic() - started
    return _summary(rows, arms, budget, wall, files, seed, workers, strict_axioms)


async def _in_processes(
    jobs: list[_FileJobs],
    budget: float,
    tactic_seconds: float,
    finished: Callable[[GoalRow], None],
    workers: int,
    strict_axioms: bool = False,
) -> list[list[GoalRow]]:
    """Each file in a process of its own, ``workers`` at a time, largest files first."""
    context = multiprocessing.get_context("spawn")
    loop = asyncio.get_running_loop()
    with context.Manager() as manager, ProcessPoolExecutor(workers, mp_context=context) as pool:
        queue = manager.Queue()
        order = sorted(range(len(jobs)), key=lambda i: -len(jobs[i][1]))
        futures = {
            i: loop.run_in_executor(
                pool,
                _file_in_process,
                jobs[i][0],
                jobs[i][1],
                budget,
                tactic_seconds,
                queue,
                strict_axioms,
            )
            for i in order
        }
        waiting = asyncio.ensure_future(asyncio.gather(*futures.values()))
        while True:
            while not queue.empty():
                finished(queue.get())
            if waiting.done():
                break
            await asyncio.sleep(0.5)
        await waiting
        while not queue.empty():
            finished(queue.get())
        return [futures[i].result() for i in range(len(jobs))]


def _file_in_process(
    path: Path,
    picks: list[tuple[int, list[str]]],
    budget: float,
    tactic_seconds: float,
    queue: Any,
    strict_axioms: bool = False,
) -> list[GoalRow]:
    evaluation = _evaluate_file(
        path, picks, budget, tactic_seconds, queue.put, strict_axioms=strict_axioms
    )
    return asyncio.run(evaluation)


async def _evaluate_file(
    path: Path,
    picks: list[tuple[int, list[str]]],
    budget: float,
    tactic_seconds: float,
    finished: Callable[[GoalRow], None],
    portfolios: Portfolios | None = None,
    strict_axioms: bool = False,
) -> list[GoalRow]:
    """The rows of one file's picked goals; ``portfolios`` is shared by the files of a process."""
    text = path.read_text(encoding="utf-8")
    file = _evaluation(path).open_file(path, text, strict_axioms=strict_axioms)
    per_goal = Budget(budget, tactic_seconds, 5.0)
    rows: list[GoalRow] = []
    with contextlib.ExitStack() as stack:
        own = portfolios is None
        if portfolios is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="orch-eval-")))
            portfolios = Portfolios(per_goal, workdir)
        try:
            for index, order in picks:
                row = await _goal(file, portfolios, path, text, index, order, per_goal)
                rows.append(row)
                finished(row)
        finally:
            await file.aclose()
            if own:
                await portfolios.aclose()
    return rows


async def _goal(
    file: Any,
    portfolios: Portfolios,
    path: Path,
    text: str,
    index: int,
    order: list[str],
    budget: Budget,
) -> GoalRow:
    hole = file.proofs[index][0]
    row = GoalRow(str(path), hole.goal.name, order)
    for arm in order:
        began = time.monotonic()
        try:
            if _is_portfolio(arm):
                portfolio = portfolios.arm(arm)
                mined = portfolio.mined_cpu_seconds()
                found, strategy, cpu, error = await portfolio.prove(path, text, hole)
                if arm == "portfolio":
                    row.training_cpu_seconds += portfolio.mined_cpu_seconds() - mined
                else:
                    cpu += portfolio.mined_cpu_seconds() - mined
                if error:
                    # a prefix that does not load is the file's, not the portfolio's:
                    # opening the goal's session raises PrefixError then (caught below)
                    async with portfolio.tools(path).open_session(hole, text):
                        pass
                    row.arms[arm] = ArmResult(
                        False, cpu, time.monotonic() - began, note=f"error: {error}"
                    )
                    continue
                async with portfolio.tools(path).open_session(hole, text) as session:
                    solved, note, script = await file.check(session, found, index, budget)
            else:
                strategy, cpu, solved, note, script = await file.baseline(arm, index, budget)
        except PrefixError as exc:
            # the file's own prefix fails (the hammer arms have already tried
            # CoqHammer just before the statement when it broke the file in front:
            # its libraries' hints can change what an earlier tactic does); no arm
            # can be scored here
            row.arms.clear()
            row.unloadable = str(exc)
            return row
        except ProverError as exc:
            row.arms[arm] = ArmResult(False, 0.0, time.monotonic() - began, note=f"error: {exc}")
            continue
        row.arms[arm] = ArmResult(
            solved, cpu, time.monotonic() - began, strategy if solved else "", script, note
        )
    return row


def _summary(
    rows: list[GoalRow],
    arms: list[str],
    budget: float,
    wall: float,
    files: Sequence[Path],
    seed: int,
    workers: int,
    strict_axioms: bool = False,
) -> dict[str, Any]:
    per_arm: dict[str, dict[str, Any]] = {}
    unloadable = [r for r in rows if r.unloadable]
    rows = [r for r in rows if not r.unloadable]
    training = sum(r.training_cpu_seconds for r in rows)
    for arm in arms:
        solved = [r for r in rows if r.arms.get(arm) and r.arms[arm].solved]
        wins: dict[str, int] = {}
        for r in solved:
            wins[r.arms[arm].strategy] = wins.get(r.arms[arm].strategy, 0) + 1
        cpu = sum(r.arms[arm].cpu_seconds for r in rows if arm in r.arms)
        if arm == "portfolio":
            cpu += training
        per_arm[arm] = {
            "solved": len(solved),
            "rate": round(len(solved) / len(rows), 4) if rows else 0.0,
            "cpu_seconds": round(cpu, 2),
            "par2": round(par2(rows, arm, budget), 3),
            "per_strategy": wins,
        }
    result: dict[str, Any] = {
        "kind": "orch-eval",
        "timestamp": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "files": [str(p) for p in files],
        "goals": len(rows),
        "budget_cpu_seconds": budget,
        "seed": seed,
        "workers": workers,
        "strict_axioms": strict_axioms,
        "wall_seconds": round(wall, 1),
        # mining each goal's proof after its arms (included in the portfolio's cpu_seconds)
        "training_cpu_seconds": round(training, 2),
        "arms": per_arm,
        # goals the file does not load up to once a peer is loaded in front of it
        "unloadable": [
            {"file": r.file, "name": r.name, "reason": r.unloadable[:400]} for r in unloadable
        ],
    }
    baselines = [a for a in arms if a != "portfolio" and not a.startswith(SOLO)]
    if baselines:
        union = sum(1 for r in rows if any(r.arms[a].solved for a in baselines if a in r.arms))
        result["baselines_union"] = union
        if "portfolio" in per_arm and "hammer" in per_arm and per_arm["hammer"]["solved"]:
            result["portfolio_over_hammer"] = round(
                per_arm["portfolio"]["solved"] / per_arm["hammer"]["solved"], 3
            )
    if "portfolio" in per_arm:
        # goals a peer or a lone member proves and the portfolio does not
        result["portfolio_lost"] = [
            {"file": r.file, "name": r.name, "by": sorted(a for a, v in r.arms.items() if v.solved)}
            for r in rows
            if not r.arms["portfolio"].solved and any(v.solved for v in r.arms.values())
        ]
    result["rows"] = [row_json(r) for r in rows]
    return result


def write_result(result: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{result['timestamp']}-eval.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return path
