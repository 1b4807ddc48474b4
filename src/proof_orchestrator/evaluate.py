"""``orch eval``: hide each ``Qed`` proof and re-prove it, ours against peers, in one run.

For every ``Qed`` proof of the given files, in file order, a session is opened
just after the lemma's statement, with only what precedes it in scope (the
file's earlier lemmas with their proofs, and the libraries loaded so far):
position-faithful. CoqHammer is loaded in front of every file
(``From Hammer Require Import Hammer``), so that ``hammer`` can run; the files
to evaluate must not be among the ~200 library modules it loads, or their
lemmas would be in scope (``orch eval`` refuses such files).

Each goal is attempted by each *arm*, in an order shuffled per goal, each with
the same CPU budget:

* ``portfolio``: our strategies one after another within the budget, each
  with a cap (:data:`PORTFOLIO`): quick tactics, best-first search (the k-NN
  model mined from the file's earlier proofs, retrieved premises, closing and
  structural steps), induction, then ``hammer`` with what is left;
* ``hammer`` (``--baseline hammer``): CoqHammer as its users run it,
  ``Timeout B hammer.`` with CoqHammer's defaults (``Set Hammer GSMode 2``
  on two cores, as its documentation advises), B the budget. Its CPU time
  is measured like every arm's, its ATPs included; it is not cut at the CPU
  budget (Coq's ``Timeout`` is wall-clock, as for a user);
* ``hammer-capped`` (``--baseline hammer-capped``): ``hammer`` as the
  portfolio runs it, ATP limit half the budget, reconstruction limit a
  quarter, killed when coqtop and its ATPs together reach the budget;
* ``tactics`` (``--baseline tactics``): a fixed list of standard tactics.

A proof counts only after ``Qed`` succeeds in the session and ``Print
Assumptions`` shows no axiom other than those the file declares itself. The
report gives, per arm, the solved count and rate, CPU seconds and PAR-2
(the mean of the CPU time of solved goals and twice the budget for the
others), and, for the portfolio, which strategy proved what.

An arm's CPU time is the prover's (coqtop and the ATPs it ran) plus this
process's own, all threads (search, ranking, features, and the premise index,
which is built in a worker thread). Once every arm is done with a goal,
its hidden proof is mined for the k-NN model (it is an earlier proof for the
goals below); that replay is charged to the portfolio as training time.
With ``workers > 1`` files are evaluated in separate processes, so each
process's CPU time belongs to one arm at a time. Rows are appended to a
journal as they finish, so a crash loses at most the goal in progress.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import random
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .coqscript import check_script
from .errors import OrchError, ProverError, ScriptRejected
from .goals import Budget, Outcome
from .project.coq_holes import CoqHole, declared_axioms, qed_proofs
from .project.coqproject import project_for
from .provers.base import TacticStatus
from .provers.coq import CoqProver, CoqSession, CoqSettings, PrefixError
from .strategies.base import Strategy, StrategyResult
from .strategies.hammer import (
    HAMMER_PREAMBLE,
    HammerStrategy,
    hammer_environment,
    reconstruction,
)
from .strategies.knn import FileModels
from .strategies.micro import InductionStrategy, MicroStrategy, _QuickTactics
from .strategies.search import SearchStrategy

__all__ = [
    "ARMS",
    "BASELINES",
    "TACTICS_BASELINE",
    "EvalError",
    "GoalRow",
    "evaluate",
    "par2",
    "write_result",
]

#: the fixed tactic list of the ``tactics`` baseline
TACTICS_BASELINE = (
    "trivial.",
    "auto.",
    "easy.",
    "intuition.",
    "tauto.",
    "congruence.",
    "firstorder.",
    "eauto.",
    "intros; auto with *.",
    "intros; subst; auto.",
    "intros; simpl; auto.",
    "intros; lia.",
)
ARMS = ("portfolio", "hammer", "hammer-capped", "tactics")
#: the peers ``--baseline`` accepts
BASELINES = ARMS[1:]
#: the portfolio's order, with the share of the budget each may use at most
PORTFOLIO = (
    ("micro", 0.1),
    ("search", 0.3),
    ("induction", 0.1),
    ("hammer", 1.0),
)


class EvalError(OrchError):
    """The files cannot be evaluated as asked."""


class _FixedTactics(_QuickTactics):
    name = "tactics"

    async def scripts(self, session: CoqSession) -> list[str]:
        lia = await session.locate_ltac("Coq.micromega.Lia.lia")
        return [t for t in TACTICS_BASELINE if "lia" not in t or lia is not None]


@dataclass(slots=True)
class ArmResult:
    solved: bool
    cpu_seconds: float
    wall_seconds: float
    strategy: str = ""
    script: tuple[str, ...] = ()
    note: str = ""


@dataclass(slots=True)
class GoalRow:
    file: str
    name: str
    order: list[str]
    arms: dict[str, ArmResult] = field(default_factory=dict)
    #: mining this goal's proof for the k-NN model once the arms are done
    training_cpu_seconds: float = 0.0
    #: why the file does not load up to this goal in the evaluation's session
    #: (such goals are reported apart and count for no arm)
    unloadable: str = ""


def par2(rows: Sequence[GoalRow], arm: str, budget: float) -> float:
    """Mean of the CPU time of solved goals and twice the budget for the others."""
    if not rows:
        return 0.0
    total = sum(
        r.arms[arm].cpu_seconds if r.arms[arm].solved else 2 * budget for r in rows if arm in r.arms
    )
    return total / len(rows)


async def _in_hammer_libraries(prover: CoqProver, files: Sequence[Path]) -> list[str]:
    """Logical names that CoqHammer's load brings in, among the evaluated stdlib files."""
    from .goals import Goal, HoleKind

    probe = Goal(Path("probe.v"), 0, "probe", "Lemma probe : True.", HoleKind.ADMITTED, "probe")
    async with prover.session_at(probe, [*HAMMER_PREAMBLE, "Lemma probe : True."]) as session:
        loaded = set(re.findall(r"\b(Coq(?:\.[\w']+)+)", await session.query("Print Libraries.")))
    clashes = []
    for path in files:
        parts = path.resolve().parts
        if "theories" in parts:
            logical = "Coq." + ".".join(parts[parts.index("theories") + 1 :])[: -len(".v")]
            if logical in loaded:
                clashes.append(f"{path} ({logical})")
    return clashes


