"""Leases that live as long as their work: a live worker keeps its ticket past its lease,
a worker killed outright loses it one lease later (a real process, SIGKILL)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proof_orchestrator.goals import Goal, HoleKind
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.ledger.leases import Leases, LeaseState

#: short enough for a quick test, long enough that a loaded machine does not miss a beat
LEASE = 3.0

#: a worker: claims the ticket through the market's lease keeper, then works "forever"
WORKER = """
import asyncio, sys
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.ledger.leases import LeaseState, Leases
from proof_orchestrator.ledger.leases import Leases

async def main(url: str, ticket_id: int, lease: float) -> None:
    ledger = Ledger(url)
    async with Leases(ledger, lease) as leases:
        ticket = leases.claim("worker-proc", ticket_id)
        print("claimed" if ticket is not None else "missed", flush=True)
        await asyncio.sleep(3600)  # a helper proof that runs far longer than its lease

asyncio.run(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
"""


@pytest.fixture
def ticket(tmp_path: Path) -> Iterator[tuple[Ledger, str, int]]:
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger = Ledger(url)
    goal = Goal(tmp_path / "A.v", 3, "a", "Lemma a : True.", HoleKind.ADMITTED, "fp-a")
    ticket_id, _ = ledger.publish_ticket(
        fingerprint="fp-helper",
        statement="forall n : nat, n + 0 = n",
        name="a_helper1",
        parent_goal_id=ledger.upsert_goal(goal),
    )
    yield ledger, url, ticket_id
    ledger.close()


@pytest.fixture
def worker(ticket: tuple[Ledger, str, int]) -> Iterator[subprocess.Popen[str]]:
    _, url, ticket_id = ticket
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, url, str(ticket_id), str(LEASE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "claimed":
            proc.kill()
            _, err = proc.communicate(timeout=30)
            pytest.fail(f"the worker did not claim the ticket: {line!r} {err[-2000:]}")
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        assert proc.returncode is not None


def test_a_live_worker_keeps_its_ticket_past_its_lease_and_a_killed_one_loses_it(
    ticket: tuple[Ledger, str, int], worker: subprocess.Popen[str]
) -> None:
    ledger, _, ticket_id = ticket
    # three leases while the worker is alive: nobody else may claim the ticket
    held_until = time.monotonic() + 3 * LEASE
    tries = 0
    while time.monotonic() < held_until:
        assert ledger.expire_leases() == 0
        assert ledger.claim_ticket("second", LEASE, ticket_id) is None
        tries += 1
        time.sleep(0.25)
    assert worker.poll() is None
    held = ledger.ticket(ticket_id)
    assert held is not None
    assert (held.state, held.claimed_by) == ("claimed", "worker-proc")
    assert tries >= 10

    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=30)
    killed = time.monotonic()
    while (again := ledger.claim_ticket("second", LEASE, ticket_id)) is None:
        assert time.monotonic() - killed < LEASE + 2.0, "the dead worker kept its ticket"
        time.sleep(0.05)
    waited = time.monotonic() - killed
    assert again.claimed_by == "second"
    # the last beat was at most a beat before the kill: the lease ran out within one lease
    assert waited <= LEASE + 2.0
    assert worker.returncode == -signal.SIGKILL
    print(f"{tries} claims refused in {3 * LEASE:.0f} s; reclaimed {waited:.2f} s after SIGKILL")


async def test_a_claim_is_renewed_while_its_worker_is_alive_and_runs_out_after(
    ticket: tuple[Ledger, str, int],
) -> None:
    """The MCP tools' rule: an agent's claim is renewed while it keeps calling them."""
    ledger, _, ticket_id = ticket
    lease = 1.0
    active = True
    async with Leases(ledger, lease) as leases:
        assert leases.claim("agent", ticket_id, alive=lambda: active) is not None
        await asyncio.sleep(2.5 * lease)
        assert ledger.claim_ticket("second", lease, ticket_id) is None
        active = False  # the agent went quiet
        quiet = time.monotonic()
        while ledger.claim_ticket("second", lease, ticket_id) is None:
            assert time.monotonic() - quiet < lease + 2.0
            await asyncio.sleep(0.05)
        active = True  # back, too late: the next beat finds the claim is the second's
        await asyncio.sleep(leases.interval * 1.5)
        assert ticket_id in leases.lost
        assert not leases.holds(ticket_id)
    assert leases.state is LeaseState.CLOSED
    with pytest.raises(RuntimeError, match="cannot be reopened"):
        await leases.__aenter__()


async def test_a_completed_claim_is_no_longer_renewed(ticket: tuple[Ledger, str, int]) -> None:
    ledger, _, ticket_id = ticket
    async with Leases(ledger, 1.0) as leases:
        assert leases.claim("worker", ticket_id) is not None
        assert leases.complete(ticket_id, "worker", ["auto."])
        assert not leases.holds(ticket_id)
        leases.renew()
    done = ledger.ticket(ticket_id)
    assert done is not None
    assert (done.state, done.proof) == ("completed", ["auto."])
