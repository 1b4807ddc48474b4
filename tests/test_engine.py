"""The one engine's scheduling logic, in milliseconds, on the fake backend of ``fake_backend.py``.

These tests check budgets, revisits, cancellation and the MCP service's use of
the engine. The fake backend's verifier refuses everything, so none of them
can claim a proof; proofs are the business of the real-Coq tests.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from proof_orchestrator.config import Settings
from proof_orchestrator.goals import Budget, Goal, Outcome
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.ledger.models import Attempt
from proof_orchestrator.run.attempts import AttemptRunner
from proof_orchestrator.run.lineup import build_lineup
from proof_orchestrator.run.pipeline import fill
from proof_orchestrator.run.reports import FillOptions
from proof_orchestrator.scheduler import budget as budget_module
from proof_orchestrator.strategies.base import StrategyResult

from .fake_backend import LANGUAGE, fake_backend, result


@pytest.fixture
def ledger(tmp_path: Path) -> Any:
    opened = Ledger(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    yield opened
    opened.close()


@pytest.fixture
def accounts(monkeypatch: pytest.MonkeyPatch) -> list[budget_module.GoalBudget]:
    """Every goal account the engine opens, kept for inspection."""
    made: list[budget_module.GoalBudget] = []
    original = budget_module.GoalBudget

    class Kept(original):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr("proof_orchestrator.scheduler.portfolio.GoalBudget", Kept)
    return made


def _file(tmp_path: Path, *holes: str) -> Path:
    path = tmp_path / "goals.fake"
    path.write_text("".join(f"hole {h} : {h} holds\n" for h in holes), encoding="utf-8")
    return path


def _options(budget: float, cap: float) -> FillOptions:
    settings = Settings(cpu_target=1.0, budget=budget, budget_cap=cap, profile=0)
    return FillOptions(orch=settings)


def _attempts(ledger: Ledger) -> list[Any]:
    with ledger.engine.connect() as connection:
        rows = connection.execute(select(Attempt).order_by(Attempt.id)).all()
    return [a for a in rows if a.strategy in ("quick", "deep")]


async def test_a_goal_out_of_budget_is_revisited_once_with_twice_the_budget(
    tmp_path: Path, ledger: Ledger
) -> None:
    async def handler(name: str, goal: Goal, budget: Budget) -> StrategyResult:
        return result(Outcome.TIMEOUT, budget.cpu_seconds)

    with fake_backend(handler):
        report = await fill([_file(tmp_path, "a")], ledger, _options(4.0, 8.0))
    assert report.goals[0].outcome is Outcome.TIMEOUT
    budgets = sorted({a.goal_budget_seconds for a in _attempts(ledger)})
    assert budgets == [4.0, 8.0]


async def test_a_goal_parked_at_the_cap_is_not_searched_again(
    tmp_path: Path, ledger: Ledger
) -> None:
    calls: list[str] = []

    async def handler(name: str, goal: Goal, budget: Budget) -> StrategyResult:
        calls.append(name)
        return result(Outcome.TIMEOUT, budget.cpu_seconds)

    path = _file(tmp_path, "a")
    with fake_backend(handler):
        await fill([path], ledger, _options(4.0, 8.0))
        first = len(calls)
        await fill([path], ledger, _options(4.0, 8.0))
    assert first > 0
    assert len(calls) == first


async def test_the_heavy_strategy_gets_what_the_cheap_one_left(
    tmp_path: Path, ledger: Ledger, accounts: list[budget_module.GoalBudget]
) -> None:
    granted: dict[str, float] = {}

    async def handler(name: str, goal: Goal, budget: Budget) -> StrategyResult:
        granted[name] = budget.cpu_seconds
        return result(Outcome.FAILED, 0.2 if name == "quick" else 1.0)

    with fake_backend(handler):
        await fill([_file(tmp_path, "a")], ledger, _options(10.0, 10.0))
    assert granted["quick"] == pytest.approx(1.0)  # the cheap share of 10 s
    assert granted["deep"] > 8.5  # 10 s minus what quick reserved, then used
    account = accounts[0]
    assert account.reserved == pytest.approx(0.0)


async def test_a_winner_cancels_the_others_and_their_grants_come_back(
    tmp_path: Path,
    ledger: Ledger,
    accounts: list[budget_module.GoalBudget],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = asyncio.Event()
    runners: list[AttemptRunner] = []
    made = AttemptRunner.__init__

    def keep(self: AttemptRunner, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        runners.append(self)

    monkeypatch.setattr(AttemptRunner, "__init__", keep)

    async def handler(name: str, goal: Goal, budget: Budget) -> StrategyResult:
        if name == "deep":
            started.set()
            await asyncio.sleep(3600)
        await started.wait()
        return result(Outcome.CANDIDATE, 0.1)

    with fake_backend(handler, lineup=(("deep", "heavy"), ("quick", "light"))):
        report = await fill([_file(tmp_path, "a")], ledger, _options(10.0, 10.0))
    # the candidate was refused by the fake verifier: nothing is claimed proved
    assert report.goals[0].outcome is Outcome.REJECTED
    outcomes = {a.strategy: a.outcome for a in _attempts(ledger)}
    assert outcomes["deep"] == Outcome.CANCELLED.value
    assert all(account.reserved == pytest.approx(0.0) for account in accounts)
    # the attempts a pass planned count toward a strategy's record only while it runs
    assert runners
    assert all(count == 0 for runner in runners for count in runner.unsettled.values())
    assert any(runner.unsettled for runner in runners)
    # the cancelled attempt is an attempt in the explore rule's count, as in the ledger
    from proof_orchestrator.scheduler.shares import project_record

    assert sum(project_record(runner.bandit, "deep")[0] for runner in runners) == 1


def test_the_lineup_hands_every_backend_the_allowed_imports(ledger: Ledger) -> None:
    async def handler(name: str, goal: Goal, budget: Budget) -> StrategyResult:
        return result(Outcome.FAILED, 0.0)

    settings = Settings(allow_import="hammer-tactics")
    with fake_backend(handler) as backend:
        lineup = build_lineup(settings, ledger)
    assert backend.inputs[0].allowed_imports == frozenset({"hammer-tactics"})
    hammer = [s for s in lineup if s.name in ("hammer", "sauto")]
    assert hammer
    assert all(getattr(s, "allow_tactics_import", False) for s in hammer)
    assert {s.language for s in lineup} >= {"coq", "lean", LANGUAGE}


async def test_mcp_run_strategies_settles_its_budget_on_cancel(
    tmp_path: Path, ledger: Ledger, accounts: list[budget_module.GoalBudget]
) -> None:
    pytest.importorskip("mcp")
    from proof_orchestrator.agents.service import AgentService

    running = asyncio.Event()

    async def handler(name: str, goal: Goal, budget: Budget) -> StrategyResult:
        if name == "deep":
            running.set()
            await asyncio.sleep(3600)
        return result(Outcome.FAILED, 0.3)

    path = _file(tmp_path, "a")
    options = _options(10.0, 10.0)
    with fake_backend(handler):
        async with AgentService(tmp_path, ledger, options) as service:
            hole = service.list_holes()[0]
            task = asyncio.create_task(service.run_strategies(hole.id, 10.0, "tester"))
            await asyncio.wait_for(running.wait(), 10)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    assert path.read_text(encoding="utf-8").startswith("hole a")
    account = accounts[0]
    assert account.reserved == pytest.approx(0.0)
    assert account.used == pytest.approx(0.3, abs=0.2)  # quick's CPU; deep was cut at 0


def test_mcp_passes_allow_import_to_its_strategies(tmp_path: Path, ledger: Ledger) -> None:
    pytest.importorskip("mcp")
    from proof_orchestrator.agents.service import AgentService
    from proof_orchestrator.cli.common import fill_options

    settings = Settings(allow_import="hammer-tactics")
    service = AgentService(tmp_path, ledger, fill_options(settings))
    hammer = [s for s in service.strategies() if s.name in ("hammer", "sauto")]
    assert hammer
    assert all(getattr(s, "allow_tactics_import", False) for s in hammer)
