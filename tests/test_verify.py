"""Whole-file verification with real coqc and the axiom audit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from proof_orchestrator.coq.holes import declared_axioms, scan_coq_text
from proof_orchestrator.coq.verify import CoqVerifier, parse_assumptions
from proof_orchestrator.provers.base import Verdict, VerificationResult

ORIGINAL = """\
Axiom my_ax : forall P : Prop, P \\/ ~ P.
Lemma helper : 2 = 2.
Admitted.
Lemma target : 1 = 1 /\\ 2 = 2.
Admitted.
"""


def _patched(body: str, extra_before: str = "") -> str:
    return ORIGINAL.replace("Lemma target", extra_before + "Lemma target").replace(
        "Lemma target : 1 = 1 /\\ 2 = 2.\nAdmitted.",
        f"Lemma target : 1 = 1 /\\ 2 = 2.\nProof. {body} Qed.",
    )


async def _result(
    path: Path, patched: str, original: str = ORIGINAL, name: str = "target"
) -> VerificationResult:
    """The verifier's answer on ``patched`` for the lemma ``name`` of ``original``."""
    goal = next(h.goal for h in scan_coq_text(path, original) if h.goal.name == name)
    verifier = CoqVerifier()
    try:
        return await verifier.verify(path, original, patched, [goal], declared_axioms(original))
    finally:
        await verifier.aclose()


async def _verify(
    path: Path, patched: str, original: str = ORIGINAL, name: str = "target"
) -> Verdict:
    """The verdict on ``patched`` for the lemma ``name`` of ``original``."""
    return (await _result(path, patched, original, name)).verdict


async def test_clean_proof_is_accepted(write_v: Callable[[str, str], Path]) -> None:
    path = write_v("V.v", ORIGINAL)
    assert await _verify(path, _patched("split; reflexivity.")) is Verdict.ACCEPTED


async def test_proof_using_another_admitted_lemma_is_accepted_modulo_that_hole(
    write_v: Callable[[str, str], Path],
) -> None:
    path = write_v("V.v", ORIGINAL)
    result = await _result(path, _patched("split; [reflexivity | exact helper]."))
    assert result.verdict is Verdict.ACCEPTED
    assert [use.label for use in result.holes_used["target"]] == ["helper"]


async def test_axiom_declared_by_the_file_is_allowed(write_v: Callable[[str, str], Path]) -> None:
    path = write_v("V.v", ORIGINAL)
    body = "destruct (my_ax (1 = 1)); split; reflexivity."
    assert await _verify(path, _patched(body)) is Verdict.ACCEPTED


async def test_disabled_guard_checking_is_caught_by_the_audit(
    write_v: Callable[[str, str], Path],
) -> None:
    path = write_v("V.v", ORIGINAL)
    trick = (
        "Unset Guard Checking.\nFixpoint loop (n : nat) : False := loop n.\nSet Guard Checking.\n"
    )
    patched = _patched("destruct (loop 0).", extra_before=trick)
    assert await _verify(path, patched) is Verdict.NEW_ASSUMPTIONS


async def test_proof_that_does_not_compile_is_rejected(write_v: Callable[[str, str], Path]) -> None:
    path = write_v("V.v", ORIGINAL)
    assert await _verify(path, _patched("reflexivity.")) is Verdict.DOES_NOT_COMPILE


def test_parse_assumptions_ignores_messages_and_keeps_unsafe_flags() -> None:
    output = (
        "<infomsg>\nFetching opaque proofs from disk for Coq.Arith.PeanoNat\n</infomsg>\n"
        "Axioms:\nFoo.ax : forall P : Prop,\n         P\nFoo.f is assumed to be guarded.\n"
    )
    assert parse_assumptions(output) == {"Foo.ax", "Foo.f is assumed to be guarded."}
    assert parse_assumptions("Closed under the global context") == frozenset()


TRUSTING = """\
Require Import Classical.
{early}
Lemma helper : 2 = 2.
Admitted.
Lemma leans_on_helper : 2 = 2.
Proof. exact helper. Qed.
Lemma target : forall P : Prop, ~ ~ P -> P.
Admitted.
"""
EARLY = "Lemma early : forall P : Prop, P \\/ ~ P.\nProof. exact classic. Qed."


async def _verify_target(path: Path, original: str, body: str) -> Verdict:
    patched = original.replace(
        "Lemma target : forall P : Prop, ~ ~ P -> P.\nAdmitted.",
        f"Lemma target : forall P : Prop, ~ ~ P -> P.\nProof. {body} Qed.",
    )
    return await _verify(path, patched, original)


async def test_a_library_axiom_the_files_finished_proofs_use_is_trusted(
    write_v: Callable[[str, str], Path],
) -> None:
    """`classic` is in the file's trust base once one of its Qed proofs rests on it."""
    original = TRUSTING.format(early=EARLY)
    path = write_v("T.v", original)
    assert await _verify_target(path, original, "exact NNPP.") is Verdict.ACCEPTED


async def test_a_library_axiom_no_finished_proof_uses_is_new(
    write_v: Callable[[str, str], Path],
) -> None:
    original = TRUSTING.format(early="")
    path = write_v("T.v", original)
    assert await _verify_target(path, original, "exact NNPP.") is Verdict.NEW_ASSUMPTIONS


