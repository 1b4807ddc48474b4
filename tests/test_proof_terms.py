"""Proof terms as scripts: printed whole by real coqtop, read back by another, laid out in lines."""

from __future__ import annotations

from pathlib import Path

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.script import WRAP_WIDTH, check_script, format_script
from proof_orchestrator.coq.strategies.proof_terms import (
    leading_binders,
    printed_terms,
    term_scripts,
)
from proof_orchestrator.goals import Goal
from proof_orchestrator.provers.base import TacticStatus

#: a goal whose proof term nests 60 deep: coqtop's default printing elides it as ``(...)``
DEEP = "Lemma deep : 0 <= 60.\nAdmitted.\n"


async def _terms_built(
    tmp_path: Path, text: str, script: list[str]
) -> tuple[CoqProver, Goal, list[str], list[str]]:
    """The prover, the goal and prefix of ``text``'s one hole, and the terms ``script``
    builds there (printed as hammer's side session prints them)."""
    (hole,) = scan_coq_text(tmp_path / "Terms.v", text)
    prover = CoqProver(cwd=str(tmp_path))
    codes = prover._prefix_codes(text, hole.prefix_end)
    async with prover.session_at(hole.goal, codes) as side:
        built = await side.run_script(script, side.root, timeout=10)
        assert built.status is TacticStatus.COMPLETE, built.message
        return prover, hole.goal, codes, await printed_terms(side)


async def test_a_deep_proof_term_is_printed_whole_and_reads_back_in_another_session(
    tmp_path: Path,
) -> None:
    prover, goal, codes, terms = await _terms_built(tmp_path, DEEP, ["repeat constructor."])
    try:
        assert terms
        assert all("..." not in t for t in terms), terms
        assert all("\n" not in t for t in terms), terms
        assert terms[0].count("le_S") == 60
        scripts = term_scripts(terms)
        assert scripts[0] == f"exact ({terms[0]})."
        assert term_scripts(terms, max_chars=10) == []
        async with prover.session_at(goal, codes) as session:
            read_back = await session.run_script([scripts[0]], session.root, timeout=10)
            assert read_back.status is TacticStatus.COMPLETE, read_back.message
    finally:
        await prover.aclose()


#: a class instance before the colon (`` `{laws} `` binds ``l``, ``X`` and ``H``): ``l``
#: appears nowhere in the goal, so ``apply`` cannot infer it from the term
INSTANCE = (
    "Class laws (l : nat) (X : Type) := { same : forall x : X, x = x }.\n"
    "Lemma from_laws `{laws} : forall x : X, x = x.\nAdmitted.\n"
)


async def test_a_term_over_a_class_instance_is_applied_to_the_names_it_binds(
    tmp_path: Path,
) -> None:
    script = ["destruct H.", "intros x.", "reflexivity."]
    prover, goal, codes, terms = await _terms_built(tmp_path, INSTANCE, script)
    try:
        assert [leading_binders(t) for t in terms] == [["l", "X", "H"]] * len(terms)
        scripts = term_scripts(terms)
        outcomes = []
        async with prover.session_at(goal, codes) as session:
            for each in scripts:
                tried = await session.run_script([each], session.root, timeout=10)
                outcomes.append((each, tried.status))
        proved = [s for s, status in outcomes if status is TacticStatus.COMPLETE]
        assert proved, outcomes
        # neither exact nor apply of the bare term reads back: only the applied one does
        assert all(s.endswith(") l X H).") for s in proved), proved
    finally:
        await prover.aclose()


def test_the_names_a_term_binds_first() -> None:
    assert leading_binders("(fun (l : level) (X : ops) (H : laws l X) => (fun x => x))") == [
        "l",
        "X",
        "H",
    ]
    assert leading_binders("fun x y (H : @eq nat x y) => eq_sym H") == ["x", "y", "H"]
    assert leading_binders("(fun n m : nat => ((fun H : n = m => H)))") == ["n", "m"]
    # no name to pass back: an anonymous binder, a pattern, or no fun at all
    assert leading_binders("fun _ (x : nat) => x") == []
    assert leading_binders("fun '(a, b) => a") == []
    assert leading_binders("eq_refl") == []
    scripts = term_scripts(["fun x y => eq_refl"])
    assert scripts == [
        "exact ((fun x y => eq_refl) x y).",
        "exact ((fun x y => eq_refl) x).",
        "exact (fun x y => eq_refl).",
        "apply (fun x y => eq_refl).",
    ]


def test_a_long_sentence_is_laid_out_in_lines_at_its_spaces() -> None:
    term = "exact (" + " ".join(f"(le_S 0 {n}" for n in range(60)) + " (le_n 0)" + ")" * 61 + "."
    body = format_script([term], indent="  ")
    lines = body.splitlines()
    assert len(lines) > 1
    assert all(len(line) <= WRAP_WIDTH for line in lines)
    assert lines[0].startswith("  exact (")
    assert lines[1].startswith("    ")
    assert " ".join(body.split()) == term  # only spaces became line breaks
    check_script([body.strip()])  # still one sentence the gate accepts
    # a sentence with a string is left whole: a break inside the string would change it
    quoted = 'idtac "' + "x " * 80 + '"; ' + "auto" + "."
    assert format_script([quoted], indent="  ") == "  " + quoted
