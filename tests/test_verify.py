"""Whole-file verification with real coqc and the axiom audit."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from proof_orchestrator.config import load_settings
from proof_orchestrator.coq.audit import library_axiom
from proof_orchestrator.coq.holes import declared_axioms, scan_coq_text
from proof_orchestrator.coq.project import coq_library_roots
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
    path: Path,
    patched: str,
    original: str = ORIGINAL,
    name: str = "target",
    trust_library_axioms: bool = True,
) -> VerificationResult:
    """The verifier's answer on ``patched`` for the lemma ``name`` of ``original``."""
    goal = next(h.goal for h in scan_coq_text(path, original) if h.goal.name == name)
    verifier = CoqVerifier(trust_library_axioms=trust_library_axioms)
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


async def test_an_axiom_a_loaded_library_declares_is_trusted_without_a_finished_proof(
    write_v: Callable[[str, str], Path],
) -> None:
    """No finished proof of the file uses `classic`, but the file loads `Classical`,
    whose source declares it: loading it is the user's trust (a copy of a library
    file with every proof admitted has no finished proof to show it)."""
    original = TRUSTING.format(early="")
    path = write_v("T.v", original)
    assert await _verify_target(path, original, "exact NNPP.") is Verdict.ACCEPTED


async def test_strict_axioms_refuses_a_library_axiom_no_finished_proof_uses(
    write_v: Callable[[str, str], Path],
) -> None:
    """``--strict-axioms``: the old rule, only the file's own finished proofs say what
    it trusts; `classic` is refused, and named, until one of them rests on it."""
    for early, expected in (("", Verdict.NEW_ASSUMPTIONS), (EARLY, Verdict.ACCEPTED)):
        original = TRUSTING.format(early=early)
        path = write_v("T.v", original)
        patched = original.replace(
            "Lemma target : forall P : Prop, ~ ~ P -> P.\nAdmitted.",
            "Lemma target : forall P : Prop, ~ ~ P -> P.\nProof. exact NNPP. Qed.",
        )
        result = await _result(path, patched, original, trust_library_axioms=False)
        assert result.verdict is expected, result.detail
        if expected is Verdict.NEW_ASSUMPTIONS:
            assert any("classic" in entry for entry in result.new_assumptions), result


REALS = """\
Require Import Reals.
Open Scope R_scope.
Lemma target : forall x : R, x <= x.
Admitted.
"""


async def test_a_reals_proof_resting_on_the_reals_axioms_is_accepted(
    write_v: Callable[[str, str], Path],
) -> None:
    """Any proof about `R` rests on `ClassicalDedekindReals.sig_forall_dec` (and most on
    `functional_extensionality_dep`): axioms the Reals declare, so accepted in a file
    with no finished proof (fill refused 19 such proofs of one held-out file)."""
    path = write_v("R.v", REALS)
    patched = REALS.replace(
        "x <= x.\nAdmitted.", "x <= x.\nProof. intros; right; reflexivity. Qed."
    )
    result = await _result(path, patched, REALS, "target")
    assert result.verdict is Verdict.ACCEPTED, result.detail


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
Module Make (O : OrderedType).
  Import O.
  Lemma target : forall x y z, lt x y -> lt y z -> lt x z.
  Admitted.
End Make.
"""


def _importing_patched(body: str, original: str = IMPORTING_FUNCTOR) -> str:
    return original.replace("lt x z.\n  Admitted.", f"lt x z.\n  Proof. {body} Qed.")


async def test_after_import_a_parameters_members_printed_unqualified_are_not_axioms(
    write_v: Callable[[str, str], Path],
) -> None:
    """After `Import O`, `Print Assumptions` prints `lt_trans` unqualified; `Locate` at the
    lemma says it is `O.lt_trans`, the functor's hypothesis (a stdlib functor's proof
    `intros; firstorder using lt_trans` was refused this way)."""
    path = write_v("H.v", IMPORTING_FUNCTOR)
    patched = _importing_patched("intros; eapply lt_trans; eauto.")
    assert await _verify(path, patched, IMPORTING_FUNCTOR) is Verdict.ACCEPTED


async def test_names_printed_short_are_located_by_a_compile_that_skips_the_proofs(
    write_v: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Locating ``lt_trans`` needs the file's names, not its proofs: that second compile
    runs with ``-vos`` (MSetAVL: 1.1 CPU s against 6.4 s for the whole compile), and the
    check still accepts the proof."""
    builds: list[bool] = []
    build = CoqVerifier._build

    async def spy(self, path, text, *, quick=False):  # type: ignore[no-untyped-def]
        builds.append(quick)
        return await build(self, path, text, quick=quick)

    monkeypatch.setattr(CoqVerifier, "_build", spy)
    path = write_v("H.v", IMPORTING_FUNCTOR)
    patched = _importing_patched("intros; eapply lt_trans; eauto.")
    assert await _verify(path, patched, IMPORTING_FUNCTOR) is Verdict.ACCEPTED
    assert builds[0] is False  # the check itself, with the proofs
    assert True in builds[1:], builds  # the names located without them


