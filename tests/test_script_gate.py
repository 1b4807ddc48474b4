"""The script gate refuses everything that could fake a proof."""

from __future__ import annotations

import pytest

from proof_orchestrator.coq.script import check_script, format_script
from proof_orchestrator.errors import ScriptRejected


@pytest.mark.parametrize(
    "script",
    [
        ["admit."],
        ["intros; admit."],
        ["Admitted."],
        ["Abort."],
        ["Axiom cheat : False."],
        ["auto.", "Qed."],
        ["Qed."],
        ["Defined."],
        ["Unset Guard Checking."],
        ["Require Import Classical."],
        ["give_up."],
        ["exact_no_check I."],
        ["auto. (*"],
        ["auto. Qed."],
        ["Proof."],
        ["Lemma other : False."],
        [],
        ["auto"],
    ],
)
def test_rejected(script: list[str]) -> None:
    with pytest.raises(ScriptRejected):
        check_script(script)


def test_accepted_scripts_come_back_in_normal_form() -> None:
    assert check_script(["intros\n  n.", "-", "simpl; auto.", "2: {", "lia.", "}"]) == (
        "intros n.",
        "-",
        "simpl; auto.",
        "2: {",
        "lia.",
        "}",
    )
    assert check_script(['idtac "admit is only a word here".']) == (
        'idtac "admit is only a word here".',
    )


def test_format_keeps_bullets_with_their_tactic() -> None:
    long = [
        "induction n.",
        "-",
        "simpl; reflexivity.",
        "-",
        "simpl; rewrite IHn; reflexivity.",
        "-",
        "auto with arith.",
    ]
    assert format_script(long, "  ").splitlines() == [
        "  induction n.",
        "  - simpl; reflexivity.",
        "  - simpl; rewrite IHn; reflexivity.",
        "  - auto with arith.",
    ]
    assert format_script(["auto."], "  ") == "  auto."
