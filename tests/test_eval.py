"""``orch eval`` with real Coq and CoqHammer: arms, accounting, journal, refusals."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.errors import OrchError
from proof_orchestrator.workflows.evaluate import EvalError, GoalRow, evaluate

SMALL = """\
Inductive num : Type := zero : num | succ : num -> num.
Fixpoint plus (a b : num) : num := match a with zero => b | succ p => succ (plus p b) end.
Lemma plus_zero_l : forall n, plus zero n = n.
Proof. reflexivity. Qed.
Lemma plus_zero_r : forall n, plus n zero = n.
Proof. induction n; simpl; congruence. Qed.
Lemma plus_succ_r : forall a b, plus a (succ b) = succ (plus a b).
Proof. induction a; simpl; intros; congruence. Qed.
"""


async def test_every_goal_gets_every_arm_and_a_checked_verdict(tmp_path: Path) -> None:
    first, second = tmp_path / "A.v", tmp_path / "B.v"
    first.write_text(SMALL, encoding="utf-8")
    second.write_text(SMALL.replace("plus", "add"), encoding="utf-8")
    journal = tmp_path / "journal.jsonl"
    seen: list[GoalRow] = []
    result = await evaluate(
        [first, second],
        budget=4,
        baselines=["hammer", "tactics"],
        workers=2,
        journal=journal,
        on_goal=seen.append,
    )
    assert result["goals"] == 6 == len(seen)
    assert len(journal.read_text(encoding="utf-8").splitlines()) == 6
    assert [r["name"] for r in result["rows"]] == [
        "plus_zero_l", "plus_zero_r", "plus_succ_r", "add_zero_l", "add_zero_r", "add_succ_r"
    ]  # fmt: skip
    for row in result["rows"]:
        assert sorted(row["arms"]) == ["hammer", "portfolio", "tactics"]
        assert sorted(row["order"]) == ["hammer", "portfolio", "tactics"]
        for arm in row["arms"].values():
            assert arm["solved"] == bool(arm["script"])
            assert "Admitted" not in arm["script"]
            assert arm["cpu_seconds"] >= 0
    portfolio = result["arms"]["portfolio"]
    # the two inductions need a case split; the portfolio has induction, the tactic list not
    assert portfolio["solved"] == 6
    assert result["arms"]["tactics"]["solved"] < 6
    # the portfolio is what orch fill runs: the default profile's strategies
    assert set(portfolio["per_strategy"]) <= {
        "micro",
        "induction",
        "cached",
        "analogy",
        "rewrite",
        "search",
        "hammer",
    }
    assert result["training_cpu_seconds"] >= 0
    solved_cpu = sum(r["arms"]["portfolio"]["cpu_seconds"] for r in result["rows"])
    assert portfolio["cpu_seconds"] == pytest.approx(
        solved_cpu + result["training_cpu_seconds"], abs=0.05
    )
    assert result["baselines_union"] >= result["arms"]["hammer"]["solved"]


async def test_a_stdlib_file_is_evaluated_in_place_under_its_own_name(tmp_path: Path) -> None:
    """``Sets/Constructive_sets.v`` starts with ``Require Export Ensembles.``: its
    folder must not be mapped under the empty name, or ``Ensembles.vo`` (which
    holds ``Coq.Sets.Ensembles``) is refused and every goal fails to load."""
    where = subprocess.check_output(["coqc", "-where"], text=True).strip()
    path = Path(where) / "theories" / "Sets" / "Constructive_sets.v"
    if not path.is_file():
        pytest.skip(f"Coq's library sources are not installed ({path} is missing)")
    result = await evaluate([path], budget=5, only=["Noone_in_empty"])
    assert result["goals"] == 1
    (row,) = result["rows"]
    assert row["arms"]["portfolio"]["solved"], row["arms"]["portfolio"]["note"]


async def test_files_that_hammer_loads_are_refused(tmp_path: Path) -> None:
    loaded = tmp_path / "theories" / "Lists" / "List.v"
    loaded.parent.mkdir(parents=True)
    loaded.write_text(SMALL, encoding="utf-8")
    with pytest.raises(EvalError, match=r"Coq\.Lists\.List"):
        await evaluate([loaded], budget=2)
    with pytest.raises(EvalError, match="unknown baseline"):
        await evaluate([tmp_path / "x.v"], baselines=["vampire"])


def test_cli_writes_the_json_and_removes_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "A.v"
    path.write_text(SMALL, encoding="utf-8")
    out = tmp_path / "results"
    result = CliRunner().invoke(
        app,
        ["eval", str(path), "--budget", "3", "--baseline", "tactics", "--json", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    (written,) = out.glob("*-eval.json")
    assert not list(out.glob("*.partial.jsonl"))
    data = json.loads(written.read_text(encoding="utf-8"))
    assert data["goals"] == 3
    assert json.loads(result.stdout)["arms"]["portfolio"]["solved"] == 3
    # the live view's last frame: goals done out of the total, and each arm's solved count
    view = result.stderr
    assert "3/3" in view
    assert "solved per arm" in view
    solved_row = re.search(r"portfolio\s*│\s*(\d+)", view)
    assert solved_row is not None
    assert solved_row.group(1) == "3"
    assert re.search(r"tactics\s*│\s*\d+", view)
    bad = CliRunner().invoke(app, ["eval", str(tmp_path / "missing")])
    assert bad.exit_code != 0


async def test_a_stopped_eval_resumes_from_its_journal_without_running_its_goals_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "A.v"
    path.write_text(SMALL, encoding="utf-8")
    journal = tmp_path / "journal.jsonl"
    options: dict[str, Any] = {"budget": 3, "baselines": ["tactics"], "portfolio": False}
    whole = await evaluate([path], journal=journal, **options)
    lines = journal.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    # the run stopped during its third goal, half-way through writing a line
    journal.write_text("\n".join(lines[:2]) + "\n" + lines[2][:25], encoding="utf-8")
    ran: list[GoalRow] = []
    resumed = await evaluate([path], journal=journal, resume=journal, on_goal=ran.append, **options)
    assert [r.name for r in ran] == ["plus_succ_r"]
    assert [r["name"] for r in resumed["rows"]] == [r["name"] for r in whole["rows"]]
    assert resumed["rows"][:2] == whole["rows"][:2]  # read back as they were written
    assert resumed["arms"]["tactics"]["solved"] == whole["arms"]["tactics"]["solved"]
    # another arm: nothing of the journal fits, every goal runs
    other: list[GoalRow] = []
    await evaluate(
        [path],
        budget=3,
        baselines=["solo:micro"],
        portfolio=False,
        resume=journal,
        on_goal=other.append,
    )
    assert len(other) == 3
    journal.write_text("not json\n" + lines[0] + "\n", encoding="utf-8")
    with pytest.raises(OrchError, match="not a journal row"):
        await evaluate([path], resume=journal, **options)


def test_the_cli_resumes_in_the_journal_and_removes_it_once_the_result_is_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "A.v"
    path.write_text(SMALL, encoding="utf-8")
    journal = tmp_path / "journal.jsonl"
    asyncio.run(evaluate([path], budget=3, baselines=["tactics"], portfolio=False, journal=journal))
    lines = journal.read_text(encoding="utf-8").splitlines()
    journal.write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")
    out = tmp_path / "results"
    command = ["eval", str(path), "--budget", "3", "--baseline", "tactics", "--no-portfolio"]
    cli = CliRunner().invoke(app, [*command, "--resume", str(journal), "--out", str(out)])
    assert cli.exit_code == 0, cli.output
    (written,) = out.glob("*-eval.json")
    assert json.loads(written.read_text(encoding="utf-8"))["goals"] == 3
    assert "1/1" in cli.stderr  # one goal run, two read back
    assert not journal.exists()


async def test_goals_past_a_failing_proof_are_reported_apart_not_scored(tmp_path: Path) -> None:
    path = tmp_path / "Broken.v"
    path.write_text(
        "Lemma wrong : 1 = 2.\nProof. reflexivity. Qed.\n"
        "Lemma fine : 2 = 2.\nProof. reflexivity. Qed.\n",
        encoding="utf-8",
    )
    result = await evaluate([path], budget=2, baselines=["tactics"])
    # 'wrong' is a goal like any other (and unprovable); 'fine' cannot be reached
    assert result["goals"] == 1
    assert [r["name"] for r in result["rows"]] == ["wrong"]
    assert result["arms"]["portfolio"]["solved"] == 0
    ((skipped),) = result["unloadable"]
    assert skipped["name"] == "fine"
    assert "reflexivity" in skipped["reason"]
    # the portfolio alone: its strategies all fail on the prefix, and the goal is
    # still reported as not loadable, not as the portfolio's failure
    alone = await evaluate([path], budget=2)
    assert [r["name"] for r in alone["rows"]] == ["wrong"]
    assert [r["name"] for r in alone["unloadable"]] == ["fine"]


async def test_the_hammer_baseline_is_hammer_as_its_users_run_it(tmp_path: Path) -> None:
    """`Timeout B hammer.` with CoqHammer's defaults; its proof is the printed reconstruction."""
    path = tmp_path / "H.v"
    path.write_text(
        SMALL.split("Lemma plus_zero_l")[0]
        + "Lemma plus_zero_r : forall n, plus n zero = n.\n"
        + "Proof. induction n; simpl; congruence. Qed.\n"
        + "Lemma twice : forall a, plus (plus a zero) zero = a.\n"
        + "Proof. intros; rewrite !plus_zero_r; reflexivity. Qed.\n",
        encoding="utf-8",
    )
    # Coq's Timeout is wall-clock, as for a user: room for a busy machine and a cold coqtop
    # the last goal only: the lemmas before it stay in its prefix, as always
    result = await evaluate(
        [path], budget=30, baselines=["hammer", "hammer-capped"], only=["twice"]
    )
    (row,) = result["rows"]
    assert row["name"] == "twice"
    assert sorted(row["arms"]) == ["hammer", "hammer-capped", "portfolio"]
    hammer = row["arms"]["hammer"]
    assert hammer["solved"]
    # the ATP found plus_zero_r; the stored proof replays without the ATPs
    assert "plus_zero_r" in hammer["script"]
    assert "hammer" not in hammer["script"]
    assert hammer["cpu_seconds"] > 0.5  # the ATPs' CPU is counted
    with pytest.raises(EvalError, match="unknown baseline"):
        await evaluate([path], baselines=["hammerr"])