@pytest.fixture
def cheats(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """An installed library (on ``COQPATH``, outside the test's project folder) whose
    ``cheat`` is an ``Admitted`` lemma: an axiom to ``Print Assumptions``, but no axiom
    its source declares."""
    root = tmp_path_factory.mktemp("coqpath")
    (root / "Cheats").mkdir(parents=True)
    (root / "Cheats" / "Cheat.v").write_text(
        "Lemma cheat : forall P : Prop, P.\nAdmitted.\n", encoding="utf-8"
    )
    subprocess.run(
        ["coqc", "-Q", ".", "Cheats", "Cheat.v"], cwd=root / "Cheats", check=True, timeout=120
    )
    monkeypatch.setenv("COQPATH", str(root))
    coq_library_roots.cache_clear()
    yield
    coq_library_roots.cache_clear()


@pytest.mark.usefixtures("cheats")
async def test_inside_a_functor_a_real_new_axiom_is_still_refused(
    write_v: Callable[[str, str], Path],
) -> None:
    """`Cheat.cheat` is no parameter, no finished proof of the file uses it, and the
    library that has it declares no such axiom (it is an admitted lemma): refused, named."""
    original = IMPORTING_FUNCTOR.replace("Module Make", "Require Cheats.Cheat.\nModule Make")
    path = write_v("H.v", original)
    patched = _importing_patched(
        "intros; destruct (Cheats.Cheat.cheat True); eapply lt_trans; eauto.", original
    )
    goal = next(h.goal for h in scan_coq_text(path, original) if h.goal.name == "target")
    verifier = CoqVerifier()
    try:
        result = await verifier.verify(path, original, patched, [goal], declared_axioms(original))
    finally:
        await verifier.aclose()
    assert result.verdict is Verdict.NEW_ASSUMPTIONS, result.detail
    assert any("cheat" in entry for entry in result.new_assumptions), result.new_assumptions


PRIMITIVES = """\
Require Import ZArith Sint63.
Lemma helper : forall x, of_Z (to_Z x) = x.
Admitted.
Lemma target : forall x, of_Z (to_Z x) = x.
Admitted.
"""


async def test_the_kernels_primitive_integers_are_not_new_axioms(
    write_v: Callable[[str, str], Path],
) -> None:
    """A proof through Sint63's lemmas rests on `PrimInt63.ltb`, `PrimInt63.int`...,
    which `Print Assumptions` lists like axioms: they are the kernel's primitives
    (``Primitive ltb := #int63_ltb.``), trusted as a library's axioms are (fill refused
    10 valid Sint63 proofs of a held-out set for them)."""
    path = write_v("P.v", PRIMITIVES)
    patched = PRIMITIVES.replace(
        "Lemma target : forall x, of_Z (to_Z x) = x.\nAdmitted.",
        "Lemma target : forall x, of_Z (to_Z x) = x.\nProof. exact Sint63.of_to_Z. Qed.",
    )
    result = await _result(path, patched, PRIMITIVES, "target")
    assert result.verdict is Verdict.ACCEPTED, result.detail
    assert library_axiom("Coq.Numbers.Cyclic.Int63.PrimInt63.ltb")


def test_library_axiom_reads_the_axiom_sentences_of_the_librarys_source(tmp_path: Path) -> None:
    theories, contrib = tmp_path / "theories", tmp_path / "user-contrib"
    (theories / "Logic").mkdir(parents=True)
    (theories / "Logic" / "Ax.v").write_text(
        "(* Axiom in_comment : False. *)\n"
        "Axiom top : forall P : Prop, P \\/ ~ P.\n"
        "Axioms (a b : nat) (c : bool).\n"
        "Lemma admitted : False.\nAdmitted.\n"
        "Module Type Sig.\n  Parameter signature_only : nat.\nEnd Sig.\n"
        "Module Inner.\n  Local Axiom nested : True.\nEnd Inner.\n",
        encoding="utf-8",
    )
    (contrib / "Lib").mkdir(parents=True)
    (contrib / "Lib" / "L.v").write_text("Parameter lib_param : Type.\n", encoding="utf-8")
    roots = ((theories, "Coq"), (contrib, ""))
    for name in ("top", "a", "b", "c", "Inner.nested"):
        assert library_axiom(f"Coq.Logic.Ax.{name}", roots), name
    assert library_axiom("Lib.L.lib_param", roots)
    for name in ("in_comment", "admitted", "Sig.signature_only", "nested", "absent"):
        assert not library_axiom(f"Coq.Logic.Ax.{name}", roots), name
    assert not library_axiom("Coq.Logic.Missing.top", roots)
    assert not library_axiom("top", roots)


CONSTRAINED_FUNCTOR = """\
Require Import Coq.Structures.OrderedType.
Module Type S.
  Declare Module E : OrderedType.
End S.
Module Make (Import M : S) <: S with Module E := M.E.
  Lemma target : forall x y z, E.lt x y -> E.lt y z -> E.lt x z.
  Admitted.
  Module E := M.E.
End Make.
"""


async def test_a_functor_constrained_with_a_module_equation_keeps_its_parameters(
    write_v: Callable[[str, str], Path],
) -> None:
    """`Module Make (Import M : S) <: S with Module E := M.E.` opens a functor (its `:=`
    is the constraint's); `E.lt_trans` is the parameter's `M.E.lt_trans`, printed through
    `Import M`: a hypothesis, not an axiom (a stdlib bridge functor's proof was refused)."""
    path = write_v("B.v", CONSTRAINED_FUNCTOR)
    patched = CONSTRAINED_FUNCTOR.replace(
        "E.lt x z.\n  Admitted.", "E.lt x z.\n  Proof. intros; eapply E.lt_trans; eauto. Qed."
    )
    result = await _result(path, patched, CONSTRAINED_FUNCTOR, "target")
    assert result.verdict is Verdict.ACCEPTED, result.detail


async def test_strict_axioms_reaches_the_coq_verifier_from_flag_and_environment(
    tmp_path: Path,
) -> None:
    """``--strict-axioms`` (or ``ORCH_STRICT_AXIOMS``) turns off the verifier's trust
    in library axioms; by default it is on."""
    from proof_orchestrator.cli.common import fill_options
    from proof_orchestrator.coq.backend import CoqBackend
    from proof_orchestrator.run.toolbox import tool_settings

    path = tmp_path / "A.v"
    path.write_text("Lemma a : True.\nAdmitted.\n", encoding="utf-8")
    for flags, environ, trusted in (
        ({}, {}, True),
        ({"strict_axioms": True}, {}, False),
        ({}, {"ORCH_STRICT_AXIOMS": "1"}, False),
    ):
        settings, _ = load_settings(tmp_path, flags, environ)
        tools = CoqBackend().tools(path, tool_settings(fill_options(settings)))
        try:
            assert tools.verifier.trust_library_axioms is trusted, (flags, environ)
        finally:
            await tools.aclose()


async def test_a_library_compiled_again_by_another_process_is_built_against_again(
    tmp_path: Path,
) -> None:
    """``orch bg`` recompiles a project file while ``orch mcp`` checks a proof: the
    original text built earlier was compiled against the old ``.vo`` and no longer loads
    ("inconsistent assumptions"); the check builds again and accepts the true proof
    (the soak's MCP round refused the published proof with "cannot load")."""
    (tmp_path / "A.v").write_text("Definition one := 1.\n")
    original = "Require Import P.A.\nLemma target : one = 1.\nAdmitted.\n"
    path = tmp_path / "B.v"
    path.write_text(original)
    flags = ["-Q", str(tmp_path), "P"]

    def compile_a() -> None:
        subprocess.run(["coqc", *flags, str(tmp_path / "A.v")], check=True)

    compile_a()
    verifier = CoqVerifier(flags, cwd=str(tmp_path))
    try:
        (goal,) = [h.goal for h in scan_coq_text(path, original)]
        assert (await verifier.compiles(path, original))[0]
        (tmp_path / "A.v").write_text("Definition one := 1.\nDefinition two := 2.\n")
        compile_a()  # another process rebuilt it
        patched = original.replace("Admitted.", "Proof. reflexivity. Qed.")
        result = await verifier.verify(path, original, patched, [goal])
        assert result.verdict is Verdict.ACCEPTED, result.detail
    finally:
        await verifier.aclose()
