"""Sentence and script variants for the ``repair`` strategy (:mod:`.repair`).

Each function turns a piece of an old proof into forms that survive one kind
of change to what the proof relies on. None of them is trusted: every
variant is a script that Coq runs to the end before it is a candidate.

* :func:`sentence_variants`: one sentence, where a definition no longer
  unfolds (``simpl``/``cbn``, ``unfold``; for an ``Opaque`` one, which
  ``unfold`` and ``intros`` refuse, ``with_strategy transparent`` around the
  sentence or ``cbv delta``), a lemma gained or reordered a hypothesis
  (``eapply``/``eauto``), a hint disappeared (``eauto using`` the lemmas in
  scope).
* :func:`argument_variants`: a lemma applied to explicit arguments whose
  number or order changed: an argument added (``_`` or ``ltac:(eauto)``),
  dropped, or two neighbours swapped.
* :func:`reintroductions`: a proof whose own statement changed the order of
  its premises or gained one: introduce the new statement, then ``revert`` to
  the order the old script expects (a premise dropped, or two neighbours
  swapped), ahead of the old script.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence

from ..syntax import split_top_level

__all__ = [
    "argument_variants",
    "opaque_names",
    "refused_name",
    "reintroductions",
    "sentence_variants",
    "statement_shape",
    "without_names",
]

_IDENT = r"[A-Za-z_][\w']*(?:\.[A-Za-z_][\w']*)*"
_OPAQUE = re.compile(
    r"(?m)(?:^|\.\s)\s*(?:#\[[^\]]*\]\s*)?(?:Global\s+|Local\s+)?Opaque\s+([^.]+)\."
)
_IS_OPAQUE = re.compile(rf"({_IDENT}) is opaque")
_UNFOLD = re.compile(rf"\bunfold\s+({_IDENT}(?:\s*,\s*{_IDENT})*)")
_REFUSED = re.compile(
    rf"@?({_IDENT}) cannot be used as a hint|The reference ({_IDENT}) was not found"
)
_USING = re.compile(r"(\s+using\s+)([^.;|\]\)]+)")
#: the most premises a statement may have for its reintroductions to be tried
_MAX_PREMISES = 6


def opaque_names(text: str, error: str = "") -> frozenset[str]:
    """Constants made ``Opaque`` in ``text``, and the one ``error`` says is opaque."""
    names = {n for group in _OPAQUE.findall(text) for n in group.split()}
    names |= set(_IS_OPAQUE.findall(error))
    return frozenset(names)


def refused_name(message: str) -> str | None:
    """The name Coq refused in a ``using`` list: not a usable hint, or not in scope."""
    found = _REFUSED.search(message)
    return (found.group(1) or found.group(2)) if found else None


def without_names(sentence: str, names: Collection[str]) -> str:
    """``sentence`` with ``names`` left out of its ``using`` lists."""
    if not names:
        return sentence

    def kept(match: re.Match[str]) -> str:
        listed = [n.strip() for n in match.group(2).split(",")]
        rest = [n for n in listed if n and n not in names]
        if not rest:  # a list left empty: the tactic without its ``using`` clause
            return " " if match.group(2).endswith(" ") else ""
        trailing = " " if match.group(2).endswith(" ") else ""
        return f"{match.group(1)}{', '.join(rest)}{trailing}"

    return _USING.sub(kept, sentence)


def _cbv(names: Sequence[str]) -> str:
    return f"cbv beta iota zeta delta [{' '.join(names)}]"


def _unfolding(name: str, opaque: Collection[str]) -> str:
    """Unfold ``name`` everywhere (``cbv delta`` when it is opaque: ``unfold`` refuses)."""
    return f"{_cbv([name])} in *" if name in opaque else f"unfold {name} in *"


def sentence_variants(
    sentence: str, unfold: Sequence[str], using: str, opaque: Collection[str] = ()
) -> Iterator[str]:
    """Forms of one sentence that survive the usual changes to what it relies on."""
    body = sentence.rstrip().removesuffix(".")
    if not body or body in ("-", "+", "*", "{", "}") or body.startswith(("-", "+", "*", "{")):
        return
    if opaque:
        # tactics do not unfold an opaque ``D``; for the length of this sentence they may
        yield f"with_strategy transparent [{' '.join(sorted(opaque))}] ({body})."

        # ``unfold D`` of an opaque ``D`` fails: ``cbv delta [D]`` still unfolds it
        def as_cbv(match: re.Match[str]) -> str:
            names = [n.strip() for n in match.group(1).split(",")]
            return _cbv(names) if set(names) & set(opaque) else match.group(0)

        cbv = _UNFOLD.sub(as_cbv, body)
        if cbv != body:
            yield f"{cbv}."
    yield f"simpl in *; {body}."
    yield f"cbn in *; {body}."
    if opaque:
        # the definitions that reach the opaque one, unfolded with it
        yield f"{_cbv(list(dict.fromkeys([*unfold, *sorted(opaque)])))} in *; {body}."
    for name in unfold:
        yield f"{_unfolding(name, opaque)}; {body}."
    eager = re.sub(r"\bapply\b", "eapply", body)
    eager = re.sub(r"\bauto\b", "eauto", eager)
    if eager != body:
        yield f"{eager}; eauto."
    # a lemma applied to explicit arguments whose order or number changed
    bare = re.sub(r"\b(e?apply|exact)\s+\(\s*([\w'.]+)[^()]*\)", r"eapply \2", body)
    if bare != body:
        yield f"{bare}; eauto."
    yield f"{body}; eauto."
    yield f"{body}; auto with *."
    if using:
        yield f"{body}; eauto using {using}."
        if re.search(r"\b(e?auto|trivial|easy)\b", body):
            yield re.sub(r"\b(e?auto|trivial|easy)\b", f"eauto using {using}", body) + "."


def _binder_names(binders: str) -> list[str] | None:
    """The names bound by ``forall``'s binders (``k l (m : nat) {A}``); None: a pattern."""
    typed = split_top_level(binders, ":")
    if len(typed) > 1:  # ``forall k l : nat``
        found = typed[0].split()
        ok = found and all(re.fullmatch(r"[A-Za-z_][\w']*", n) for n in found)
        return found if ok else None
    names: list[str] = []
    for group in re.findall(r"\([^()]*\)|\{[^{}]*\}|\[[^\[\]]*\]|[^\s(){}\[\]]+", binders):
        if group[0] in "({[":
            inner = group[1:-1]
            head = inner.split(":", 1)[0] if ":" in inner else inner
            found = head.split()
        elif ":" in group or group.startswith("'"):
            return None
        else:
            found = [group]
        if not found or not all(re.fullmatch(r"[A-Za-z_][\w']*", n) for n in found):
            return None
        names += found
    return names


