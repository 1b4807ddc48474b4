"""``run_command``: a batch command's code, output and its own CPU time."""

from __future__ import annotations

import asyncio
import sys

import pytest

from proof_orchestrator.errors import ProverHung
from proof_orchestrator.provers.process import _children_cpu, run_command, spawn

#: burns about ``n`` CPU seconds, then exits with code 3
BURN = (
    "import sys, time\n"
    "n = float(sys.argv[1]); t = time.process_time()\n"
    "while time.process_time() - t < n: pass\n"
    "print('burnt'); sys.exit(3)\n"
)


def test_code_output_and_input_come_back() -> None:
    script = "import sys; print(sys.stdin.read().upper()); sys.exit(4)"
    run = asyncio.run(run_command([sys.executable, "-c", script], timeout=30, input_text="coq"))
    assert (run.returncode, run.output.strip()) == (4, "COQ")


def test_standard_error_is_in_the_output_and_the_shells_report_is_not() -> None:
    script = "import sys; print('out', flush=True); print('err', file=sys.stderr)"
    run = asyncio.run(run_command([sys.executable, "-c", script], timeout=30))
    assert run.output.split() == ["out", "err"]


def test_the_command_is_charged_its_own_cpu() -> None:
    run = asyncio.run(run_command([sys.executable, "-c", BURN, "0.6"], timeout=30))
    assert run.returncode == 3
    assert run.output.strip() == "burnt"
    assert 0.5 <= run.cpu_seconds <= 1.5


def test_another_process_that_ends_meanwhile_is_not_charged() -> None:
    """A prover reaped while the command runs (a hammer attempt's, beside a check)
    was charged to the command when its CPU was this process's RUSAGE_CHILDREN."""

    async def both() -> float:
        other = await spawn([sys.executable, "-c", BURN, "1.0"])
        run = await run_command([sys.executable, "-c", "import time; time.sleep(2.5)"], timeout=30)
        assert other.returncode == 3  # it ended, and was reaped, during the command
        return run.cpu_seconds

    assert asyncio.run(both()) < 0.4


def test_a_hung_command_is_killed() -> None:
    with pytest.raises(ProverHung):
        asyncio.run(run_command([sys.executable, "-c", "import time; time.sleep(30)"], timeout=1))


def test_times_output_of_dash_and_bash() -> None:
    assert _children_cpu("0m0.010000s 0m0.000000s\n1m2.500000s 0m0.250000s\n") == pytest.approx(
        62.75
    )
    assert _children_cpu("0m0.001s 0m0.002s\n0m1.240s 0m0.380s\n") == pytest.approx(1.62)
    assert _children_cpu("") is None
    # what the shell said before ``times`` (a command it could not start) is not read
    assert _children_cpu("sh: 1: x: not found\n0m0.0s 0m0.0s\n0m0.5s 0m0.25s\n") == 0.75


def test_a_command_counts_in_the_trees_cpu_while_it_runs_and_once() -> None:
    """``coqc`` under the shell (a file's check) is the run's CPU as it goes: read only
    when the shell reaped it, a 30 s check looked like someone else's work, and then
    arrived at once as a debt that held every request back."""
    from proof_orchestrator.scheduler.governor import _tree_cpu

    async def measured() -> tuple[float, float, float]:
        start = _tree_cpu()
        task = asyncio.create_task(run_command([sys.executable, "-c", BURN, "1.5"], timeout=30))
        await asyncio.sleep(1.2)
        midway = _tree_cpu() - start
        run = await task
        assert run.returncode == 3
        return midway, _tree_cpu() - start, run.cpu_seconds

    midway, total, own = asyncio.run(measured())
    assert midway > 0.5, midway  # counted before the command ended
    # at the end, the command's CPU once (this process's own adds a little)
    assert own - 0.2 <= total <= own + 1.0, (total, own)
