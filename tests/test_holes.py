"""Finding holes and fingerprinting them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from proof_orchestrator.coq.audit import is_parameter
from proof_orchestrator.coq.holes import (
    axiom_names,
    declared_axioms,
    functor_parameters,
    module_axioms,
    module_parameters,
    opened_module,
    scan_coq_file,
    scan_coq_text,
)
from proof_orchestrator.goals import HoleKind

TEXT = """\
Require Import Arith.
(* Lemma fake : False. Admitted. -- inside a comment *)
Definition s := "Lemma fake2 : False. Admitted.".
Lemma done : 1 = 1. Proof. reflexivity. Qed.
Theorem t1 : forall n, n = n.
Proof. intros. admit. Admitted.
Module M.
  Section S.
    Variable A : Type.
    #[local] Fact f1 (x : A) : x = x.
    Proof using A.
    Admitted.
  End S.
End M.
Example e1 : 2 = 2. Admitted.
Definition d : nat. Admitted.
"""


def test_holes_are_lemma_like_and_admitted(write_v: Callable[[str, str], Path]) -> None:
    holes = scan_coq_file(write_v("H.v", TEXT))
    assert [h.goal.name for h in holes] == ["t1", "f1", "e1"]
    assert [h.goal.kind for h in holes] == [HoleKind.ADMIT, HoleKind.ADMITTED, HoleKind.ADMITTED]
    assert [h.goal.line for h in holes] == [5, 10, 15]


def test_sections_and_modules_give_scope_and_qualified_names(
    write_v: Callable[[str, str], Path],
) -> None:
    f1 = scan_coq_file(write_v("H.v", TEXT))[1]
    assert f1.goal.scope == (("module", "M"), ("section", "S"))
    assert f1.goal.qualified_name == "M.f1"
    assert f1.proof_opener == "Proof using A."


def test_patch_span_covers_exactly_the_proof() -> None:
    holes = scan_coq_text(Path("H.v"), TEXT)
    t1 = holes[0]
    assert TEXT[t1.proof_start : t1.proof_end] == "Proof. intros. admit. Admitted."
    e1 = holes[2]
    assert TEXT[e1.proof_start : e1.proof_end] == "Admitted."


def test_fingerprint_ignores_whitespace_and_name_but_not_context() -> None:
    base = scan_coq_text(Path("a.v"), "Lemma a : forall n,  n = n.\nAdmitted.\n")[0].goal
    spaced = scan_coq_text(Path("b.v"), "Lemma b :\n  forall n, n = n.\nAdmitted.\n")[0].goal
    other_ctx = scan_coq_text(
        Path("c.v"), "Require Import Arith.\nLemma a : forall n, n = n.\nAdmitted.\n"
    )[0].goal
    assert base.fingerprint == spaced.fingerprint
    assert base.fingerprint != other_ctx.fingerprint


def test_declared_axioms() -> None:
    assert declared_axioms(
        "Axiom ax : False.\nParameters (p q : nat).\nLemma x : True. Admitted."
    ) == {
        "ax",
        "p",
        "q",
    }


def test_axiom_names_reads_every_form_of_axiom_sentence() -> None:
    assert axiom_names("Axiom ax : False.") == ["ax"]
    assert axiom_names("Axioms a b : nat.") == ["a", "b"]
    assert axiom_names("Parameter (x y : nat) (z : bool).") == ["x", "y", "z"]
    assert axiom_names("#[local] Polymorphic Conjecture c : True.") == ["c"]
    assert axiom_names("Lemma l : True.") == []
    assert declared_axioms("Parameter (x : nat) (y : bool).") == {"x", "y"}


def test_opened_module_tells_modules_from_aliases() -> None:
    assert opened_module("Module M.") == ("M", False)
    assert opened_module("Module Type S.") == ("S", True)
    assert opened_module("Module Import Make(D:T).") == ("Make", False)
    assert opened_module("Module F (M : S) <: S with Module E := M.E.") == ("F", False)
    assert opened_module("Module M := N.") is None
    assert opened_module("Module M (X : T) := N X.") is None
    assert opened_module("Section S.") is None


def test_module_axioms_qualifies_by_module_and_skips_signatures() -> None:
    text = (
        "Axiom top : False.\n"
        "Module Type Sig.\n  Parameter field : nat.\nEnd Sig.\n"
        "Module A.\n  Section S.\n    Axiom inner : True.\n  End S.\n"
        "  Module Alias := B.\n  Parameter p : nat.\nEnd A.\n"
        "Axiom after : True.\n"
    )
    assert module_axioms(text) == {"top", "A.inner", "A.p", "after"}


def test_functor_parameters_are_known_for_each_lemma_in_their_scope() -> None:
    text = (
        "Module Make (O : OrderedType) (P Q : T) <: S.\n"
        "  Lemma a : True. Proof. exact I. Qed.\n"
        "End Make.\n"
        "Module Type Sig.\n  Declare Module N : NAxiomsSig.\n"
        "  Lemma b : True. Proof. exact I. Qed.\nEnd Sig.\n"
        "Lemma c : True. Proof. exact I. Qed.\n"
        "Module Bridge (Import M : S) <: S with Module E := M.E.\n"
        "  Lemma d : True. Proof. exact I. Qed.\nEnd Bridge.\n"
        "Module Alias := Make.\n"
        "Lemma e : True. Proof. exact I. Qed.\n"
    )
    assert module_parameters("Module Import M (Import X : T).") == ["X"]
    assert functor_parameters(text) == {
        "Make.a": frozenset({"O", "P", "Q"}),
        "Sig.b": frozenset({"N"}),
        "Bridge.d": frozenset({"M"}),
    }
    assert is_parameter("O.lt_trans", frozenset({"O"}))
    assert not is_parameter("Classical_Prop.classic", frozenset({"O"}))
    assert not is_parameter("O", frozenset({"O"}))
