"""Probing a node's candidates in one sentence, on a real coqtop."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from proof_orchestrator.coq.holes import scan_coq_file
from proof_orchestrator.coq.probe import probe, probe_sentence
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.provers.base import TacticStatus

SOURCE = """\
Require Import Arith.
Lemma probe_me : forall n : nat, n + 0 = n /\\ True.
Proof.
Admitted.
"""


def test_the_sentence_names_where_each_tactic_sits() -> None:
    code, spans = probe_sentence(["split.", "apply Nat.add_0_r."], 1)
    assert code.startswith("Timeout 3 idtac; try (assert_succeeds (timeout 1 (progress (")
    assert code.endswith('idtac "@@probe1@@").')
    assert [code[a:b] for a, b in spans] == ["split", "apply Nat.add_0_r"]


async def test_a_probe_keeps_the_tactics_that_change_the_goal(
    write_v: Callable[[str, str], Path],
) -> None:
    path = write_v("P.v", SOURCE)
    (hole,) = scan_coq_file(path)
    prover = CoqProver()
    async with prover.session(hole.goal, SOURCE, hole.prefix_end) as session:
        tactics = [
            "split.",  # introduces n, then splits
            "intros.",  # a step
            "simpl.",  # succeeds without changing anything
            "intros; split; [apply Nat.add_0_r | exact I].",  # a proof
            "apply H0.",  # no such hypothesis
            "do 100000000 idtac; intros.",  # past its second
            "apply Nat.nosuch_lemma.",  # breaks the whole sentence: run it on its own
            "all: intros.",  # no selector inside parentheses: run it on its own
            "exact I.",
        ]
        verdict = await probe(session, tactics, session.root, timeout=1)
        assert verdict == [True, True, False, True, False, False, True, True, False]
        # the proof is where it was, and the next tactic runs from the root
        step = await session.run_tactic("intros.", session.root, timeout=2)
        assert step.status is TacticStatus.GOALS
        assert "n + 0 = n /\\ True" in step.goals[0]
        # from a deeper state, and back to the root
        inner = await probe(session, ["split.", "exact I."], step.state, timeout=1)
        assert inner == [True, False]
        again = await probe(session, ["exact I.", "intros."], session.root, timeout=1)
        assert again == [False, True]
        # a probe that breaks on a candidate, at a state coqtop must go back to first
        deeper = await session.run_tactic("intros.", session.root, timeout=2)
        broken = await probe(
            session, ["apply Nat.nosuch_lemma.", "intros.", "exact I."], session.root, timeout=1
        )
        assert broken == [True, True, False]
        after = await session.run_tactic("split.", deeper.state, timeout=2)
        assert after.status is TacticStatus.GOALS
        assert len(after.goals) == 2
        done = await session.run_tactic(tactics[3], session.root, timeout=2)
        assert done.status is TacticStatus.COMPLETE
    await prover.aclose()
