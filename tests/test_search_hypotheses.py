"""Search steps on the goal's hypotheses, and probed candidates, with the real prover."""

from __future__ import annotations

from pathlib import Path

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.strategies.hypotheses import hypothesis_tactics
from proof_orchestrator.coq.strategies.search import SearchStrategy
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.provers.base import TacticStatus
from proof_orchestrator.provers.process import TRAFFIC

GOAL = """\
  A : Type
  l, l' : list A
  H : l = l'
  H0 : forall y : A, In y l -> False
  H1 : P /\\ (Q -> R)
  n : nat
  ============================
  length l = length l'
"""


def test_each_latest_hypothesis_gets_the_step_that_fits_its_type() -> None:
    assert hypothesis_tactics(GOAL, limit=4) == [
        "destruct n.",
        "destruct H1.",  # a conjunction (its arrow is inside parentheses)
        "apply H0.",
        "rewrite H.",
        "rewrite <- H.",
    ]
    assert hypothesis_tactics(GOAL, limit=1) == ["destruct n."]
    # a type is not taken apart
    assert hypothesis_tactics("  A : Type\n  ============================\n  A -> A\n") == []


CASES = """\
Inductive colour : Set := red | green | blue.
Inductive warm : colour -> Prop := warm_red : warm red | warm_green : warm green.
Inductive named : colour -> Prop := named_any : forall c, warm c \\/ c = blue -> named c.
Lemma every_colour_is_named : forall c : colour, named c.
Proof.
Admitted.
"""


async def _search(tmp_path: Path, probe: bool) -> tuple[Outcome, list[str], int]:
    path = tmp_path / "Cases.v"
    path.write_text(CASES, encoding="utf-8")
    (hole,) = scan_coq_text(path, CASES)
    prover = CoqProver(cwd=str(tmp_path))
    try:
        async with prover.session(hole.goal, CASES, hole.prefix_end) as session:
            writes = TRAFFIC.writes
            found = await SearchStrategy(probe=probe).prove(session, hole.goal, Budget(20, 1, 5))
            writes = TRAFFIC.writes - writes
            if found.outcome is Outcome.CANDIDATE:
                # the search accepted it only after Qed took it: no second check
                assert found.kernel_checked
                replay = await session.run_script(found.sentences, session.root, timeout=5)
                assert replay.status is TacticStatus.COMPLETE
            return found.outcome, list(found.sentences), writes
    finally:
        await prover.aclose()


async def test_search_takes_a_variable_apart_and_probes_in_fewer_round_trips(
    tmp_path: Path,
) -> None:
    outcome, script, probed_writes = await _search(tmp_path, probe=True)
    assert outcome is Outcome.CANDIDATE, script
    assert any(s.startswith("destruct c") for s in script), script
    plain_outcome, plain_script, plain_writes = await _search(tmp_path, probe=False)
    assert plain_outcome is Outcome.CANDIDATE
    assert plain_script == script  # the same steps in the same order: the same proof
    assert probed_writes < plain_writes / 2, (probed_writes, plain_writes)
