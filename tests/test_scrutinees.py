"""The case analyses the search offers on what a goal's conclusion branches on."""

from __future__ import annotations

from proof_orchestrator.coq.strategies.scrutinees import (
    MAX_TACTICS,
    scrutinee_tactics,
    scrutinees,
)

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
    # ``~~ a || b`` is not ``~~ (a || b)``: only the whole is taken apart
    negated = "  ============================\n  (if ~~ a || b then 1 else 0) = 0"
    assert scrutinee_tactics(negated, ssreflect=False) == ["destruct (~~ a || b)."]


def test_nested_and_inner_scrutinees_are_found_at_their_own_depth() -> None:
    goal = (
        "  ============================\n"
        "  match (if b then f n else g n) with\n  | Some k => k\n  | None => 0\n  end = "
        "(match l as l0 return nat with\n  | nil => 0\n  | _ :: _ => 1\n  end)"
    )
    assert scrutinees(goal, limit=3) == [
        ("match", "(if b then f n else g n)"),
        ("if", "b"),
        ("match", "l"),
    ]
    # a parenthesised whole is not wrapped twice; a name needs no parentheses
    assert scrutinee_tactics(goal, ssreflect=False, limit=2) == [
        "destruct (if b then f n else g n).",
        "destruct b.",
    ]


def test_what_would_not_parse_or_is_bound_inside_is_never_offered() -> None:
    """A candidate that does not parse costs the other candidates of its probe."""
    cases = {
        # ssreflect's ``if E is P then``, Coq's ``if E as x return T then``
        "if s is x :: s' then 1 else 0": [("if", "s")],
        "if f n as b return nat then 1 else 0": [("if", "f n")],
        # ``\in`` is no ``in``
        "match x \\in s with\n  | true => 1\n  | false => 0\n  end": [("match", "x \\in s")],
        # a string, a pair of scrutinees, a name bound by forall or by a branch
        'if f "then" then 1 else 0': [],
        "match x, y with\n  | _, _ => 0\n  end": [],
        "forall b : bool, if b then True else True": [],
        "match m x with\n  | Some y => if f y then 1 else 0\n  | None => 0\n  end": [
            ("match", "m x")
        ],
        # no parenthesis closes what was never opened
        "f x) = if": [],
    }
    for conclusion, expected in cases.items():
        assert scrutinees(f"  ============================\n  {conclusion}") == expected, conclusion


def test_hypotheses_are_not_scrutinees_and_an_equality_test_offers_eqP() -> None:
    goal = "  H : if b then P else Q\n  ====================\n  (x <= y) = (x == y) || (x < y)"
    assert scrutinees(goal) == []
    assert scrutinee_tactics(goal, ssreflect=False) == []
    assert scrutinee_tactics(goal, ssreflect=True) == ["case: eqP."]
    on_eq = "  ============================\n  (if a == b then 1 else 0) = 0"
    assert scrutinee_tactics(on_eq, ssreflect=True)[-1] == "case: eqP."
    two = "  =====\n  (if isSome (f a) then 1 else 0) = (if ~~ (g b) then 1 else 0)"
    assert len(scrutinee_tactics(two, ssreflect=True)) == MAX_TACTICS
