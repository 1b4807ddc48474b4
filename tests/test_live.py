"""The live state of running commands: the ledger's rows (SQLite and PostgreSQL) and the board."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from proof_orchestrator.ledger import Ledger
from proof_orchestrator.provers.tasks import cancel_and_wait
from proof_orchestrator.run.live import VERIFY_SLOT, LiveBoard, LivePublisher


def test_publish_replaces_the_state_and_clear_removes_it(any_ledger_url: str) -> None:
    ledger = Ledger(any_ledger_url)
    try:
        run = ledger.start_run("fill", {}, "8.16.1")
        other = ledger.start_run("bank", {}, "8.16.1")
        assert ledger.live_runs() == []
        ledger.publish_live(run, {"queue": 3, "slots": [{"goal": "a", "strategy": "micro"}]})
        ledger.publish_live(other, {"queue": 1})
        ledger.publish_live(run, {"queue": 2, "slots": []})  # the same row, replaced
        live = ledger.live_runs()
        assert [(r["run_id"], r["command"], r["state"]["queue"]) for r in live] == [
            (run, "fill", 2),
            (other, "bank", 1),
        ]
        assert not any(r["dead"] for r in live)
        ledger.clear_live(run)
        assert [r["run_id"] for r in ledger.live_runs()] == [other]
        ledger.clear_live(run)  # clearing twice is harmless
    finally:
        ledger.close()


def test_a_stale_heartbeat_shows_the_run_as_dead(any_ledger_url: str) -> None:
    ledger = Ledger(any_ledger_url)
    try:
        run = ledger.start_run("fill", {}, "8.16.1")
        ledger.publish_live(run, {"queue": 0})
        time.sleep(0.3)
        (fresh,) = ledger.live_runs(stale_after=5.0)
        (stale,) = ledger.live_runs(stale_after=0.1)
        assert not fresh["dead"]
        assert stale["dead"]
        assert stale["heartbeat_age_seconds"] >= 0.3
        ledger.publish_live(run, {"queue": 0})  # a new heartbeat revives it
        assert not ledger.live_runs(stale_after=0.2)[0]["dead"]
    finally:
        ledger.close()


def test_board_counts_slots_goals_and_eta() -> None:
    board = LiveBoard()
    board.total = 4
    with board.slot("a", "/p/A.v", "micro", 10.0) as slot:
        slot.meter = lambda: 1.25
        with board.slot("b", "/p/A.v", "induction", 10.0):
            state = board.snapshot(queue=2, governor=None)
            assert [(s["goal"], s["strategy"]) for s in state["slots"]] == [
                ("a", "micro"),
                ("b", "induction"),
            ]
            assert state["slots"][0]["cpu_seconds"] == 1.25
            assert state["slots"][1]["cpu_seconds"] is None  # no session open yet
            assert state["eta_seconds"] is None  # nothing done: no pace yet
    board.done = 2
    assert board.snapshot(queue=2, governor=None)["eta_seconds"] is None  # no pass ended yet
    for _ in range(2):
        board.pace.pass_started()
        board.pace.pass_ended(revisit=False, cpu_seconds=1.0, requeued=False)
    state = board.snapshot(queue=2, governor=None)
    assert state["slots"] == []
    assert state["queue"] == 2
    assert state["goals"] == {"total": 4, "done": 2, "proved": 0}
    assert state["eta_seconds"] is not None
    assert state["eta_seconds"] >= 0


def test_the_eta_counts_the_last_file_s_check() -> None:
    """The last check starts when the last goal ends and nothing runs beside it: the ETA
    adds the mean of the latest checks, and while the last one runs, what is left of it."""
    clock = [100.0]
    board = LiveBoard()
    board.pace.clock = lambda: clock[0]
    board.total = 4
    board.done = 2
    for _ in range(2):
        board.pace.pass_started()
        clock[0] += 10.0
        board.pace.pass_ended(revisit=False, cpu_seconds=10.0, requeued=False)
    without = board.eta_seconds()
    assert without is not None
    board.check_ended(30.0)
    board.check_ended(10.0)
    assert board.eta_seconds() == without + 20.0
    board.done = 4  # every goal done: the last check runs
    with board.slot("A.v", "/p/A.v", VERIFY_SLOT) as slot:
        slot.started_at = time.time() - 5.0
        left = board.eta_seconds()
        assert left is not None
        assert 14.0 <= left <= 15.0
    assert board.eta_seconds() == 0.0  # no check left


async def test_publisher_beats_until_cancelled_and_counts_its_cost(tmp_path: Path) -> None:
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.sqlite'}")
    try:
        run = ledger.start_run("fill", {}, "")
        board = LiveBoard()
        publisher = LivePublisher(ledger, run, board, queue_length=lambda: 7, interval=0.05)
        task = asyncio.create_task(publisher.run())
        await asyncio.sleep(0.3)
        await cancel_and_wait(task)
        assert publisher.publishes >= 3
        assert publisher.cpu_seconds > 0
        (row,) = ledger.live_runs()
        assert row["state"]["queue"] == 7
        publisher.clear()
        assert ledger.live_runs() == []
    finally:
        ledger.close()
