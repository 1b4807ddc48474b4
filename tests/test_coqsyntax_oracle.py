"""The sentence splitter against coqc's own sentence spans (the oracle in coq_oracle.py).

Issue 14: ``intros x...`` followed by ``Defined.`` was one sentence for the
splitter and two for coqtop, so every session after it saw a reply nobody
asked for. The cases below are the counter-examples the property test found
(each kept as a regular test), the property test itself on a few generated
sources (``bench/split_oracle.py`` runs it long), and the reproduction through
``orch fill`` with the real prover.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.coq.syntax import declared_tokens, split_sentences

from .coq_oracle import coq_sentence_spans, coq_sources

REPRO = """Definition d : forall x : nat, x = x.
Proof with auto.
  intros x...
Defined.

Lemma t : 1 + 1 = 2.
Admitted.
"""


def spans(text: str) -> list[tuple[int, int]]:
    return [(s.start, s.end) for s in split_sentences(text)]


def codes(text: str) -> list[str]:
    return [s.code for s in split_sentences(text)]


def test_an_ellipsis_ends_a_sentence() -> None:
    assert codes(REPRO)[:4] == [
        "Definition d : forall x : nat, x = x.",
        "Proof with auto.",
        "intros x...",
        "Defined.",
    ]


def test_the_reproduction_splits_as_coqc_does() -> None:
    text = REPRO.replace("Admitted.", "Admitted.\nCheck t.")
    assert spans(text) == coq_sentence_spans(text)


def test_two_periods_never_end_a_sentence() -> None:
    text = 'Notation "[! x ; .. ; y !]" := (cons x .. (cons y nil) ..).\nCheck [! 1 ; 2 !].'
    assert spans(text) == coq_sentence_spans(text)
    assert len(codes(text)) == 2


def test_a_bullet_glued_to_its_tactic_is_a_sentence_of_its_own() -> None:
    # found by the property test: "-exact I." is a bullet and a tactic for coqc
    text = "Lemma a : True /\\ True.\nProof. split. -exact I. -exact I. Qed."
    assert codes(text)[3:5] == ["-", "exact I."]
    assert spans(text) == coq_sentence_spans(text)


def test_repeated_and_glued_bullets_and_braces() -> None:
    text = (
        "Lemma a : True /\\ True /\\ True.\nProof.\n split.\n --exact I.\n"
        " --split.\n  **exact I.\n  ** { exact I. }\nQed."
    )
    assert spans(text) == coq_sentence_spans(text)


def test_a_declared_symbol_ending_with_a_period_is_one_token() -> None:
    # found by hand while reading Coq's lexer, confirmed by coqc: "+." followed by a blank
    text = 'Infix "+." := Nat.add (at level 50).\nDefinition x := 1 +. 2.\nCheck x.'
    assert codes(text)[1] == "Definition x := 1 +. 2."
    assert spans(text) == coq_sentence_spans(text)


def test_declared_tokens_come_from_notation_strings() -> None:
    assert declared_tokens('Infix "+." := Nat.add.') == {"+."}
    assert declared_tokens("Local Notation \"x '=.' y\" := (x = y) (at level 70).") == {"=."}
    assert declared_tokens('Notation "[ x ; .. ; y ]" := (cons x .. (cons y nil) ..).') == set()
    assert declared_tokens('Definition s := "a +. b".') == set()
    assert declared_tokens('Tactic Notation "go." constr(x) := exact x.') == {"go."}


def test_strings_of_attributes_and_abbreviations_declare_no_token() -> None:
    # found by the sweep over theories/ (Reals/RIneq.v): a deprecation note ending
    # with "Rinv_mult." made "rewrite Rinv_mult." run on into the next sentences
    assert declared_tokens('#[deprecated(note="Use Rinv_mult.")] Notation a := b.') == set()
    assert declared_tokens('Notation x := "y." (only parsing).') == set()
    text = (
        '#[deprecated(since="8.16",note="Use eq_refl.")]\nNotation my_refl := eq_refl.\n'
        "Lemma l : 1 = 1.\nProof.\n  apply eq_refl.\n  Show.\nQed."
    )
    assert spans(text) == coq_sentence_spans(text)


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(coq_sources())
def test_generated_sources_split_as_coqc_splits_them(text: str) -> None:
    assert spans(text) == coq_sentence_spans(text)


@pytest.mark.slow
def test_fill_proves_the_goal_after_an_ellipsis_and_defined(tmp_path: Path) -> None:
    """Issue 14's reproduction, with the real coqtop: `t` is proved, nothing desyncs."""
    path = tmp_path / "Repro.v"
    path.write_text(REPRO, encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["fill", str(path), "--db", str(tmp_path / "l.sqlite"), "--json", "--profile", "0"],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[result.stdout.index("{\n") :])
    (goal,) = report["files"][0]["goals"]
    assert (goal["name"], goal["outcome"]) == ("t", "proved"), goal
    assert "nobody asked for" not in result.output
    assert "Admitted." not in path.read_text(encoding="utf-8")