def _arm_clock(session: CoqSession) -> Callable[[], float]:
    """CPU seconds spent since now: the prover's and this thread's."""
    prover_start, own_start = session.cpu_seconds(), time.process_time()
    return lambda: session.cpu_seconds() - prover_start + time.process_time() - own_start


async def _run_arm(
    arm: str,
    session: CoqSession,
    hole: CoqHole,
    budget: Budget,
    models: FileModels,
) -> tuple[StrategyResult | None, str]:
    """The arm's first candidate (or None) and the strategy that found it."""
    if arm == "hammer":
        return await _hammer_as_users_run_it(session, budget), "hammer"
    if arm == "hammer-capped":
        found = await HammerStrategy().prove(session, hole.goal, budget)
        return (found, "hammer") if found.outcome is Outcome.CANDIDATE else (None, "")
    if arm == "tactics":
        found = await _FixedTactics().prove(session, hole.goal, budget)
        return (found, "tactics") if found.outcome is Outcome.CANDIDATE else (None, "")
    # sauto and standalone retrieval are left out: on the dev files they proved
    # nothing the others missed (hammer's reconstruction uses the sauto family,
    # search uses the retrieved premises)
    strategies: dict[str, Strategy] = {
        "micro": MicroStrategy(),
        "search": SearchStrategy(models, max_expansions=200),
        "induction": InductionStrategy(),
        "hammer": HammerStrategy(),
    }
    spent = _arm_clock(session)
    for name, share in PORTFOLIO:
        left = budget.cpu_seconds - spent()
        if left <= 0.3:
            break
        cap = min(left, max(1.0, share * budget.cpu_seconds))
        part = Budget(cap, budget.tactic_seconds, budget.grace_seconds)
        found = await strategies[name].prove(session, hole.goal, part)
        if found.outcome is Outcome.CANDIDATE:
            try:
                check_script(found.sentences)
            except ScriptRejected:
                continue  # the gate would refuse it: the next strategy may do better
            return found, name
    return None, ""


async def _hammer_as_users_run_it(session: CoqSession, budget: Budget) -> StrategyResult | None:
    """``Timeout B hammer.`` in the session, CoqHammer's settings untouched; None if it fails.

    As a user would, the proof kept is the reconstruction tactic hammer prints
    ("Replace the hammer tactic with: ..."), which the ``Qed`` check then runs
    without the ATPs; ``hammer.`` itself only when it printed none.
    """
    spent = _arm_clock(session)
    started = time.monotonic()
    found = await session.run_tactic("hammer.", session.root, timeout=budget.cpu_seconds)
    if found.status is not TacticStatus.COMPLETE:
        return None
    script = reconstruction(found.message) or "hammer."
    return StrategyResult(Outcome.CANDIDATE, (script,), 1, spent(), time.monotonic() - started)