async def test_a_seeded_sample_keeps_file_order_and_repeats(tmp_path: Path) -> None:
    path = tmp_path / "A.v"
    path.write_text(SMALL, encoding="utf-8")
    names = []
    for _ in range(2):
        result = await evaluate([path], budget=2, sample=2, seed=3)
        names.append([r["name"] for r in result["rows"]])
    assert names[0] == names[1]
    assert len(names[0]) == 2
    order = ["plus_zero_l", "plus_zero_r", "plus_succ_r"]
    assert names[0] == sorted(names[0], key=order.index)


TRUSTING = """\
Require Import Classical.
Lemma excluded_middle_irrefutable : forall P : Prop, ~ ~ (P \\/ ~ P).
Proof. intros P H. apply H. right. intro p. apply H. left. exact p. Qed.
Lemma first_nnpp : forall P : Prop, ~ ~ P -> P.
Proof. exact NNPP. Qed.
Lemma uses_classic : forall P : Prop, P \\/ ~ P.
Proof. exact classic. Qed.
Lemma double_negation : forall P : Prop, ~ ~ P -> P.
Proof. exact NNPP. Qed.
"""


@pytest.mark.parametrize(
    ("index", "script", "accepted"),
    [
        # no earlier proof uses `classic`, nor the original proof, but the file loads
        # `Classical`, whose source declares it: the user's trust
        (0, "intros P H. apply H. apply classic.", True),
        # no earlier proof uses it, but this lemma's own original proof does
        (1, "exact NNPP.", True),
        # `uses_classic` is earlier: trusted
        (3, "intros P H. destruct (classic P); tauto.", True),
    ],
)
async def test_the_eval_audit_trusts_earlier_proofs_and_the_goals_own_original_proof(
    tmp_path: Path, index: int, script: str, accepted: bool
) -> None:
    """Position-faithful, as `orch fill`'s audit: the axioms of the earlier proofs are
    trusted, and so are those the goal's own original proof rests on."""
    from proof_orchestrator.coq.audit import TrustBase
    from proof_orchestrator.coq.evaluation import GoalAudit, _checked
    from proof_orchestrator.coq.holes import declared_axioms, qed_proofs
    from proof_orchestrator.coq.prover import CoqProver
    from proof_orchestrator.goals import Budget, Outcome
    from proof_orchestrator.strategies.base import StrategyResult

    path = tmp_path / "T.v"
    path.write_text(TRUSTING, encoding="utf-8")
    proofs = qed_proofs(path, TRUSTING)
    trust = TrustBase([hole.goal.qualified_name for hole, _ in proofs])
    hole, original = proofs[index]
    audit = GoalAudit(
        declared_axioms(TRUSTING[: hole.statement_start]), trust, index, original=original
    )
    sentences = tuple(f"{s.strip().removesuffix('.')}." for s in script.split(". "))
    found = StrategyResult(Outcome.CANDIDATE, sentences)
    prover = CoqProver(cwd=str(tmp_path))
    try:
        async with prover.session(hole.goal, TRUSTING, hole.prefix_end) as session:
            solved, note, _ = await _checked(session, found, hole, audit, Budget(10, 5, 5))
    finally:
        await prover.aclose()
    assert solved is accepted, note
    assert accepted or "classic" in note


