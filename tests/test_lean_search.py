"""Best-first search, the k-NN model and premise retrieval for Lean, over recorded REPL traffic.

The replay answers only what the real REPL answered (tests/lean_replay.py): any
tactic that was not recorded is a failure, so a proof found here was found through
the real replies to its tactics.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from proof_orchestrator.goals import Budget, Outcome
from proof_orchestrator.lean.display import LEAN
from proof_orchestrator.lean.holes import scan_lean_text
from proof_orchestrator.lean.session import LeanSession
from proof_orchestrator.lean.strategies.knn import LeanModels, finished_lines
from proof_orchestrator.lean.strategies.premises import LeanPremiseIndexes
from proof_orchestrator.lean.strategies.search import (
    LeanSearchStrategy,
    conclusion_shape,
    hypothesis_steps,
    structural_steps,
)
from proof_orchestrator.search.bestfirst import SearchEnd, best_first
from proof_orchestrator.search.features import TacticModel, features
from proof_orchestrator.search.proofstate import Hypothesis, hypotheses

from .test_lean_repl import recorded_pairs
from .test_lean_session import BRANCHING, prover_for, sent
from .transcripts import transcripts

#: test/file2.lean of leanprover-community/repl, the file its `file2` transcript elaborated
FILE2 = """\
def a : Nat := 37
def b : Nat := 37

theorem h1 : a = b := rfl

theorem h (x y z : Nat) : x + y + (z + a) = x + (z + b + y) := by
  rw [Nat.add_assoc, Nat.add_comm y, h1]
