"""The premise index and the k-NN models are cached per loaded prefix, never across positions.

Real ``coqtop`` sessions; the index's exactness is checked against rank-bm25 itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

from proof_orchestrator.coq.display import COQ
from proof_orchestrator.coq.holes import CoqHole, qed_proofs
from proof_orchestrator.coq.learning import module_source
from proof_orchestrator.coq.prover import CoqProver
from proof_orchestrator.coq.strategies.knn import FileModels
from proof_orchestrator.coq.strategies.retrieval import (
    Premise,
    PremiseIndex,
    PremiseIndexes,
    library_index,
    library_premises,
    tokens,
)

ORDERED = """\
Require Import Arith.
Lemma first_lemma : forall n : nat, n = n.
Proof. intros n. reflexivity. Qed.
Lemma second_lemma : forall n : nat, n + 0 = n.
Proof. intros n. induction n; simpl; congruence. Qed.
Lemma third_lemma : forall n : nat, 0 + n = n.
Proof. intros n. reflexivity. Qed.
"""

MODULES = tuple(
    (m, module_source(m))
    for m in ("Coq.Init.Logic", "Coq.Init.Peano", "Coq.Arith.PeanoNat", "Coq.Lists.List")
)


def _holes(path: Path) -> dict[str, CoqHole]:
    path.write_text(ORDERED, encoding="utf-8")
    return {h.goal.name: h for h, _ in qed_proofs(path, ORDERED)}


async def test_an_index_is_built_once_per_prefix_and_a_later_attempt_reuses_it(
    tmp_path: Path,
) -> None:
    holes = _holes(tmp_path / "O.v")
    second, third = holes["second_lemma"], holes["third_lemma"]
    indexes = PremiseIndexes()
    prover = CoqProver(cwd=str(tmp_path))
    try:
        # the later hole first: its index must not leak into the earlier one's
        async with prover.session(third.goal, ORDERED, third.prefix_end) as session:
            later = await indexes.index_for(session)
        async with prover.session(second.goal, ORDERED, second.prefix_end) as session:
            first_attempt = await indexes.index_for(session)
        async with prover.session(second.goal, ORDERED, second.prefix_end) as session:
            second_attempt = await indexes.index_for(session)
    finally:
        await prover.aclose()
    assert second_attempt is first_attempt
    assert (indexes.built, indexes.reused) == (2, 1)
    names = {p.name for p in first_attempt.premises}
    assert "first_lemma" in names
    assert not {"second_lemma", "third_lemma"} & names
    assert not {"second_lemma", "third_lemma"} & {
        p.name for p in first_attempt.rank("forall n : nat, 0 + n = n", k=100)
    }
    assert {"first_lemma", "second_lemma"} <= {p.name for p in later.premises}
    assert "third_lemma" not in {p.name for p in later.premises}
    # the library part (Arith's lemmas) is shared by both positions
    assert "add_0_r" in names


async def test_knn_models_are_per_prefix_and_never_hold_a_later_proof(tmp_path: Path) -> None:
    holes = _holes(tmp_path / "K.v")
    second, third = holes["second_lemma"], holes["third_lemma"]
    models = FileModels()
    prover = CoqProver(cwd=str(tmp_path))
    try:
        # the hole further down first: it mines first_lemma and second_lemma
        async with prover.session(third.goal, ORDERED, third.prefix_end) as session:
            later = await models.model_for(session)
        mined_cpu = models.cpu_seconds
        async with prover.session(second.goal, ORDERED, second.prefix_end) as session:
            earlier = await models.model_for(session)
            again = await models.model_for(session)
    finally:
        await prover.aclose()
    later_tactics = {tactic for _, tactic in later.pairs}
    assert "induction n; simpl; congruence." in later_tactics
    earlier_tactics = [tactic for _, tactic in earlier.pairs]
    # only first_lemma's proof: second_lemma (mined for the later hole) is not offered
    assert earlier_tactics == ["intros n.", "reflexivity."]
    assert again is earlier
    assert (models.built, models.reused) == (2, 1)
    assert models.cpu_seconds == mined_cpu  # first_lemma was not replayed a second time


def _rank_bm25(premises: list[Premise], goal: str, k: int) -> tuple[list[str], list[float]]:
    """Ranking as rank-bm25 alone does it over the whole corpus (the reference)."""
    unique = {p.name: p for p in premises}
    ordered = list(unique.values())
    bm25 = BM25Okapi([tokens(p.name, COQ) * 2 + tokens(p.statement, COQ) for p in ordered])
    scores = bm25.get_scores(tokens(goal, COQ))
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    return [ordered[i].name for i in order][:k], list(scores)


def test_an_index_extended_from_the_library_ranks_exactly_as_rank_bm25() -> None:
    library = library_premises(MODULES)
    assert len(library) > 200
    own = [
        Premise("my_add_zero", "forall n, n + 0 = n"),
        Premise("my_rev_rev", "forall l : list nat, rev (rev l) = l"),
    ]
    shadowing = [*own, Premise("app_nil_r", "forall l : list nat, l ++ nil = l")]
    for premises in (own, shadowing, []):
        index = PremiseIndex(premises, library_index(MODULES))
        for goal in ("n + 0 = n", "rev (rev l) = l", "length (l ++ m) = length l + length m"):
            names, scores = _rank_bm25([*library, *premises], goal, 40)
            assert [p.name for p in index.rank(goal, 40)] == names
            assert list(index.scores(goal)) == scores
    assert library_index(MODULES) is library_index(MODULES)


def test_library_premises_are_kept_on_disk_until_the_source_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from proof_orchestrator.coq.strategies import retrieval

    theories = tmp_path / "theories"
    theories.mkdir()
    source = theories / "Mine.v"
    source.write_text("Lemma kept_one : True.\nProof. exact I. Qed.\n", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    retrieval._module_premises.cache_clear()
    first = retrieval._module_premises("Coq.Mine", source)
    assert [p.name for p in first] == ["kept_one"]
    written = list((tmp_path / "cache" / "orch" / "premises").glob("*.json"))
    assert len(written) == 1

    # read back from the cache, not the source: an edit to the cache file shows through
    written[0].write_text('[["from_cache", "True", "Coq.Mine", ""]]', encoding="utf-8")
    retrieval._module_premises.cache_clear()
    assert [p.name for p in retrieval._module_premises("Coq.Mine", source)] == ["from_cache"]

    # a changed source (another size and time) is read again
    source.write_text(
        "Lemma kept_one : True.\nProof. exact I. Qed.\n"
        "Lemma kept_two : True.\nProof. exact I. Qed.\n",
        encoding="utf-8",
    )
    retrieval._module_premises.cache_clear()
    assert [p.name for p in retrieval._module_premises("Coq.Mine", source)] == [
        "kept_one",
        "kept_two",
    ]

    # an unreadable cache entry is ignored, never an error
    for entry in (tmp_path / "cache" / "orch" / "premises").glob("*.json"):
        entry.write_text("not json", encoding="utf-8")
    retrieval._module_premises.cache_clear()
    assert [p.name for p in retrieval._module_premises("Coq.Mine", source)] == [
        "kept_one",
        "kept_two",
    ]
    retrieval._module_premises.cache_clear()


async def test_knn_model_of_a_broken_proof_learns_its_old_steps_until_one_fails(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    second = _holes(tmp_path / "B.v")["second_lemma"]
    old = ("intros n.", "rewrite no_such_lemma.", "reflexivity.")
    broken = replace(second, goal=replace(second.goal, old_script=old))
    models = FileModels()
    prover = CoqProver(cwd=str(tmp_path))
    try:
        async with prover.session(broken.goal, ORDERED, broken.prefix_end) as session:
            model = await models.model_for(session)
        async with prover.session(second.goal, ORDERED, second.prefix_end) as session:
            plain = await models.model_for(session)
    finally:
        await prover.aclose()
    # first_lemma's steps, then the old script's up to the step that no longer runs
    assert [tactic for _, tactic in model.pairs] == ["intros n.", "reflexivity.", "intros n."]
    assert [tactic for _, tactic in plain.pairs] == ["intros n.", "reflexivity."]
