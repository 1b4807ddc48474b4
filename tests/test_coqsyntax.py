"""Sentence splitting: the property that keeps coqtop's reply stream in step."""

from __future__ import annotations

from pathlib import Path

import pytest

from proof_orchestrator.coq.coqtop import CoqTop
from proof_orchestrator.coq.syntax import split_sentences, strip_comments
from proof_orchestrator.errors import SourceSyntaxError


def codes(text: str) -> list[str]:
    return [s.code for s in split_sentences(text)]


def test_nested_comments_hide_periods() -> None:
    text = "Lemma a : True. (* outer (* inner. *) still. *) Proof. exact I. Qed."
    assert codes(text) == ["Lemma a : True.", "Proof.", "exact I.", "Qed."]


def test_string_inside_comment_can_contain_comment_closer() -> None:
    text = '(* a "*)" is not the end. *) Check 1.'
    assert codes(text) == ["Check 1."]


def test_strings_with_doubled_quotes_and_periods() -> None:
    text = 'Definition s := "a. "" b.". Check s.'
    assert codes(text) == ['Definition s := "a. "" b.".', "Check s."]


def test_qualified_names_and_numbers_are_not_terminators() -> None:
    text = "Check List.map. Check Nat.add 1 2. Check 1.5e3%float."
    assert len(codes(text)) == 3


def test_recursive_notation_dots() -> None:
    text = 'Notation "[ x ; .. ; y ]" := (cons x .. (cons y nil) ..). Check 1.'
    assert codes(text) == ['Notation "[ x ; .. ; y ]" := (cons x .. (cons y nil) ..).', "Check 1."]


def test_bullets_and_braces_are_sentences_of_their_own() -> None:
    text = (
        "induction n.\n- simpl. reflexivity.\n- { simpl.\n    ++ auto. }\n* now auto.\n2: { auto. }"
    )
    assert codes(text) == [
        "induction n.",
        "-",
        "simpl.",
        "reflexivity.",
        "-",
        "{",
        "simpl.",
        "++",
        "auto.",
        "}",
        "*",
        "now auto.",
        "2: {",
        "auto.",
        "}",
    ]


def test_unterminated_comment_is_an_error() -> None:
    with pytest.raises(SourceSyntaxError):
        split_sentences("Check 1. (* never closed")


def test_trailing_text_without_period_is_an_error() -> None:
    with pytest.raises(SourceSyntaxError):
        split_sentences("Check 1. Check 2")


def test_code_puts_a_sentence_on_one_line_without_comments() -> None:
    (sentence,) = split_sentences("intros (* names *)\n  n\n  m.")
    assert sentence.code == "intros n m."
    assert strip_comments('a (* b "c" *) "(* d *)"') == 'a   "(* d *)"'


async def test_every_sentence_of_a_real_stdlib_file_is_accepted_by_coqtop() -> None:
    """The splitter agrees with coqtop's own parser on a real library file."""
    source = Path("/usr/lib/ocaml/coq/theories/Bool/Bool.v").read_text()
    sentences = split_sentences(source)
    assert len(sentences) > 400
    async with CoqTop() as top:
        for sentence in sentences:
            before = top.current
            reply = await top.send(sentence.text, 60)
            assert reply.state > before, f"coqtop rejected {sentence.code!r}: {reply.output}"
