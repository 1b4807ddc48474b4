"""Coq's own sentence boundaries, and generated Coq sources to compare them with.

The oracle is ``coqc -time``: for every sentence it runs, coqc prints
``Chars START - END [...]``, the byte span its own lexer and parser gave the
sentence. A file that compiles therefore tells us exactly where coqtop (same
lexer, same parser) ends each sentence. The generated sources below are
built to compile, so that every sentence is reported; a source that does not
compile is a bug of the generator and is reported as such.

Used by ``tests/test_coqsyntax_oracle.py`` (a few examples in ``make test``)
and ``bench/split_oracle.py`` (the long run).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from hypothesis import strategies as st

_CHARS = re.compile(r"^Chars (\d+) - (\d+) \[", re.M)


class OracleError(RuntimeError):
    """coqc did not compile a generated source (the generator made invalid Coq)."""


def coq_sentence_spans(
    text: str, *, coqc: str = "coqc", timeout: float = 120
) -> list[tuple[int, int]]:
    """The (start, end) character offsets of every sentence, as coqc splits ``text``."""
    with tempfile.TemporaryDirectory(prefix="orch-oracle-") as folder:
        path = Path(folder) / "Oracle.v"
        path.write_text(text, encoding="utf-8")
        run = subprocess.run(
            [coqc, "-q", "-time", path.name],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    if run.returncode != 0:
        raise OracleError(f"coqc rejected the source:\n{run.stdout}{run.stderr}\n---\n{text}")
    data = text.encode("utf-8")

    def char_offset(byte: int) -> int:
        return len(data[:byte].decode("utf-8"))

    return [(char_offset(int(a)), char_offset(int(b))) for a, b in _CHARS.findall(run.stdout)]


# -- generated sources ---------------------------------------------------------

_WORDS = st.sampled_from(["a", "b.", "c .", "x...", "Qed.", "..", '"', "(*", "*)", "é", "-", "{"])


@st.composite
def comments(draw: st.DrawFn, depth: int = 0) -> str:
    """A comment, possibly nested, with periods, strings and tricky characters inside."""
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(
            st.sampled_from(["word", "string", "nested"] if depth < 2 else ["word", "string"])
        )
        if kind == "word":
            word = draw(_WORDS)
            if word in ('"', "(*", "*)"):
                word = "."  # unbalanced ones would change the comment's extent
            parts.append(word)
        elif kind == "string":
            parts.append(draw(st.sampled_from(['"a. *) b"', '"" ""', '"x "" (* y."'])))
        else:
            parts.append(draw(comments(depth + 1)))
    return "(* " + " ".join(parts) + " *)"


@st.composite
def gaps(draw: st.DrawFn) -> str:
    """What may separate two sentences: blanks, newlines, comments."""
    pieces = [draw(st.sampled_from([" ", "\n", "  ", "\n\n  ", "\t"]))]
    if draw(st.booleans()):
        pieces.append(draw(comments()))
        pieces.append(draw(st.sampled_from([" ", "\n"])))
    return "".join(pieces)


def _inner_space(draw: st.DrawFn) -> str:
    """Space inside a sentence, between tokens: sometimes a comment."""
    return draw(st.sampled_from([" ", " ", "\n    ", " (* in. *) ", " (* (* a. *) b. *) "]))


@st.composite
def conj_proof(draw: st.DrawFn, name: str) -> str:
    """A lemma about nested conjunctions, proved with bullets, braces, selectors or ``...``."""
    size = draw(st.integers(2, 3))
    statement = " /\\ ".join(["True"] * size)
    ellipsis = draw(st.booleans())
    ending = draw(st.sampled_from(["Qed.", "Defined.", "Admitted." if not ellipsis else "Qed."]))
    opener = "Proof with auto." if ellipsis else "Proof."
    gap = draw(gaps())
    glue = draw(st.sampled_from(["", " ", "\n  "]))
    body: list[str] = []
    style = draw(st.sampled_from(["bullets", "braces", "selector", "flat"]))
    if ellipsis:
        body.append(
            draw(st.sampled_from(["repeat split...", "intros...", "split; [ | split ]..."]))
        )
        if size == 2 and body[-1].startswith("split;"):
            body[-1] = "split..."
    elif style == "bullets":
        marks = draw(st.sampled_from([("-", "+"), ("--", "**"), ("*", "-"), ("+", "++")]))
        body.append("split.")
        body.append(f"{marks[0]}{glue}exact I.")
        if size == 2:
            body.append(f"{marks[0]}{glue}exact I.")
        else:
            body.append(f"{marks[0]}{glue}split.")
            body.append(f"{marks[1]}{glue}exact I.")
            body.append(f"{marks[1]}{glue}exact I.")
    elif style == "braces":
        body.append("split.")
        body.append("{" + glue + "exact I. }")
        body.append(
            "{" + glue + ("exact I. }" if size == 2 else "split. { exact I. } { exact I. } }")
        )
    elif style == "selector":
        body.append("split.")
        selector = draw(st.sampled_from(["2:{", "2: {", "2 :{"]))
        body.append(selector + glue + ("exact I." if size == 2 else "split; exact I.") + " }")
        body.append("exact I.")
    else:
        body.append("repeat split; exact I.")
    if ending == "Admitted.":
        body = body[:1]
    lines = [f"Lemma {name} : {statement}.", opener, *body, ending]
    return gap.join(lines)


@st.composite
def sentences(draw: st.DrawFn, index: int) -> str:
    """One chunk of a source: a few sentences of one kind."""
    name = f"n{index}"
    kind = draw(
        st.sampled_from(
            [
                "conj",
                "definition",
                "string",
                "notation",
                "infix",
                "recursive",
                "qualified",
                "ellipsis_def",
                "deprecated",
            ]
        )
    )
    sp = _inner_space(draw)
    if kind == "conj":
        return str(draw(conj_proof(name)))
    if kind == "definition":
        value = draw(
            st.sampled_from(["1.5", "Nat.add 1 2", "List.length (cons 1 nil)", "(fun x => x) 0"])
        )
        if value == "1.5":
            return f"Definition {name} := 1{sp}."  # a number followed by a blank period
        return f"Definition {name} :={sp}{value}."
    if kind == "string":
        literal = draw(
            st.sampled_from(['"a. b"', '"(* not a comment. "', '"q "" q."', '"."', '"x.\ny."'])
        )
        return f"Definition {name} : string :={sp}{literal}."
    if kind == "notation":
        return (
            f'Notation "x +{index}. y" := (Nat.add x y) (at level 50, left associativity).'
            + draw(gaps())
            + f"Check 1 +{index}. 2{sp}."
        )
    if kind == "infix":
        glue = draw(st.sampled_from([" ", "\n"]))
        return (
            f'Infix "*{index}." := Nat.mul (at level 40).{glue}Definition {name} := 3 *{index}. 4.'
        )
    if kind == "recursive":
        return (
            f'Notation "[{index}| x ; .. ; y ]" := (cons x .. (cons y nil) ..).'
            + draw(gaps())
            + f"Check [{index}| 1 ; 2 ]."
        )
    if kind == "qualified":
        return f"Check{sp}Nat.add. Check List.map{sp}."
    if kind == "deprecated":
        # strings of attributes declare no token (found by the sweep, Reals/RIneq.v)
        return (
            f"Definition {name} := 0.\n"
            f'#[deprecated(since="8.16",note="Use {name}.")]\nNotation old{index} := {name}.'
            + draw(gaps())
            + f"Check {name}.{sp}Check old{index}."
        )
    # a definition closed by an ellipsis tactic and Defined (issue 14)
    return f"Definition {name} : forall x : nat, x = x.\nProof with auto.\n  intros x...\nDefined."


@st.composite
def coq_sources(draw: st.DrawFn) -> str:
    """A whole source that compiles: a header, then chunks separated by gaps."""
    chunks = [draw(sentences(i)) for i in range(draw(st.integers(1, 5)))]
    out = [
        "Require Import Coq.Strings.String.",
        "Open Scope string_scope.",
        "Open Scope nat_scope.",
    ]
    for chunk in chunks:
        out.append(draw(gaps()))
        out.append(chunk)
    out.append(draw(st.sampled_from(["", "\n", "\n(* the end. *)\n"])))
    return "\n".join(out[:3]) + "".join(out[3:])