async def test_a_hole_used_by_a_finished_proof_is_not_trusted(
    write_v: Callable[[str, str], Path],
) -> None:
    """`leans_on_helper` rests on the hole `helper`: that does not let a new proof use it
    silently: the proof is closed modulo `helper`, named as such."""
    original = TRUSTING.format(early=EARLY)
    path = write_v("T.v", original)
    patched = original.replace(
        "Lemma target : forall P : Prop, ~ ~ P -> P.\nAdmitted.",
        "Lemma target : forall P : Prop, ~ ~ P -> P.\n"
        "Proof. pose proof helper as h; exact NNPP. Qed.",
    )
    result = await _result(path, patched, original)
    assert result.verdict is Verdict.ACCEPTED
    assert [use.label for use in result.holes_used["target"]] == ["helper"]


FUNCTOR = """\
Require Import Coq.Structures.OrderedType.
Module Make (O : OrderedType).
  Lemma helper : forall x y z, O.lt x y -> O.lt y z -> O.lt x z.
  Admitted.
  Lemma target : forall x y z, O.lt x y -> O.lt y z -> O.lt x z.
  Admitted.
End Make.
"""


def _functor_patched(body: str) -> str:
    return FUNCTOR.replace(
        "O.lt x z.\n  Admitted.\nEnd Make.", f"O.lt x z.\n  Proof. {body} Qed.\nEnd Make."
    )


async def test_inside_a_functor_the_parameters_are_not_new_axioms(
    write_v: Callable[[str, str], Path],
) -> None:
    """Print Assumptions cannot name a functor's lemma from outside; it is audited in place,
    and what it uses of the parameter ``O`` is the functor's hypothesis, not an axiom."""
    path = write_v("F.v", FUNCTOR)
    patched = _functor_patched("intros; eapply O.lt_trans; eauto.")
    assert await _verify(path, patched, FUNCTOR) is Verdict.ACCEPTED


async def test_inside_a_functor_another_hole_is_named(
    write_v: Callable[[str, str], Path],
) -> None:
    path = write_v("F.v", FUNCTOR)
    result = await _result(path, _functor_patched("exact helper."), FUNCTOR)
    # audited in place, and named by its qualified name, as the file's holes are
    assert result.verdict is Verdict.ACCEPTED
    assert [use.name for use in result.holes_used["Make.target"]] == ["Make.helper"]


SECTIONED_FUNCTOR = """\
Require Import Coq.Structures.OrderedType.
Module Make(O : OrderedType).
  Section S.
  Variables a b c : O.t.
  Hypothesis ab : O.lt a b.
  Hypothesis bc : O.lt b c.
  Lemma target : O.lt a c.
  Admitted.
  End S.
End Make.
"""


async def test_inside_a_functors_section_the_section_variables_are_not_new_axioms(
    write_v: Callable[[str, str], Path],
) -> None:
    """`Module Make(O : …)` (no space) is still a functor; in place, `Print Assumptions`
    lists the section's variables, which are the section's hypotheses."""
    path = write_v("G.v", SECTIONED_FUNCTOR)
    patched = SECTIONED_FUNCTOR.replace(
        "O.lt a c.\n  Admitted.", "O.lt a c.\n  Proof. eapply O.lt_trans; eauto. Qed."
    )
    assert await _verify(path, patched, SECTIONED_FUNCTOR) is Verdict.ACCEPTED


IMPORTING_FUNCTOR = """\
Require Import Coq.Structures.OrderedType.
Require Coq.Logic.Classical_Prop.
Module Make (O : OrderedType).
  Import O.
  Lemma target : forall x y z, lt x y -> lt y z -> lt x z.
  Admitted.
End Make.
"""


def _importing_patched(body: str) -> str:
    return IMPORTING_FUNCTOR.replace("lt x z.\n  Admitted.", f"lt x z.\n  Proof. {body} Qed.")


async def test_after_import_a_parameters_members_printed_unqualified_are_not_axioms(
    write_v: Callable[[str, str], Path],
) -> None:
    """After `Import O`, `Print Assumptions` prints `lt_trans` unqualified; `Locate` at the
    lemma says it is `O.lt_trans`, the functor's hypothesis (a stdlib functor's proof
    `intros; firstorder using lt_trans` was refused this way)."""
    path = write_v("H.v", IMPORTING_FUNCTOR)
    patched = _importing_patched("intros; eapply lt_trans; eauto.")
    assert await _verify(path, patched, IMPORTING_FUNCTOR) is Verdict.ACCEPTED


async def test_inside_a_functor_a_real_new_axiom_is_still_refused(
    write_v: Callable[[str, str], Path],
) -> None:
    """`classic` is no parameter and no finished proof of the file uses it: refused, named."""
    path = write_v("H.v", IMPORTING_FUNCTOR)
    patched = _importing_patched(
        "intros; destruct (Coq.Logic.Classical_Prop.classic True); eapply lt_trans; eauto."
    )
    goal = next(h.goal for h in scan_coq_text(path, IMPORTING_FUNCTOR) if h.goal.name == "target")
    verifier = CoqVerifier()
    try:
        result = await verifier.verify(
            path, IMPORTING_FUNCTOR, patched, [goal], declared_axioms(IMPORTING_FUNCTOR)
        )
    finally:
        await verifier.aclose()
    assert result.verdict is Verdict.NEW_ASSUMPTIONS, result.detail
    assert any("classic" in entry for entry in result.new_assumptions), result.new_assumptions
