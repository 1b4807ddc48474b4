"""Which open hole each checked proof rests on, read from printed terms (issue 54: a
check at the cost of a compile, however many proofs it holds)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from proof_orchestrator.coq.attribution import (
    attribute_holes,
    declarations,
    declares_type_family,
    namespace_entries,
)
from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.inline_audit import Trace, plan_audit
from proof_orchestrator.coq.syntax import one_sentence, split_sentences
from proof_orchestrator.coq.verify import CoqVerifier
from proof_orchestrator.provers.base import Verdict

ROOT = ("OrchCheck", "F")


def test_the_namespace_lists_constants_by_their_names_in_the_file() -> None:
    output = "OrchCheck.F:\n\nh: (forall n : nat, n * 1 = n)\nM.x: (1 = 1)\nbig:\n  (1 = 1)\n"
    assert namespace_entries(output) == {"h", "M.x", "big"}


def test_a_hole_is_found_through_the_lemmas_between() -> None:
    printed = {
        "g": "g = proj1 mid\n     : 2 = 2",
        "mid": "mid = conj eq_refl (h1)\n     : and (2 = 2) (1 = 1)",
        "g2": "g2 = @eq_refl nat (S O) : 1 = 1",
    }
    entries = frozenset({"h1", "mid", "g", "g2", "early"})
    found = attribute_holes(
        ["g", "g2"], printed, entries, frozenset({"early"}), frozenset({"h1"}), ROOT
    )
    assert found.uses == {"g": frozenset({"h1"}), "g2": frozenset()}
    assert not found.unresolved


def test_what_cannot_be_read_is_left_to_print_assumptions() -> None:
    """A constant of the file reached but not printed (a definition), or printed without
    its body (a sealed module's lemma): the proof is not read."""
    printed = {
        "a": "a = d + 0 : nat",
        "b": "b = M.x : 1 = 1",
        "M.x": "*** [ M.x : 1 = 1 ]",
        "c": "c = early : True",
    }
    entries = frozenset({"a", "b", "c", "d", "M.x", "early", "h"})
    found = attribute_holes(
        ["a", "b", "c"], printed, entries, frozenset({"early"}), frozenset({"h"}), ROOT
    )
    assert found.unresolved == {"a", "b"}
    # a constant declared before the first open hole rests on none: not followed
    assert found.uses == {"c": frozenset()}


def test_a_name_is_read_as_every_constant_it_can_name() -> None:
    """``M.h`` and ``F.M.h`` name the module's ``h``; ``N.h`` does not; a short ``h``
    may be either (more holes, never fewer)."""
    entries = frozenset({"M.h", "N.h"})
    holes = frozenset({"M.h", "N.h"})
    for text, expected in (
        ("p = F.M.h : T", {"M.h"}),
        ("p = M.h : T", {"M.h"}),
        ("p = h : T", {"M.h", "N.h"}),
        ("p = OrchCheck.F.N.h : T", {"N.h"}),
        ("p = X.M.h : T", set()),
    ):
        found = attribute_holes(["p"], {"p": text}, entries, frozenset(), holes, ROOT)
        assert found.uses["p"] == expected, text


@pytest.mark.parametrize(
    ("code", "family"),
    [
        ("Inductive T : Prop := c : T.", True),
        ("#[local] Record R := { f : nat }.", True),
        ("Local CoInductive S := s : S -> S.", True),
        ("Class C := { m : nat }.", True),
        ("Module N := Make M.", True),
        ("Include Sig.", True),
        ("Lemma x : True.", False),
        ("Definition d := 3.", False),
        ("Module M.", False),
    ],
)
def test_what_a_printed_term_does_not_show_is_recognised(code: str, family: bool) -> None:
    assert declares_type_family(one_sentence(code)) is family


FILE = """\
Lemma early : 0 = 0.
Proof. reflexivity. Qed.
Lemma h1 : 1 = 1.
Admitted.
Lemma mid : 2 = 2 /\\ 1 = 1.
Proof. split; [reflexivity | apply h1]. Qed.
Lemma g1 : 2 = 2.
Admitted.
Lemma g2 : 3 = 3.
Admitted.
Lemma g3 : 1 = 1.
Admitted.
Module Type Sig. Parameter x : 1 = 1. End Sig.
Module M : Sig. Lemma x : 1 = 1. Proof. exact h1. Qed. End M.
Lemma g4 : 1 = 1.
Admitted.
Inductive box : Prop := wrap : 1 = 1 -> box.
Lemma g5 : box.
Admitted.
"""

PROOFS = {
    "g1": "Proof. exact (proj1 mid). Qed.",
    "g2": "Proof. reflexivity. Qed.",
    "g3": "Proof. exact (eq_trans h1 early_one). Qed.",
    "g4": "Proof. exact M.x. Qed.",
    "g5": "Proof. exact (wrap h1). Qed.",
}


def _patched(names: list[str]) -> str:
    text = FILE.replace("Lemma g1", "Lemma early_one : 1 = 1.\nProof. reflexivity. Qed.\nLemma g1")
    for name in names:
        statement = next(line for line in text.splitlines() if line.startswith(f"Lemma {name} "))
        text = text.replace(f"{statement}\nAdmitted.", f"{statement}\n{PROOFS[name]}")
    return text


async def _check(
    write_v: Callable[[str, str], Path], names: list[str]
) -> tuple[dict[str, list[str]], CoqVerifier, list[str]]:
    original = FILE.replace(
        "Lemma g1", "Lemma early_one : 1 = 1.\nProof. reflexivity. Qed.\nLemma g1"
    )
    path = write_v("F.v", original)
    goals = [h.goal for h in scan_coq_text(path, original) if h.goal.name in names]
    verifier = CoqVerifier()
    texts: list[str] = []
    build = verifier._build

    async def recorded(file: Path, text: str, *, quick: bool = False):  # type: ignore[no-untyped-def]
        texts.append(text)
        return await build(file, text, quick=quick)

    verifier._build = recorded  # type: ignore[method-assign]
    try:
        result = await verifier.verify(path, original, _patched(names), goals)
    finally:
        await verifier.aclose()
    assert result.verdict is Verdict.ACCEPTED, result.detail
    uses = {name: [use.label for use in found] for name, found in result.holes_used.items()}
    return uses, verifier, texts


async def test_one_walk_tells_which_proof_uses_which_open_hole(
    write_v: Callable[[str, str], Path],
) -> None:
    """Three proofs, one through a finished lemma to the open hole ``h1``, one closed,
    one naming it: one compile, one ``Print Assumptions`` (of their union)."""
    uses, verifier, texts = await _check(write_v, ["g1", "g2", "g3"])
    assert uses == {"g1": ["h1"], "g3": ["h1"]}
    assert verifier.compilations == 1
    assert texts[0].count("Print Assumptions") == 1


async def test_a_sealed_module_sends_the_proofs_after_it_to_their_own_walk(
    write_v: Callable[[str, str], Path],
) -> None:
    """``M`` is sealed by its signature: outside it ``M.x`` prints without its proof
    (which uses ``h1``) and its other members are not listed, so the proofs after it are
    asked on their own; the hole is still found."""
    uses, verifier, _ = await _check(write_v, ["g2", "g4"])
    assert uses == {"g4": ["h1"]}
    assert verifier.compilations == 2


async def test_a_proof_after_a_type_family_gets_its_own_walk(
    write_v: Callable[[str, str], Path],
) -> None:
    """After ``Inductive box`` (a constructor's type is never printed with the terms
    that use it), the proof is asked on its own: one more compile, the hole found."""
    uses, verifier, texts = await _check(write_v, ["g2", "g5"])
    assert uses == {"g5": ["h1"]}
    assert verifier.compilations == 2
    assert "Print Assumptions OrchCheck.F.g5." in texts[-1]


# Ways a printed term hides what a proof rests on (found by a review, each confirmed
# with Coq 8.16: ``Print Assumptions`` of the proof lists ``h``). The check must still
# report ``h`` for every proof: read at the end of the file, or asked on its own.
HIDDEN = {
    "section variable and Let": (
        """\
Lemma h : 1 = 1.
Admitted.
Definition d : nat := let _ := h in 0.
Section S.
Variable H : d = 0.
Lemma g : True.
Admitted.
Let l : 1 = 1 := h.
Lemma g2 : 1 = 1.
Admitted.
End S.
""",
        {"g": "Proof using H. exact I. Qed.", "g2": "Proof. exact l. Qed."},
    ),
    "sealed module's unlisted member": (
        """\
Lemma h : 1 = 1.
Admitted.
Module Type Sig. Parameter x : 1 = 1. End Sig.
Module M : Sig.
Fixpoint ev (n : nat) : bool := match n with 0 => true | S m => od m end
with od (n : nat) : bool := match n with 0 => let _ := h in false | S m => ev m end.
Lemma x : 1 = 1.
Admitted.
End M.
Lemma g : 1 = 1.
Admitted.
""",
        {"M.x": "Proof. exact (let _ := od 0 in eq_refl). Qed.", "g": "Proof. exact M.x. Qed."},
    ),
    "functor applied at a qualified signature": (
        """\
Module Type T. Parameter q : Prop. End T.
Module F (X : T). Inductive w : Prop := mk : X.q -> w. End F.
Module Q. Module Type Empty. End Empty. End Q.
Lemma h : 1 = 1.
Admitted.
Module A. Definition q : Prop := let _ := h in True. End A.
Module N <: Q.Empty := F A.
Lemma g : N.w.
Admitted.
""",
        {"g": "Proof. exact (N.mk I). Qed."},
    ),
    "Function's inductive graph": (
        """\
Require Import FunInd.
Lemma h : 1 = 1.
Admitted.
Definition c : nat := let _ := h in 0.
Function f (n : nat) : nat := match n with 0 => 0 | S m => if Nat.eqb c 0 then 0 else 1 end.
Lemma g : R_f 1 0.
Admitted.
""",
        {"g": "Proof. econstructor; reflexivity. Qed."},
    ),
}


@pytest.mark.parametrize("case", sorted(HIDDEN))
async def test_a_hole_hidden_from_the_printed_term_is_still_found(
    write_v: Callable[[str, str], Path], case: str
) -> None:
    original, proofs = HIDDEN[case]
    path = write_v("F.v", original)
    patched = original
    for name, proof in proofs.items():
        short = name.rsplit(".", 1)[-1]
        statement = next(
            line for line in patched.splitlines() if line.startswith(f"Lemma {short} ")
        )
        patched = patched.replace(f"{statement}\nAdmitted.", f"{statement}\n{proof}", 1)
    goals = [h.goal for h in scan_coq_text(path, original) if h.goal.qualified_name in proofs]
    verifier = CoqVerifier()
    try:
        result = await verifier.verify(path, original, patched, goals)
    finally:
        await verifier.aclose()
    assert result.verdict is Verdict.ACCEPTED, result.detail
    uses = {name: [use.label for use in found] for name, found in result.holes_used.items()}
    assert uses == {name: ["h"] for name in proofs}


RELATIONS = """\
Require Import Setoid.
Lemma h : 1 = 1.
Admitted.
Definition R (a b : nat) : Prop := a = b.
Lemma R_refl : forall a, R a a.
Proof. intro a. exact (let _ := h in eq_refl). Qed.
Lemma R_sym : forall a b, R a b -> R b a.
Proof. intros a b e. symmetry. exact e. Qed.
Lemma R_trans : forall a b c, R a b -> R b c -> R a c.
Proof. intros a b c e f. unfold R in *. rewrite e. exact f. Qed.
Add Relation nat R reflexivity proved by R_refl symmetry proved by R_sym
  transitivity proved by R_trans as R_rel.
Add Parametric Relation : nat R reflexivity proved by R_refl as R_pre.
Lemma g : R 2 2.
Admitted.
"""


async def test_the_instances_a_relation_makes_are_read_in_one_compile(
    write_v: Callable[[str, str], Path],
) -> None:
    """``reflexivity`` proves ``g`` through ``R_rel_Reflexive``, which ``Add Relation``
    made and whose body uses the hole ``h``: its term is printed with the others (one
    compile; a ConstructiveCauchyReals check took two without it)."""
    path = write_v("F.v", RELATIONS)
    patched = RELATIONS.replace(
        "Lemma g : R 2 2.\nAdmitted.", "Lemma g : R 2 2.\nProof. reflexivity. Qed."
    )
    names = [d.name for d in declarations(split_sentences(RELATIONS))]
    assert {"R_rel", "R_rel_Reflexive", "R_rel_Symmetric", "R_rel_Transitive"} <= set(names)
    assert {"R_rel_relation", "R_pre_Reflexive", "R_pre_relation"} <= set(names)
    assert "R_pre" not in names  # reflexivity alone makes no PreOrder
    goals = [h.goal for h in scan_coq_text(path, RELATIONS) if h.goal.name == "g"]
    verifier = CoqVerifier()
    try:
        result = await verifier.verify(path, RELATIONS, patched, goals)
    finally:
        await verifier.aclose()
    assert result.verdict is Verdict.ACCEPTED, result.detail
    assert [use.label for use in result.holes_used["g"]] == ["h"]
    assert verifier.compilations == 1


async def test_an_error_on_a_line_the_trace_wrote_on_is_the_proofs_own(
    write_v: Callable[[str, str], Path],
) -> None:
    """The proof of ``g2`` does not end (``Qed`` on the line where its term is printed):
    the check says so in one compile, at that line, and does not blame the trace."""
    original = FILE.replace(
        "Lemma g1", "Lemma early_one : 1 = 1.\nProof. reflexivity. Qed.\nLemma g1"
    )
    path = write_v("F.v", original)
    patched = original.replace(
        "Lemma g2 : 3 = 3.\nAdmitted.", "Lemma g2 : 3 = 3.\nProof. idtac. Qed."
    )
    goals = [h.goal for h in scan_coq_text(path, original) if h.goal.name == "g2"]
    verifier = CoqVerifier()
    try:
        result = await verifier.verify(path, original, patched, goals)
    finally:
        await verifier.aclose()
    assert result.verdict is Verdict.DOES_NOT_COMPILE
    assert result.error_line == patched.splitlines().index("Proof. idtac. Qed.") + 1
    assert verifier.compilations == 1


def test_a_trace_command_is_found_by_the_bytes_coqc_reports(tmp_path: Path) -> None:
    """coqc reports an error's place in bytes; the trace's commands are found by them
    after a multibyte character on the same line."""
    text = "Lemma h : True.\nAdmitted.\nDefinition d := fun (λ : nat) => λ.\n"
    path = tmp_path / "U.v"
    (declared,) = declarations(split_sentences(text))
    plan = plan_audit(path, text, trace=Trace(0, [declared]))
    line = plan.text.splitlines()[2]
    at = line.encode().index(b"Print d.")
    command = plan.traced_at(3, at)
    assert command is not None
    assert command.prints == "d"
    assert plan.traced_at(3, line.encode().index(b"fun")) is None