#: (file, [(index of the Qed proof in the file, arm order)])
_FileJobs = tuple[Path, list[tuple[int, list[str]]]]


async def evaluate(
    paths: Sequence[Path],
    *,
    budget: float = 10.0,
    baselines: Sequence[str] = (),
    seed: int = 0,
    limit: int | None = None,
    tactic_seconds: float = 1.0,
    on_goal: Callable[[GoalRow], None] | None = None,
    workers: int = 1,
    journal: Path | None = None,
    on_total: Callable[[int, Sequence[str]], None] | None = None,
) -> dict[str, Any]:
    """Run the evaluation; returns the result (also meant to be written as JSON).

    ``journal``, when given, gets one JSON line per finished goal; ``on_total``
    is told the number of goals and the arms once the files are read.
    """
    unknown = set(baselines) - set(BASELINES)
    if unknown:
        raise EvalError(
            f"unknown baseline(s): {', '.join(sorted(unknown))} ({', '.join(BASELINES)})"
        )
    hammer_environment()
    files = [p.resolve() for p in paths]
    arms = ["portfolio", *dict.fromkeys(baselines)]
    rng = random.Random(seed)
    started = time.monotonic()
    probe = CoqProver(settings=_SETTINGS)
    try:
        clashes = await _in_hammer_libraries(probe, files)
    finally:
        await probe.aclose()
    if clashes:
        raise EvalError(
            "not position-faithful: CoqHammer's load already brings in "
            + ", ".join(clashes)
            + ". Evaluate files that it does not load."
        )
    jobs: list[_FileJobs] = []
    left = limit
    for path in files:
        count = len(qed_proofs(path, path.read_text(encoding="utf-8")))
        if left is not None:
            count = min(count, left)
            left -= count
        picks = []
        for index in range(count):
            order = list(arms)
            rng.shuffle(order)
            picks.append((index, order))
        if picks:
            jobs.append((path, picks))
    if on_total is not None:
        on_total(sum(len(picks) for _, picks in jobs), arms)

    def finished(row: GoalRow) -> None:
        if journal is not None:
            with journal.open("a", encoding="utf-8") as out:
                out.write(json.dumps(_row_json(row)) + "\n")
        if on_goal is not None:
            on_goal(row)

    if workers <= 1:
        per_file = [
            await _evaluate_file(path, picks, budget, tactic_seconds, finished)
            for path, picks in jobs
        ]
    else:
        per_file = await _in_processes(jobs, budget, tactic_seconds, finished, workers)
    rows = [row for file_rows in per_file for row in file_rows]
    return _summary(rows, arms, budget, time.monotonic() - started, files, seed, workers)


_SETTINGS = CoqSettings(max_idle=2)


