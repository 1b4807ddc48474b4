"""What a goal learns from (:mod:`proof_orchestrator.coq.learning`), and the strategies that
use it (analogy, rewrite chains), with the real ``coqc`` and ``coqtop``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from proof_orchestrator.coq.display import COQ
from proof_orchestrator.coq.learning import Learning, Visible, loaded_libraries
from proof_orchestrator.coq.strategies.analogy import (
    AnalogyStrategy,
    adapted_scripts,
    name_morph,
    rename,
    segment_pairs,
    token_map,
)
from proof_orchestrator.coq.strategies.lemma_search import plain_goal
from proof_orchestrator.coq.strategies.rewriting import (
    RewriteStrategy,
    _intros_any,
    _opening,
    rewrite_names,
)
from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.learn import Corpus, FoundProofs, ProofCache, ProofExample

from .hole_sessions import run_at_hole

OPS = """\
From Coq Require Import Bool.
Definition op1 (a b : bool) := andb a b.
Definition op2 (a b : bool) := orb a b.
Lemma op1_def : forall a b, op1 a b = andb a b. Proof. reflexivity. Qed.
Lemma op2_def : forall a b, op2 a b = orb a b. Proof. reflexivity. Qed.
Lemma op1_comm : forall a b, op1 a b = op1 b a.
Proof. intros a b; rewrite !op1_def; apply andb_comm. Qed.
"""
#: the library file whose copy, with a hole, is a project file: its proof must stay unseen
HIDDEN = """\
Lemma hidden_twice : forall n : nat, n + n = 2 * n.
Proof. intros n; simpl; rewrite <- plus_n_O; reflexivity. Qed.
"""


def _compile(root: Path, name: str, text: str) -> None:
    (root / "lib").mkdir(exist_ok=True)
    (root / "lib" / f"{name}.v").write_text(text, encoding="utf-8")
    subprocess.run(
        ["coqc", "-Q", "lib", "Lib", f"lib/{name}.v"], cwd=root, check=True, capture_output=True
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    _compile(tmp_path, "Ops", OPS)
    _compile(tmp_path, "Hidden", HIDDEN)
    return tmp_path


_run = run_at_hole


def _goal_file(root: Path, text: str) -> Path:
    path = root / "Goal.v"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_learns_from_what_it_imports_and_never_from_what_it_does_not_load(
    project: Path,
) -> None:
    # a copy of Lib.Hidden with its lemma as a hole: the copy loads Lib.Ops only
    path = _goal_file(
        project,
        "Require Import Lib.Ops.\n"
        "Lemma twice_first : forall n : nat, n + 0 = n. Proof. auto. Qed.\n"
        + HIDDEN.replace(
            "Proof. intros n; simpl; rewrite <- plus_n_O; reflexivity. Qed.", "Proof.\nAdmitted."
        ),
    )
    learning = Learning(ProofCache(project / "cache"))

    async def visible(session, goal):  # type: ignore[no-untyped-def]
        return await loaded_libraries(session), await learning.visible(session)

    modules, seen = _run(visible, path, "hidden_twice", project)
    assert "Lib.Ops" in modules
    assert "Lib.Hidden" not in modules
    names = {e.name for e in seen.library.examples}
    assert {"op1_def", "op2_def", "op1_comm"} <= names  # the imported project file
    assert "andb_comm" in names  # a library its session loads (Coq.Bool.Bool)
    assert "hidden_twice" not in names  # the original of the copy is not loaded
    assert [e.name for e in seen.local.examples] == ["twice_first"]  # its file, above it
    near = seen.nearest("Lemma hidden_twice : forall n : nat, n + n = 2 * n.", 50)
    assert near
    assert all(e.name != "hidden_twice" for _, e in near)


def test_a_copy_never_learns_from_its_original_even_when_something_loads_it(
    project: Path,
) -> None:
    # the copy is named as its original and something (here the copy itself) loads the
    # original: its proofs are still never seen
    (project / "copy").mkdir()
    path = project / "copy" / "Hidden.v"
    path.write_text(
        "Require Import Lib.Ops Lib.Hidden.\n"
        + HIDDEN.replace(
            "Proof. intros n; simpl; rewrite <- plus_n_O; reflexivity. Qed.", "Proof.\nAdmitted."
        ),
        encoding="utf-8",
    )
    learning = Learning(ProofCache(project / "cache"))

    async def visible(session, goal):  # type: ignore[no-untyped-def]
        return await loaded_libraries(session), await learning.visible(session)

    modules, seen = _run(visible, path, "hidden_twice", project)
    assert "Lib.Hidden" in modules
    assert "Lib.Hidden" not in seen.modules
    assert "hidden_twice" not in {e.name for e in seen.library.examples}
    assert "op1_comm" in {e.name for e in seen.library.examples}


def test_mined_modules_are_cached_per_version_and_mined_again_when_changed(
    project: Path,
) -> None:
    path = _goal_file(project, "Require Import Lib.Ops.\nLemma g : True.\nProof.\nAdmitted.\n")
    cache = ProofCache(project / "cache")

    def visible(learning: Learning):  # type: ignore[no-untyped-def]
        async def inner(session, goal):  # type: ignore[no-untyped-def]
            return await learning.visible(session)

        return inner

    first = Learning(cache)
    _run(visible(first), path, "g", project)
    assert first.stats.modules_mined > 10
    assert first.stats.modules_cached == 0
    warm = Learning(ProofCache(project / "cache"))
    _run(visible(warm), path, "g", project)
    assert warm.stats.modules_mined == 0
    assert warm.stats.modules_cached == first.stats.modules_mined

    # a changed library file (another source, another .vo) is mined again, alone
    _compile(
        project,
        "Ops",
        OPS + "Lemma op2_comm' : forall a b, op2 a b = op2 b a.\n"
        "Proof. intros; apply orb_comm. Qed.\n",
    )
    again = Learning(ProofCache(project / "cache"))
    seen = _run(visible(again), path, "g", project)
    assert again.stats.modules_mined == 1
    assert "op2_comm'" in {e.name for e in seen.library.examples}


def _adapted(neighbour: ProofExample):  # type: ignore[no-untyped-def]
    """At a hole: ``neighbour``'s proof adapted to the goal, and the analogy strategy's
    result there."""

    async def adapted(session, goal):  # type: ignore[no-untyped-def]
        plain = await plain_goal(session)
        scripts = await adapted_scripts(session, plain.conclusion, goal.statement, neighbour)
        return scripts, await AnalogyStrategy().prove(session, goal, Budget(10, 2, 1))

    return adapted


def test_an_analogy_carries_names_over_and_the_prover_checks_it(project: Path) -> None:
    path = _goal_file(
        project,
        "From Coq Require Import Bool.\nRequire Import Lib.Ops.\n"
        "Lemma op2_comm : forall a b, op2 a b = op2 b a.\nProof.\nAdmitted.\n"
        "Lemma op2_wrong : forall a b, op2 a b = op1 b a.\nProof.\nAdmitted.\n",
    )

    adapted = _adapted(
        ProofExample(
            "op1_comm",
            "Lemma op1_comm : forall a b, op1 a b = op1 b a.",
            ("intros a b; rewrite !op1_def; apply andb_comm.",),
            "Lib.Ops",
        )
    )
    scripts, found = _run(adapted, path, "op2_comm", project)
    # op1 -> op2 from the statements; andb -> orb from op1_def against op2_def
    assert scripts[0] == "intros a b; rewrite !op2_def; apply orb_comm."
    assert found.outcome is Outcome.CANDIDATE
    assert found.sentences == ("intros a b; rewrite !op2_def; apply orb_comm.",)

    # a false statement: the adapted candidates are tried and every one is refused
    _, refused = _run(adapted, path, "op2_wrong", project)
    assert refused.outcome is not Outcome.CANDIDATE
    assert refused.tactics_tried > 0
    assert refused.sentences == ()


#: two relations named alike; the ``ex_`` lemmas' proofs apply the ``is_`` ones
SUMS = """\
From Coq Require Import Lia.
Definition is_sum (f : nat -> nat) (l : nat) := f 0 + f 1 = l.
Definition ex_sum (f : nat -> nat) := exists l, is_sum f l.
Definition is_total (f : nat -> nat) (l : nat) := f 0 + f 1 + f 2 = l.
Definition ex_total (f : nat -> nat) := exists l, is_total f l.
Lemma is_sum_plus f g lf lg :
  is_sum f lf -> is_sum g lg -> is_sum (fun n => f n + g n) (lf + lg).
