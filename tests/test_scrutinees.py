"""The case analyses the search offers on what a goal's conclusion branches on."""

from __future__ import annotations

from proof_orchestrator.coq.strategies.scrutinees import scrutinee_tactics, scrutinees

GOAL = """\
  m : {fmap T -> S}
  x : T
  ============================
  (if isSome (m x) then odflt (def x) (m x) else def x) = odflt (def x) (m x)"""


def test_an_if_on_a_wrapped_term_offers_the_term_and_what_it_wraps() -> None:
    assert scrutinees(GOAL) == [("if", "isSome (m x)")]
    assert scrutinee_tactics(GOAL, ssreflect=False) == [
        "destruct (isSome (m x)).",
        "destruct (m x).",
    ]
    assert scrutinee_tactics(GOAL, ssreflect=True) == [
        "destruct (isSome (m x)).",
        "case: (isSome (m x)).",
        "destruct (m x).",
        "case: (m x).",
        "case: ifP.",
    ]


def test_nested_and_inner_scrutinees_are_found_at_their_own_depth() -> None:
    goal = (
        "  ============================\n"
        "  match (if b then f n else g n) with\n  | Some k => k\n  | None => 0\n  end = "
        "(match l as l0 return nat with nil => 0 | _ :: _ => 1 end)"
    )
    assert scrutinees(goal, limit=3) == [
        ("match", "(if b then f n else g n)"),
        ("if", "b"),
        ("match", "l"),
    ]
    # a parenthesised whole is not wrapped twice; a name needs no parentheses
    assert scrutinee_tactics(goal, ssreflect=False, limit=2)[:2] == [
        "destruct (if b then f n else g n).",
        "destruct b.",
    ]


def test_hypotheses_are_not_scrutinees_and_an_equality_test_offers_eqP() -> None:
    goal = "  H : if b then P else Q\n  ====================\n  (x <= y) = (x == y) || (x < y)"
    assert scrutinees(goal) == []
    assert scrutinee_tactics(goal, ssreflect=False) == []
    assert scrutinee_tactics(goal, ssreflect=True) == ["case: eqP."]
    on_eq = "  ============================\n  (if a == b then 1 else 0) = 0"
    assert scrutinee_tactics(on_eq, ssreflect=True)[-1] == "case: eqP."
    # no parenthesis closes what was never opened
    assert scrutinees("  ============================\n  f x) = if") == []


def test_a_longer_search_may_ask_coq_search_more_often() -> None:
    """The cap on ``Search`` queries grows with the budget (at 10 CPU s it is the old 8)."""
    from proof_orchestrator.coq.strategies.search import lemma_queries

    assert lemma_queries(2) == lemma_queries(10) == 8
    assert lemma_queries(40) == 32
    assert lemma_queries(160) == 128