async def _in_processes(
    jobs: list[_FileJobs],
    budget: float,
    tactic_seconds: float,
    finished: Callable[[GoalRow], None],
    workers: int,
) -> list[list[GoalRow]]:
    """Each file in a process of its own, ``workers`` at a time, largest files first."""
    context = multiprocessing.get_context("spawn")
    loop = asyncio.get_running_loop()
    with context.Manager() as manager, ProcessPoolExecutor(workers, mp_context=context) as pool:
        queue = manager.Queue()
        order = sorted(range(len(jobs)), key=lambda i: -len(jobs[i][1]))
        futures = {
            i: loop.run_in_executor(
                pool, _file_in_process, jobs[i][0], jobs[i][1], budget, tactic_seconds, queue
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
    path: Path, picks: list[tuple[int, list[str]]], budget: float, tactic_seconds: float, queue: Any
) -> list[GoalRow]:
    rows = asyncio.run(_evaluate_file(path, picks, budget, tactic_seconds, queue.put))
    return rows


async def _evaluate_file(
    path: Path,
    picks: list[tuple[int, list[str]]],
    budget: float,
    tactic_seconds: float,
    finished: Callable[[GoalRow], None],
) -> list[GoalRow]:
    text = path.read_text(encoding="utf-8")
    proofs = qed_proofs(path, text)
    project = project_for(path)
    prover = CoqProver(project.flags, cwd=str(project.root), settings=_SETTINGS)
    models = FileModels()
    per_goal = Budget(budget, tactic_seconds, 5.0)
    rows: list[GoalRow] = []
    try:
        for index, order in picks:
            hole, body = proofs[index]
            row = await _goal(prover, models, path, text, hole, order, per_goal)
            row.training_cpu_seconds = await _learn(prover, models, text, hole, body)
            rows.append(row)
            finished(row)
    finally:
        await prover.aclose()
    return rows


def _prefix(prover: CoqProver, text: str, hole: CoqHole) -> list[str]:
    return [*HAMMER_PREAMBLE, *prover._prefix_codes(text, hole.prefix_end)]


async def _learn(
    prover: CoqProver, models: FileModels, text: str, hole: CoqHole, body: Sequence[str]
) -> float:
    """Mine the goal's own proof, now that the arms are done; its CPU seconds."""
    own, mined = time.process_time(), models.cpu_seconds
    try:
        async with prover.session_at(hole.goal, _prefix(prover, text, hole)) as session:
            await models.learn(session, body)
    except (ProverError, PrefixError):
        pass
    return models.cpu_seconds - mined + time.process_time() - own


async def _goal(
    prover: CoqProver,
    models: FileModels,
    path: Path,
    text: str,
    hole: CoqHole,
    order: list[str],
    budget: Budget,
) -> GoalRow:
    row = GoalRow(str(path), hole.goal.name, order)
    allowed = declared_axioms(text[: hole.statement_start])
    prefix = _prefix(prover, text, hole)
    for arm in order:
        began = time.monotonic()
        try:
            mined_before = models.cpu_seconds
            async with prover.session_at(hole.goal, prefix) as session:
                spent = _arm_clock(session)
                found, strategy = await _run_arm(arm, session, hole, budget, models)
                # replaying earlier proofs for the k-NN model is charged to the arm that asked
                cpu = spent() + (models.cpu_seconds - mined_before)
                solved, note = False, ""
                script: tuple[str, ...] = ()
                if found is not None:
                    try:
                        script = check_script(found.sentences)
                        ok, assumptions = await session.qed_check(
                            script, hole.goal.name, budget.tactic_seconds + 5
                        )
                        extra = _new_axioms(assumptions, allowed) if ok else ["(Qed failed)"]
                        solved = ok and not extra
                        note = "" if solved else "rejected: " + ", ".join(extra)
                    except ScriptRejected as exc:
                        note = f"rejected: {exc}"
        except PrefixError as exc:
            # the same prefix fails for every arm: the hints of the libraries
            # CoqHammer loads can change what an earlier tactic does (in ListSet.v,
            # an ``intuition``, i.e. ``auto with *``, closes a goal the next line
            # expected); no arm can be scored here
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


def _new_axioms(output: str, allowed: frozenset[str]) -> list[str]:
    """Axioms in a ``Print Assumptions`` output that the file does not declare itself.

    Section variables are not axioms; only the ``Axioms:`` part counts.
    """
    if "Closed under the global context" in output or "Axioms:" not in output:
        return []
    part = output.split("Axioms:", 1)[1]
    part = re.split(r"\n(?:Section Variables|Opaque constants|Transparent constants)", part)[0]
    names = re.findall(r"^([\w'.]+)\s*:", part, re.M)
    return [n for n in names if n.rsplit(".", 1)[-1] not in allowed]


def _summary(
    rows: list[GoalRow],
    arms: list[str],
    budget: float,
    wall: float,
    files: Sequence[Path],
    seed: int,
    workers: int,
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
        "wall_seconds": round(wall, 1),
        # mining each goal's proof after its arms (included in the portfolio's cpu_seconds)
        "training_cpu_seconds": round(training, 2),
        "arms": per_arm,
        # goals the file does not load up to once CoqHammer is loaded in front of it
        "unloadable": [
            {"file": r.file, "name": r.name, "reason": r.unloadable[:400]} for r in unloadable
        ],
    }
    baselines = [a for a in arms if a != "portfolio"]
    if baselines:
        union = sum(1 for r in rows if any(r.arms[a].solved for a in baselines if a in r.arms))
        result["baselines_union"] = union
        if "hammer" in per_arm and per_arm["hammer"]["solved"]:
            result["portfolio_over_hammer"] = round(
                per_arm["portfolio"]["solved"] / per_arm["hammer"]["solved"], 3
            )
    result["rows"] = [_row_json(r) for r in rows]
    return result


def _row_json(row: GoalRow) -> dict[str, Any]:
    return {
        "file": row.file,
        "name": row.name,
        "order": row.order,
        "training_cpu_seconds": round(row.training_cpu_seconds, 3),
        "unloadable": row.unloadable,
        "arms": {
            a: {
                "solved": v.solved,
                "cpu_seconds": round(v.cpu_seconds, 3),
                "wall_seconds": round(v.wall_seconds, 3),
                "strategy": v.strategy,
                "script": " ".join(v.script),
                "note": v.note,
            }
            for a, v in row.arms.items()
        },
    }


def write_result(result: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{result['timestamp']}-eval.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return path