@pytest.mark.parametrize("strict", [False, True])
async def test_strict_axioms_in_the_eval_trusts_only_the_files_own_proofs(
    tmp_path: Path, strict: bool
) -> None:
    """`orch eval --strict-axioms` audits as `orch fill --strict-axioms`: `classic`, which
    `Classical` declares but neither an earlier proof nor the original uses, is refused;
    an axiom an earlier proof rests on is still trusted."""
    from proof_orchestrator.coq.evaluation import FileEvaluation
    from proof_orchestrator.goals import Budget, Outcome
    from proof_orchestrator.strategies.base import StrategyResult

    path = tmp_path / "T.v"
    path.write_text(TRUSTING, encoding="utf-8")
    file = FileEvaluation(path, TRUSTING, strict_axioms=strict)
    verdicts = []
    try:
        for index, script in (
            (0, ("intros P H.", "apply H.", "apply classic.")),
            (3, ("intros P H.", "destruct (classic P); tauto.")),
        ):
            hole = file.proofs[index][0]
            found = StrategyResult(Outcome.CANDIDATE, script)
            async with file.prover.session(hole.goal, TRUSTING, hole.prefix_end) as session:
                verdicts.append(await file.check(session, found, index, Budget(10, 5, 5)))
    finally:
        await file.aclose()
    (first, first_note, _), (later, later_note, _) = verdicts
    assert first is not strict, first_note
    assert strict is False or "classic" in first_note
    assert later, later_note  # `uses_classic` comes earlier: its axiom is trusted


