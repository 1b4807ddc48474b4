"""Goals whose attempts end in prover errors (issue 14): retried once, then `error`, never `failed`.

The prover is the real coqtop behind a thin wrapper that kills it when the
statement of lemma ``t`` arrives, a given number of times in all (a counter
file counts the deaths). Nothing else is faked.
"""

from __future__ import annotations

import stat
import sys
from collections.abc import Callable
from pathlib import Path

from proof_orchestrator.cli.fill import fill_json
from proof_orchestrator.config import Settings
from proof_orchestrator.coq.prover import CoqSettings
from proof_orchestrator.coq.strategies.micro import InductionStrategy, MicroStrategy
from proof_orchestrator.goals import Outcome
from proof_orchestrator.ledger import Ledger, LedgerReader
from proof_orchestrator.run.pipeline import FillOptions, fill

TEXT = """\
Lemma s : True.
Proof. exact I. Qed.

Lemma t : 1 + 1 = 2.
Admitted.
"""

WRAPPER = """\
#!{python}
import os, subprocess, sys
from pathlib import Path
if "-emacs" not in sys.argv:  # coqtop --version and the like
    os.execvp("coqtop", ["coqtop", *sys.argv[1:]])
counter = Path({counter!r})
coqtop = subprocess.Popen(["coqtop", *sys.argv[1:]], stdin=subprocess.PIPE)
for line in sys.stdin.buffer:
    deaths = int(counter.read_text() or "0")
    if b"Lemma t " in line and deaths < {deaths}:
        counter.write_text(str(deaths + 1))
        coqtop.kill()
        coqtop.wait()
        sys.exit(1)
    coqtop.stdin.write(line)
    coqtop.stdin.flush()
coqtop.stdin.close()
sys.exit(coqtop.wait())
"""


def dying_coqtop(folder: Path, deaths: int) -> tuple[Path, Path]:
    """A coqtop that dies at ``Lemma t`` the first ``deaths`` times; (executable, counter)."""
    counter = folder / "deaths"
    counter.write_text("0")
    wrapper = folder / "dying-coqtop"
    wrapper.write_text(WRAPPER.format(python=sys.executable, counter=str(counter), deaths=deaths))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper, counter


def options(coqtop: Path) -> FillOptions:
    return FillOptions(
        orch=Settings(budget=5.0, tactic_timeout=1.0),
        coq=CoqSettings(coqtop=str(coqtop)),
        reuse=False,
    )


async def test_a_goal_whose_prover_always_dies_is_an_error_not_a_failure(
    tmp_path: Path, write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    coqtop, counter = dying_coqtop(tmp_path, deaths=100)
    path = write_v("Dies.v", TEXT)
    report = await fill(
        [path], ledger, options(coqtop), strategies=[MicroStrategy(), InductionStrategy()]
    )
    (goal,) = report.goals
    assert goal.outcome is Outcome.ERROR
    assert "coqtop exited" in goal.message
    # two strategies, each tried once and retried once in a fresh session
    assert counter.read_text() == "4"
    assert report.errors == 1
    assert [g["status"] for g in LedgerReader(ledger).goals()] == ["error"]
    as_json = fill_json(report)
    assert as_json["errors"] == 1
    (json_goal,) = as_json["files"][0]["goals"]
    assert json_goal["outcome"] == "error"
    assert "coqtop exited" in json_goal["message"]
    assert path.read_text() == TEXT


async def test_a_prover_that_dies_once_is_retried_in_a_fresh_session(
    tmp_path: Path, write_v: Callable[[str, str], Path], ledger: Ledger
) -> None:
    coqtop, counter = dying_coqtop(tmp_path, deaths=1)
    path = write_v("DiesOnce.v", TEXT)
    report = await fill([path], ledger, options(coqtop), strategies=[MicroStrategy()])
    (goal,) = report.goals
    assert goal.outcome is Outcome.PROVED, goal.message
    assert counter.read_text() == "1"
    assert [g["status"] for g in LedgerReader(ledger).goals()] == ["proved"]
    assert "Admitted." not in path.read_text()