"""


async def test_search_finds_a_recorded_multi_step_proof(tmp_path: Path) -> None:
    """`complex_and` needs four steps over two goals; every step is a recorded reply."""
    path = tmp_path / "Branch.lean"
    path.write_text(BRANCHING + "\n", encoding="utf-8")
    (hole,) = scan_lean_text(path, BRANCHING + "\n")
    prover, log = prover_for(tmp_path, "core/proof_branching.in")
    try:
        async with prover.session(hole, BRANCHING + "\n") as session:
            strategy = LeanSearchStrategy(indexes=LeanPremiseIndexes())
            result = await strategy.prove(session, hole.goal, Budget(60, 5, 5))
            # the script replays from the root in the REPL: the same recorded replies
            check = await session.check(result.sentences, timeout=5)
    finally:
        await prover.aclose()
    assert result.outcome is Outcome.CANDIDATE
    assert result.sentences == ("apply And.intro", "exact h1.left", "apply h2", "exact h1.right")
    assert check.ok
    assert not check.goals
    # every successful step was answered from the recording: states 0 -> 1 -> 2 -> 3
    tactics = [(r["tactic"], r["proofState"]) for r in sent(log) if "tactic" in r]
    for step in [
        ("apply And.intro", 0),
        ("exact h1.left", 1),
        ("apply h2", 2),
        ("exact h1.right", 3),
    ]:
        assert step in tactics
    assert result.tactics_tried == len(tactics) - len(result.sentences)  # minus the check


async def test_the_learned_tactic_is_tried_first(tmp_path: Path) -> None:
    """A model seeded with a ledger proof of a conjunction proposes its first step first."""
    path = tmp_path / "Branch.lean"
    path.write_text(BRANCHING + "\n", encoding="utf-8")
    (hole,) = scan_lean_text(path, BRANCHING + "\n")
    prover, log = prover_for(tmp_path, "core/proof_branching.in")
    proved = [("theorem both (a b : Prop) (ha : a) (hb : b) : a ∧ b", ("apply And.intro",))]
    try:
        async with prover.session(hole, BRANCHING + "\n") as session:
            strategy = LeanSearchStrategy(LeanModels(proved), indexes=LeanPremiseIndexes())
            result = await strategy.prove(session, hole.goal, Budget(60, 5, 5))
    finally:
        await prover.aclose()
    tactics = [r["tactic"] for r in sent(log) if "tactic" in r]
    assert tactics[0] == "apply And.intro"
    assert result.sentences[0] == "apply And.intro"


async def test_search_gives_up_when_no_recorded_step_fits(tmp_path: Path) -> None:
    """The search never invents a proof: at depth 2 the 4-step proof is out of reach."""
    path = tmp_path / "Branch.lean"
    path.write_text(BRANCHING + "\n", encoding="utf-8")
    (hole,) = scan_lean_text(path, BRANCHING + "\n")
    prover, _ = prover_for(tmp_path, "core/proof_branching.in")
    try:
        async with prover.session(hole, BRANCHING + "\n") as session:
            shallow = LeanSearchStrategy(indexes=LeanPremiseIndexes(), max_depth=2)
            # 4 CPU s: search_limits adds no depth below DEPTH_BUDGET * 2
            result = await shallow.prove(session, hole.goal, Budget(4, 5, 5))
    finally:
        await prover.aclose()
    assert result.outcome is Outcome.FAILED
    assert result.sentences == ()


async def test_the_search_core_runs_on_the_lean_session(tmp_path: Path) -> None:
    """best_first over the ProofStates interface, with one hand-written expander."""
    path = tmp_path / "Branch.lean"
    path.write_text(BRANCHING, encoding="utf-8")
    (hole,) = scan_lean_text(path, BRANCHING)
    prover, _ = prover_for(tmp_path, "core/proof_branching.in")
    asked: list[tuple[str, tuple[str, ...]]] = []

    async def expander(goal: str, steps: Sequence[str]) -> list[tuple[str, float]]:
        asked.append((goal, tuple(steps)))
        return [
            ("exact h1.right", 0.0),
            ("apply h2", 0.0),
            ("exact h1.left", 0.0),
            ("apply And.intro", 0.0),
        ]

    try:
        async with prover.session(hole, BRANCHING) as session:
            found = await best_first(
                session,
                [expander],
                max_depth=6,
                max_expansions=20,
                cpu_seconds=60,
                tactic_seconds=5,
            )
    finally:
        await prover.aclose()
    assert found.end is SearchEnd.FOUND
    assert found.steps == ("apply And.intro", "exact h1.left", "apply h2", "exact h1.right")
    assert found.counts == (1, 2, 1, 1, 0)
    # each node was expanded on its first goal, as the REPL printed it
    assert asked[0] == ("p q r : Prop\nh1 : p ∧ q\nh2 : q → r\n⊢ p ∧ r", ())
    assert asked[1][0].startswith("case left")


def _recorded_file2() -> list[dict[str, object]]:
    reply = recorded_pairs(transcripts() / "core/file2.in")[0][1]
    tactics: list[dict[str, object]] = json.loads(reply)["tactics"]
    return tactics


async def _model(
    tmp_path: Path, relative: str, text: str, *, on_disk: str | None = None
) -> tuple[LeanModels, TacticModel, list[dict[str, object]]]:
    """The k-NN model at the hole of ``text`` (written at ``relative``), mined through the replay.

    The session is real but not opened: opening would send the file's text as
    commands, which the transcripts do not hold; mining needs only its REPL.
    """
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if on_disk is None else on_disk, encoding="utf-8")
    (hole,) = scan_lean_text(path, text)
    prover, log = prover_for(tmp_path, "core/file2.in")
    models = LeanModels()
    try:
        warm = await prover._take("")
        session = LeanSession(prover, warm, hole, text)
        model = await models.model_for(session)
        again = await models.model_for(session)
        assert again is model  # cached per position
    finally:
        await prover.aclose()
    return models, model, sent(log)


async def test_the_lean_session_as_proof_states(tmp_path: Path) -> None:
    """show / hypotheses / reach / check of LeanSession, on the recorded replies."""
    path = tmp_path / "Branch.lean"
    path.write_text(BRANCHING, encoding="utf-8")
    (hole,) = scan_lean_text(path, BRANCHING)
    prover, log = prover_for(tmp_path, "core/proof_branching.in")
    try:
        async with prover.session(hole, BRANCHING) as session:
            root_goals = await session.show(session.root, timeout=5)
            step = await session.apply("apply And.intro", session.root, timeout=5)
            shown = await session.show(step.state, timeout=5)
            assert await session.reach(step.state, timeout=5) == step.state
            bad = await session.check(["exact h1.left"], timeout=5)
    finally:
        await prover.aclose()
    assert root_goals == ("p q r : Prop\nh1 : p ∧ q\nh2 : q → r\n⊢ p ∧ r",)
    assert shown == step.goals  # known from the reply: nothing was sent for it
    assert [r.get("tactic") for r in sent(log)][1:] == ["apply And.intro", "exact h1.left"]
    assert not bad.ok
    assert session.hypotheses(root_goals[0]) == [
        Hypothesis("p", "Prop"),
        Hypothesis("q", "Prop"),
        Hypothesis("r", "Prop"),
        Hypothesis("h1", "p ∧ q"),
        Hypothesis("h2", "q → r"),
    ]


async def test_knn_pairs_are_mined_from_a_recorded_all_tactics_reply(tmp_path: Path) -> None:
    """File mode with `allTactics` on test/file2.lean: the model holds the recorded pairs."""
    text = FILE2 + "\ntheorem later (n : Nat) : n + 0 = n := by sorry\n"
    _, model, requests = await _model(tmp_path, "test/file2.lean", text)
    recorded = _recorded_file2()
    assert requests == [{"path": "test/file2.lean", "allTactics": True}]
    assert len(recorded) == 1
    assert model.pairs == [(features(str(e["goals"]), LEAN), e["tactic"]) for e in recorded]
    (best, score), *_ = model.suggest("x y : Nat\n⊢ x + (y + a) = y + b + x")
    assert best == "rw [Nat.add_assoc, Nat.add_comm y, h1]"
    assert score > 0


async def test_knn_never_learns_from_the_hole_or_below(tmp_path: Path) -> None:
    """The hole is `h1`'s proof (line 4): the recorded `rw` of `h` (line 7) is below it."""
    text = FILE2.replace("theorem h1 : a = b := rfl", "theorem h1 : a = b := by sorry")
    assert text.count("\n") == FILE2.count("\n")  # the recorded lines still hold
    _, model, requests = await _model(tmp_path, "test/file2.lean", text)
    assert requests == [{"path": "test/file2.lean", "allTactics": True}]
    assert len(model) == 0
    assert finished_lines(text) == [(1, 1), (2, 2), (6, 7)]