def statement_shape(statement: str) -> tuple[list[str], int] | None:
    """(names bound by the type's leading ``forall``, number of premises) of a declaration
    sentence (``Lemma l (x : t) : forall k l, A -> B -> C.``); None: not of that shape."""
    head = statement.strip().removesuffix(".")
    pieces = split_top_level(head, ":")
    # the type follows the first top-level colon that is not ``:=``
    for index in range(1, len(pieces)):
        if not pieces[index].startswith("="):
            kind = ":".join(pieces[index:]).strip()
            break
    else:
        return None
    names: list[str] = []
    if kind.startswith("forall "):
        binder_part = split_top_level(kind, ",")
        if len(binder_part) < 2:
            return None
        bound = _binder_names(binder_part[0].removeprefix("forall "))
        if bound is None:
            return None
        names, kind = bound, ",".join(binder_part[1:])
    arrows = split_top_level(kind, "->")
    premises = 0
    for piece in arrows[:-1]:
        if len(split_top_level(piece, ",")) > 1 or re.match(r"\s*(forall|exists|fun)\b", piece):
            break  # a binder whose scope runs over the arrows after it
        premises += 1
    return names, premises


def reintroductions(statement: str) -> list[str]:
    """Sentences that introduce the statement's premises and revert them in another
    order: one per dropped premise, one per swapped pair of neighbours."""
    shape = statement_shape(statement)
    if shape is None:
        return []
    names, premises = shape
    if not 1 <= premises <= _MAX_PREMISES:
        return []
    hyps = [f"Hrepair{i}" for i in range(premises)]
    intro = f"intros {' '.join([*names, *hyps])}"
    out: list[str] = []
    for dropped in range(premises):
        kept = [h for i, h in enumerate(hyps) if i != dropped]
        out.append(f"{intro}; clear {hyps[dropped]}; revert {' '.join([*names, *kept])}.")
    for first in range(premises - 1):
        order = list(hyps)
        order[first], order[first + 1] = order[first + 1], order[first]
        out.append(f"{intro}; revert {' '.join([*names, *order])}.")
    return out


def _arguments(inner: str) -> list[str]:
    return [a for a in split_top_level(inner.strip(), " ") if a.strip()]


def argument_variants(sentence: str, lemmas: Collection[str]) -> Iterator[str]:
    """``sentence`` with one parenthesised application ``(L a b …)`` of a lemma in
    ``lemmas`` given an argument more (``_``, ``ltac:(eauto)``), one less, or two
    neighbours swapped."""
    for match in re.finditer(r"\(", sentence):
        start = match.start()
        depth, end = 0, -1
        for j in range(start, len(sentence)):
            depth += sentence[j] == "("
            depth -= sentence[j] == ")"
            if depth == 0:
                end = j
                break
        if end < 0:
            continue
        parts = _arguments(sentence[start + 1 : end])
        if len(parts) < 2 or parts[0] not in lemmas:
            continue
        name, args = parts[0], parts[1:]
        before, after = sentence[:start], sentence[end + 1 :]

        def written(
            new_args: list[str], name: str = name, before: str = before, after: str = after
        ) -> str:
            return f"{before}({' '.join([name, *new_args])}){after}"

        for position in range(len(args) + 1):
            for filler in ("_", "ltac:(eauto)"):
                yield written([*args[:position], filler, *args[position:]])
        for position in range(len(args)):
            yield written(args[:position] + args[position + 1 :])
        for position in range(len(args) - 1):
            swapped = list(args)
            swapped[position], swapped[position + 1] = swapped[position + 1], swapped[position]
            yield written(swapped)