IMPORTING_FUNCTOR = """\
Require Import Coq.Structures.OrderedType.
Module Make (O : OrderedType).
  Import O.
  Lemma target : forall x y, lt x y -> lt y x -> False.
  Proof. intros x y h1 h2; apply (lt_not_eq (lt_trans h1 h2)); apply eq_refl. Qed.
End Make.
"""


async def test_the_eval_audit_resolves_a_parameters_unqualified_members(tmp_path: Path) -> None:
    """After `Import O` a re-proof's `eq_sym` (which the original proof does not use) is
    printed unqualified: `Locate` says it is the functor's parameter `O.eq_sym`."""
    from proof_orchestrator.coq.evaluation import FileEvaluation
    from proof_orchestrator.goals import Budget, Outcome
    from proof_orchestrator.strategies.base import StrategyResult

    path = tmp_path / "F.v"
    path.write_text(IMPORTING_FUNCTOR, encoding="utf-8")
    file = FileEvaluation(path, IMPORTING_FUNCTOR)
    hole = file.proofs[0][0]
    found = StrategyResult(
        Outcome.CANDIDATE,
        (
            "intros x y h1 h2.",
            "apply (lt_not_eq (lt_trans h1 h2)).",
            "apply eq_sym.",
            "apply eq_refl.",
        ),
    )
    try:
        async with file.prover.session(hole.goal, IMPORTING_FUNCTOR, hole.prefix_end) as session:
            solved, note, _ = await file.check(session, found, 0, Budget(10, 5, 5))
    finally:
        await file.aclose()
    assert solved, note