async def test_knn_learns_from_the_project_files_a_file_imports(tmp_path: Path) -> None:
    """`Main.lean` imports the module `test.file2`: its finished proofs are mined too."""
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "file2.lean").write_text(FILE2, encoding="utf-8")
    text = "import test.file2\n\ntheorem later (n : Nat) : n + 0 = n := by sorry\n"
    _, model, requests = await _model(tmp_path, "Main.lean", text)
    # Main.lean itself was asked for (not recorded: refused, nothing learned), then the import
    assert requests == [
        {"path": "Main.lean", "allTactics": True},
        {"path": "test/file2.lean", "allTactics": True},
    ]
    assert [t for _, t in model.pairs] == ["rw [Nat.add_assoc, Nat.add_comm y, h1]"]


async def test_knn_mines_a_private_copy_when_the_file_changed_on_disk(tmp_path: Path) -> None:
    text = FILE2 + "\ntheorem later (n : Nat) : n + 0 = n := by sorry\n"
    _, model, requests = await _model(tmp_path, "test/file2.lean", text, on_disk=FILE2)
    (request,) = requests
    assert request["path"] != "test/file2.lean"
    assert str(request["path"]).endswith("file2.lean")
    assert len(model) == 0


def test_the_ledger_proofs_seed_the_lean_model() -> None:
    models = LeanModels([("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q", ("constructor",))])
    assert models._seed == [
        (features("theorem t (p q : Prop) (hp : p) (hq : q) : p ∧ q", LEAN), "constructor")
    ]


def test_lean_goal_features_read_lean_names() -> None:
    goal = "α : Type u_1\nxs : List α\nh : xs.length = 0\n⊢ xs = [] ∧ List.length xs ≤ 0"
    assert hypotheses(goal, LEAN) == [
        Hypothesis("α", "Type u_1"),
        Hypothesis("xs", "List α"),
        Hypothesis("h", "xs.length = 0"),
    ]
    assert LEAN.ident.findall("Nat.succ_le_of_lt h' x? y! α₁ x✝") == [
        "Nat.succ_le_of_lt",
        "h'",
        "x?",
        "y!",
        "α₁",
        "x",
    ]
    near = features("xs : List α\n⊢ xs ++ [] = xs", LEAN)
    assert near == features("xs : List α\n⊢ xs ++ [] = xs", LEAN)
    assert features("⊢ p ∧ q", LEAN) != features("⊢ p ∨ q", LEAN)


def test_shapes_and_steps() -> None:
    assert conclusion_shape("p ∧ q → q ∧ p") == "→"
    assert conclusion_shape("(p ∧ q) ∨ r") == "∨"
    assert conclusion_shape("∀ n, n + 0 = n") == "∀"
    assert conclusion_shape("¬p ∧ q") == "∧"
    assert conclusion_shape("¬(p ∧ q)") == "¬"
    assert conclusion_shape("a = b") == ""
    steps = hypothesis_steps(hypotheses("p q : Prop\nh1 : p ∧ q\nh2 : q → r\n⊢ r", LEAN))
    assert steps == [
        "exact h2",
        "apply h2",
        "exact h1",
        "exact h1.left",
        "exact h1.right",
        "cases h1",
    ]
    assert structural_steps("n : Nat\n⊢ ∀ (m : Nat), n + m = m + n")[:1] == ["intro m"]
    assert "cases n" in structural_steps("n : Nat\n⊢ n + 0 = n")
