"""A script that leaves no goal but whose proof the kernel refuses at ``Qed`` is no
candidate: ssreflect's ``exact/inst`` on a goal it cannot prove does this in Coq 8.16
(coqtop says "No more goals", ``coqc`` refuses the term at ``Qed``)."""

from __future__ import annotations

from pathlib import Path

from proof_orchestrator.coq.strategies.micro import FixedScripts
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.run.attempts import kernel_checked
from proof_orchestrator.strategies.base import StrategyResult

from .hole_sessions import run_at_hole

GOAL = """\
From Coq Require Import ssreflect ssrbool.
Parameter accept : nat -> nat -> bool.
Definition same (f g : nat -> bool) := forall n, f n = g n.
Lemma same_refl A : same (accept A) (accept A).
Proof.
Admitted.
Lemma same_not A : same (accept A) (fun n => ~~ accept A n).
Proof.
Admitted.
"""


def _file(tmp_path: Path) -> Path:
    (tmp_path / "lib").mkdir()
    path = tmp_path / "Goal.v"
    path.write_text(GOAL, encoding="utf-8")
    return path


def test_a_proof_the_kernel_refuses_is_no_candidate(tmp_path: Path) -> None:
    path = _file(tmp_path)

    async def tried(session, goal):  # type: ignore[no-untyped-def]
        left = await session.run_tactic("exact/inst.", session.root, timeout=5)
        closes, _ = await session.kernel_accepts(("exact/inst.",), 10)
        quick = await FixedScripts("t", ["exact/inst.", "by []."]).prove(
            session, goal, Budget(10, 2, 1)
        )
        claimed = StrategyResult(Outcome.CANDIDATE, ("exact/inst.",), 1, 0.1)
        checked = await kernel_checked(session, claimed, Budget(10, 2, 1))
        return left, closes, quick, checked

    left, closes, quick, checked = run_at_hole(tried, path, "same_not", tmp_path)
    assert left.goals == ()  # coqtop leaves no goal ...
    assert not closes  # ... and the kernel refuses the term
    assert quick.outcome is not Outcome.CANDIDATE
    assert quick.tactics_tried == 2
    assert checked.outcome is Outcome.FAILED
    assert "kernel refused" in checked.message
    assert checked.cpu_seconds >= 0.1


def test_a_proof_the_kernel_takes_stays_a_candidate(tmp_path: Path) -> None:
    path = _file(tmp_path)

    async def tried(session, goal):  # type: ignore[no-untyped-def]
        quick = await FixedScripts("t", ["exact/inst.", "by move=> n."]).prove(
            session, goal, Budget(10, 2, 1)
        )
        claimed = StrategyResult(Outcome.CANDIDATE, ("by move=> n.",), 1, 0.1)
        before = session.cpu_seconds()
        again = await kernel_checked(session, quick, Budget(10, 2, 1))
        spent_again = session.cpu_seconds() - before
        return quick, again, spent_again, await kernel_checked(session, claimed, Budget(10, 2, 1))

    quick, again, spent_again, checked = run_at_hole(tried, path, "same_refl", tmp_path)
    assert quick.outcome is Outcome.CANDIDATE
    assert quick.sentences == ("by move=> n.",)
    # the quick tactics saw it close with Qed: the attempt runner does not ask again
    assert quick.kernel_checked
    assert again == quick
    assert spent_again == 0.0
    assert checked.outcome is Outcome.CANDIDATE
    assert not checked.kernel_checked