async def test_solo_arms_run_one_member_alone_and_the_peers_can_run_without_the_portfolio(
    tmp_path: Path,
) -> None:
    """``solo:NAME`` is the portfolio's code with a lineup of one; ``portfolio=False``
    leaves the portfolio out; a goal a member proves and the portfolio does not is
    listed under ``portfolio_lost``."""
    path = tmp_path / "S.v"
    path.write_text(SMALL, encoding="utf-8")
    result = await evaluate(
        [path],
        budget=5,
        baselines=["solo:micro", "solo:induction", "tactics"],
        portfolio=False,
        tactic_seconds=2,
    )
    assert set(result["arms"]) == {"solo:micro", "solo:induction", "tactics"}
    assert "portfolio_lost" not in result
    rows = {r["name"]: r["arms"] for r in result["rows"]}
    # reflexivity is among the quick tactics; the inductions need a case split
    assert rows["plus_zero_l"]["solo:micro"]["solved"]
    assert rows["plus_zero_r"]["solo:induction"]["solved"]
    assert not rows["plus_zero_r"]["tactics"]["solved"]
    assert result["arms"]["solo:induction"]["per_strategy"] == {"induction": 3}
    # the member alone is the member: micro's solo never wins with another strategy
    assert set(result["arms"]["solo:micro"]["per_strategy"]) <= {"micro"}
    with pytest.raises(EvalError, match="no strategy 'nosuch' in the lineup"):
        await evaluate([path], baselines=["solo:nosuch"])
    with pytest.raises(EvalError, match="nothing to run"):
        await evaluate([path], portfolio=False)
    both = await evaluate([path], budget=5, baselines=["solo:induction"], only=["plus_zero_r"])
    assert both["portfolio_lost"] == []  # the portfolio proves what induction proves


async def test_the_tactics_baseline_runs_with_lia_in_front_and_not_coqhammer(
    tmp_path: Path,
) -> None:
    """The file loads nothing: ``lia`` (loaded in front for the tactic list) proves the
    arithmetic goal; ``firstorder`` the propositional one."""
    path = tmp_path / "T.v"
    path.write_text(
        "Lemma arith : forall n : nat, n + 1 > n.\n"
        "Proof. induction n; simpl; [apply le_n | apply le_n_S; exact IHn]. Qed.\n"
        "Lemma prop : forall A B : Prop, A /\\ B -> B \\/ A.\nProof. tauto. Qed.\n",
        encoding="utf-8",
    )
    result = await evaluate([path], budget=5, baselines=["tactics"], portfolio=False)
    scripts = {r["name"]: r["arms"]["tactics"]["script"] for r in result["rows"]}
    assert scripts["arith"] == "lia."
    assert scripts["prop"] in ("intuition.", "firstorder.")


#: ``auto`` closes ``False`` from ``true = false`` only with ssrbool's hints (CoqHammer loads
#: ssrbool), so ``discriminate.`` then has no goal: the file breaks with CoqHammer in front
BREAKS_WITH_HAMMER_IN_FRONT = (
    "Lemma not_true_false : true = false -> False.\n"
    "Proof. intros; auto. discriminate. Qed.\n" + SMALL
)


async def test_the_hammer_arm_loads_coqhammer_before_the_statement_where_in_front_breaks(
    tmp_path: Path,
) -> None:
    """As in MSetWeakList.v: the goals after a proof that CoqHammer's libraries break are
    still scored; its arm loads CoqHammer just before each statement and says so."""
    path = tmp_path / "Late.v"
    path.write_text(BREAKS_WITH_HAMMER_IN_FRONT, encoding="utf-8")
    result = await evaluate(
        [path],
        budget=10,
        baselines=["hammer", "tactics"],
        portfolio=False,
        only=["not_true_false", "plus_zero_l", "plus_zero_r"],
    )
    assert result["unloadable"] == []
    rows = {r["name"]: r["arms"] for r in result["rows"]}
    assert set(rows) == {"not_true_false", "plus_zero_l", "plus_zero_r"}
    # the first goal loads with CoqHammer in front; every later one needs it late
    assert "before the statement" not in rows["not_true_false"]["hammer"]["note"]
    for name in ("plus_zero_l", "plus_zero_r"):
        assert "CoqHammer loaded before the statement" in rows[name]["hammer"]["note"]
        assert "before the statement" not in rows[name]["tactics"]["note"]
    # hammer, loaded late, proves the goals its ATPs reach
    assert rows["plus_zero_l"]["hammer"]["solved"]