Proof. unfold is_sum; lia. Qed.
Lemma is_total_plus f g lf lg :
  is_total f lf -> is_total g lg -> is_total (fun n => f n + g n) (lf + lg).
Proof. unfold is_total; lia. Qed.
Lemma ex_sum_plus f g : ex_sum f -> ex_sum g -> ex_sum (fun n => f n + g n).
Proof. intros [lf Hf] [lg Hg]. exists (lf + lg). now apply is_sum_plus. Qed.
"""


def test_an_analogy_renames_the_names_built_on_a_renamed_one(project: Path) -> None:
    """``ex_sum`` -> ``ex_total`` in the statements renames ``is_sum_plus`` to
    ``is_total_plus`` in the proof (the segment ``sum`` -> ``total``)."""
    _compile(project, "Sums", SUMS)
    path = _goal_file(
        project,
        "Require Import Lib.Sums.\n"
        "Lemma ex_total_plus f g : ex_total f -> ex_total g -> ex_total (fun n => f n + g n).\n"
        "Proof.\nAdmitted.\n",
    )

    adapted = _adapted(
        ProofExample(
            "ex_sum_plus",
            "Lemma ex_sum_plus f g : ex_sum f -> ex_sum g -> ex_sum (fun n => f n + g n).",
            ("intros [lf Hf] [lg Hg].", "exists (lf + lg).", "now apply is_sum_plus."),
            "Lib.Sums",
        )
    )
    scripts, found = _run(adapted, path, "ex_total_plus", project)
    assert scripts[0] == "intros [lf Hf] [lg Hg]. exists (lf + lg). now apply is_total_plus."
    assert found.outcome is Outcome.CANDIDATE
    assert found.sentences[-1] == "now apply is_total_plus."


def test_a_rewrite_chain_with_the_imported_file_s_equations(project: Path) -> None:
    path = _goal_file(
        project,
        "Require Import Lib.Ops.\nLemma op1_true : forall a, op1 a true = a.\nProof.\nAdmitted.\n",
    )

    async def chain(session, goal):  # type: ignore[no-untyped-def]
        return await RewriteStrategy().prove(session, goal, Budget(20, 2, 1))

    found = _run(chain, path, "op1_true", project)
    assert found.outcome is Outcome.CANDIDATE
    # op1_def or op1_comm: the equations of the file it imports
    assert any("op1_def" in s or "op1_comm" in s for s in found.sentences), found.sentences


def test_token_map_rename_and_name_morph() -> None:
    mapping = token_map("forall T : ordType, commutative fsetU", "commutative fsetI")
    assert mapping == {"fsetU": "fsetI"}
    script = "by move=> s1 s2; apply/eq_fset=> x; rewrite !in_fsetU orbC."
    assert rename(script, mapping) == script.replace("in_fsetU", "in_fsetI")
    assert rename(script, {**mapping, "orb": "andb"}) == (
        "by move=> s1 s2; apply/eq_fset=> x; rewrite !in_fsetI andbC."
    )
    # a bound name is renamed whole, never inside a longer name
    assert (
        rename("intros x; apply max_x.", {"x": "y"}, whole_only=["x"]) == "intros y; apply max_x."
    )
    # names the alignment leaves unpaired are paired when spelled alike
    shifted = token_map(
        "forall a b, ex_series a -> ex_series (fun n => plus (a n) (b n))",
        "forall a b x, ex_pseries a x -> ex_pseries (PS_plus a b) x",
    )
    assert shifted["ex_series"] == "ex_pseries"
    assert segment_pairs([("ex_series", "ex_pseries"), ("fsetU", "fsetI")]) == {"series": "pseries"}
    assert rename("exists l; apply is_series_plus.", {"ex_series": "ex_pseries"}) == (
        "exists l; apply is_pseries_plus."
    )
    assert name_morph("fsetUC", "fsetUA") == ("C", "A")
    assert name_morph("fsetUC", "fsetUC") is None
    assert rewrite_names("by rewrite !(tnth_meet, tnth_join) meetUl ih.", ["ih"]) == [
        "tnth_meet",
        "tnth_join",
        "meetUl",
    ]
    assert rewrite_names("rewrite <- app_assoc, IHl in H; auto.") == ["app_assoc", "IHl"]


def test_found_proofs_are_seen_below_them_and_in_importing_files(tmp_path: Path) -> None:
    found = FoundProofs()
    a, b = tmp_path / "A.v", tmp_path / "B.v"
    example = ProofExample("x", "Lemma x : True.", ("exact I.",))
    before = found.version
    found.add(a, 10, example)
    assert found.version == before + 1
    assert found.visible(a, 11, []) == [example]
    assert found.visible(a, 10, []) == []  # not at or above its own line
    assert found.visible(b, 1, [a]) == [example]  # B imports A
    assert found.visible(b, 1, []) == []  # B does not load A: never


def test_the_corpus_ranks_notations_too() -> None:
    corpus = Corpus(
        COQ,
        [
            ProofExample("fsetUC", "Lemma fsetUC s1 s2 : s1 :|: s2 = s2 :|: s1.", ("by [].",)),
            ProofExample("fsetIC", "Lemma fsetIC s1 s2 : s1 :&: s2 = s2 :&: s1.", ("by [].",)),
        ],
    )
    best = corpus.nearest("Lemma goal s1 s2 : s1 :&: s2 = s2 :&: s1.", 1)
    assert [e.name for _, e in best] == ["fsetIC"]
    assert (
        corpus.nearest("Lemma goal : s1 :&: s2 = s2 :&: s1.", 2, exclude=["fsetIC"])[0][1].name
        == "fsetUC"
    )


def test_a_proof_added_to_the_corpus_is_ranked_at_once() -> None:
    """Rankings are kept per statement; a proof found in the run must not wait for them."""
    union = ProofExample("fsetUC", "Lemma fsetUC s1 s2 : s1 :|: s2 = s2 :|: s1.", ("by [].",))
    corpus = Corpus(COQ, [union])
    goal = "Lemma goal s1 s2 : s1 :&: s2 = s2 :&: s1."
    assert [e.name for _, e in corpus.nearest(goal, 1)] == ["fsetUC"]
    assert [e.name for _, e in corpus.nearest(goal, 1)] == ["fsetUC"]  # from the kept ranking
    intersection = ProofExample(
        "fsetIC", "Lemma fsetIC s1 s2 : s1 :&: s2 = s2 :&: s1.", ("by [].",)
    )
    other = ProofExample("addnC", "Lemma addnC m n : m + n = n + m.", ("by [].",))
    corpus.extend([intersection, other])
    assert [e.name for _, e in corpus.nearest(goal, 1)] == ["fsetIC"]
    # the kept ranking took the new proofs in: the same as a corpus ranked from scratch
    fresh = Corpus(COQ, [union, intersection, other])
    assert corpus.nearest(goal, 3) == fresh.nearest(goal, 3)
    assert len(corpus.nearest(goal, 3)) >= 2


def test_the_file_s_own_proofs_take_turns_with_the_libraries() -> None:
    """A library's ``associative`` lemmas match an ``associative`` goal better than the
    file's proofs about its own constant; the file's still come first, in turns."""
    library = Corpus(
        COQ,
        [
            ProofExample("opA", "Lemma opA : associative op.", ("by do 3!case.",)),
            *(ProofExample(f"f{i}", f"Lemma f{i} n : f{i} n = n.", ("by [].",)) for i in range(20)),
        ],
    )
    local = Corpus(
        COQ,
        [
            ProofExample(
                "mul1s",
                "Lemma mul1s : left_id 1 mul.",
                ("by move=> s; apply/eq_perm=> x; rewrite permM.",),
            )
        ],
    )
    goal = "Lemma mulA : associative mul."
    assert library.nearest(goal, 1)[0][0] > local.nearest(goal, 1)[0][0]
    near = Visible(library, local).nearest(goal, 4)
    assert [e.name for _, e in near] == ["mul1s", "opA"]
    # its opening, for any number of premises (``associative`` has three, ``left_id`` one)
    opening = _opening(near[0][1].script[0])
    assert opening == "move=> s; apply/eq_perm=> x."
    assert _intros_any(opening) == "move=> *; apply/eq_perm=> x."
    assert _intros_any("intros x y; apply foo.") == "intros; apply foo."
    assert _intros_any("move=> [x y]; apply foo.") is None
