"""Proofs by analogy: a neighbour's proof, with its names carried over to the goal.

The finished proofs the goal may see (:mod:`..learning`: the file's own above
the hole, the project files it imports, the libraries its session loads) are
ranked by how alike their statements are to the goal's. A near neighbour's
proof is tried as it is, and adapted along the analogy between the two
statements:

1. Both statements are printed without notations (the goal at its root with
   ``Show``, the neighbour with ``Check @name``) and their identifiers are
   aligned (:func:`token_map`): where the neighbour has ``fsetU`` the goal has
   ``fsetI``. The statements as written are aligned too, for the names of
   hypotheses and binders.
2. The proof's identifiers are renamed along that map (:func:`rename`): a
   name that contains a mapped constant changes with it (``in_fsetU`` becomes
   ``in_fsetI``).
3. Each lemma renamed so is compared with its new name's statement, and
   what differs there joins the map (``in_fsetU`` ends in ``orb`` where
   ``in_fsetI`` ends in ``andb``), so ``orbC`` becomes ``andbC``.

Every candidate is checked by the prover from the goal's root like any other
(one-sentence scripts eight at a time in one sentence); nothing unchecked is
ever a result.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
import time
from collections import OrderedDict
from collections.abc import Iterable

from ...errors import OrchError
from ...goals import Budget, Goal, Outcome
from ...learn import ProofExample
from ...provers.base import TacticStatus
from ...strategies.base import StrategyDefaults, StrategyResult
from ..learning import LEARNING
from ..script import passes_gate
from ..session import NO_NOTATIONS, CoqSession
from ..syntax import split_sentences
from .lemma_search import bound_names, plain_goal
from .micro import FixedScripts

__all__ = [
    "AnalogyStrategy",
    "adapted_scripts",
    "name_morph",
    "rename",
    "segment_pairs",
    "token_map",
]

_IDENT = re.compile(r"[A-Za-z_][\w']*")
_KEYWORDS = frozenset(
    [
        "forall",
        "fun",
        "exists",
        "match",
        "with",
        "end",
        "let",
        "in",
        "if",
        "then",
        "else",
        "return",
        "as",
        "Type",
        "Prop",
        "Set",
        "Lemma",
        "Theorem",
        "Fact",
        "Remark",
        "Corollary",
        "Proposition",
        "Example",
        "Local",
        "Global",
    ]
)
#: renamed lemmas compared with their new names' statements, at most
SECOND_ORDER = 2
#: a mapped constant is also renamed inside longer names when it is at least this long
MIN_PART = 3
#: names the alignment left unpaired are paired when spelled at least this alike
SPELLED_ALIKE = 0.8
#: the header of a declaration, left out of the statement's alignment
_HEADER = re.compile(r"^\s*(?:#\[[^\]]*\]\s*)?(?:[A-Z][a-z]+\s+)*?[A-Z][a-z]+\s+[\w'.]+\s*")


def _idents(text: str) -> list[str]:
    return [w for w in _IDENT.findall(text) if w not in _KEYWORDS]


def token_map(neighbour: str, goal: str) -> dict[str, str]:
    """Identifier pairs where two texts differ in the same place (``fsetU`` -> ``fsetI``).

    Names found in one text only and spelled alike (:data:`SPELLED_ALIKE`) pair
    first; then the identifier sequences are aligned (``difflib``) and every
    replaced run of equal length pairs its identifiers one to one. A name
    already paired keeps its first partner.
    """
    return dict(_token_pairs(neighbour, goal))


@functools.lru_cache(maxsize=4096)
def _token_pairs(neighbour: str, goal: str) -> tuple[tuple[str, str], ...]:
    """:func:`token_map` as pairs, kept: a goal meets the same neighbours at every
    attempt, and the alignment is the costliest part of adapting one."""
    a, b = _idents(neighbour), _idents(goal)
    found: dict[str, str] = {}
    taken: set[str] = set()
    # names in one text only, spelled alike (``ex_series``, ``ex_pseries``), pair first:
    # the alignment pairs by position, which extra arguments (``x``) shift
    only_a = [x for x in dict.fromkeys(a) if x not in b and len(x) >= MIN_PART]
    only_b = [y for y in dict.fromkeys(b) if y not in a and len(y) >= MIN_PART]
    scored = sorted(
        ((difflib.SequenceMatcher(a=x, b=y).ratio(), x, y) for x in only_a for y in only_b),
        key=lambda item: -item[0],
    )
    for ratio, old, new in scored:
        if ratio < SPELLED_ALIKE:
            break
        if old not in found and new not in taken:
            found[old] = new
            taken.add(new)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace" or i2 - i1 != j2 - j1:
            continue
        for old, new in zip(a[i1:i2], b[j1:j2], strict=True):
            if old != new and old not in found and new not in taken:
                found[old] = new
                taken.add(new)
    return tuple(found.items())


def rename(script: str, mapping: dict[str, str], whole_only: Iterable[str] = ()) -> str:
    """``script`` with its identifiers renamed along ``mapping``.

    A name equal to a key is replaced; a longer name containing a key of at
    least :data:`MIN_PART` characters has that part replaced (``in_fsetU``),
    except for the keys in ``whole_only`` (bound variables: ``x`` in ``max``
    is not ``x``).
    """
    whole = set(whole_only)
    parts = sorted(
        ((k, v) for k, v in mapping.items() if len(k) >= MIN_PART and k not in whole),
        key=lambda kv: -len(kv[0]),
    )
    segments = segment_pairs((k, v) for k, v in mapping.items() if k not in whole)

    def one(match: re.Match[str]) -> str:
        word = match.group(0)
        if word in mapping:
            return mapping[word]
        for old, new in parts:
            if old in word:
                return word.replace(old, new)
        pieces = word.split("_")
        if len(pieces) > 1 and any(p in segments for p in pieces):
            return "_".join(segments.get(p, p) for p in pieces)
        return word

    return _IDENT.sub(one, script)


def segment_pairs(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The one ``_``-separated segment in which each pair of names differs
    (``ex_series`` -> ``ex_pseries``: ``series`` -> ``pseries``), so that the
    other names built on it follow (``is_series_plus`` -> ``is_pseries_plus``).

    Only pairs with the same number of segments differing in exactly one, of at
    least :data:`MIN_PART` characters, count; a segment keeps its first partner.
    """
    found: dict[str, str] = {}
    for old, new in pairs:
        a, b = old.split("_"), new.split("_")
        if len(a) < 2 or len(a) != len(b):
            continue
        differ = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
        if len(differ) == 1 and len(differ[0][0]) >= MIN_PART and len(differ[0][1]) >= MIN_PART:
            found.setdefault(*differ[0])
    return found


#: the binder groups before a declaration's colon: ``(s1 s2 : T)``, ``{x}``, ``[H : P]``
_GROUP = re.compile(r"[({\[]\s*([A-Za-z_][\w' ]*?)\s*(?::[^(){}\[\]]*)?[)}\]]")


def _declared_binders(statement: str) -> set[str]:
    """The names the binder groups of a declaration bind (``Lemma f (x y : T) {z} :``)."""
    head = _HEADER.sub("", statement)
    depth, cut = 0, len(head)
    for index, char in enumerate(head):
        depth += char in "({["
        depth -= char in ")}]"
        if char == ":" and depth == 0:
            cut = index
            break
    names: set[str] = set()
    for group in _GROUP.findall(head[:cut]):
        names.update(_IDENT.findall(group))
    return names


#: statements printed by ``Check``, per file and name (the same neighbours and lemmas
#: come back for every attempt on a hole and for the holes around it)
_TYPES: OrderedDict[tuple[object, ...], str | None] = OrderedDict()
_TYPES_SIZE = 4096


async def _type_of(session: CoqSession, name: str, origin: str) -> str | None:
    """The statement of constant ``name`` printed without notations, or None."""
    # a constant's statement is the same at every hole of a file: one ``Check`` a file
    key = (session.prover.flags, session.prover.cwd, str(session.goal.file), name, origin)
    if key in _TYPES:
        _TYPES.move_to_end(key)
        return _TYPES[key]
    found = await _check(session, name, origin)
    _TYPES[key] = found
    while len(_TYPES) > _TYPES_SIZE:
        _TYPES.popitem(last=False)
    return found


async def _check(session: CoqSession, name: str, origin: str) -> str | None:
    for qualified in (name, f"{origin}.{name}" if origin else ""):
        if not qualified:
            continue
        try:
            shown = await session.query(f"Check @{qualified}.", options=NO_NOTATIONS, timeout=5)
        except OrchError:
            return None
        if "Error" in shown:
            continue
        _, colon, kind = shown.partition(":")
        if colon:
            return " ".join(kind.split())
    return None


async def adapted_scripts(
    session: CoqSession, goal_plain: str, goal_statement: str, example: ProofExample
) -> list[str]:
    """The example's proof as one text, adapted to the goal (see the module's doc),
    first the most adapted; the example as written comes last."""
    script = " ".join(example.script)
    bound = bound_names(example.statement) | _declared_binders(example.statement)
    written = token_map(_HEADER.sub("", example.statement), _HEADER.sub("", goal_statement))
    mapping = {old: new for old, new in written.items() if old in bound}
    theirs = await _type_of(session, example.name, example.origin)
    if theirs is not None and goal_plain:
        for old, new in token_map(theirs, goal_plain).items():
            mapping.setdefault(old, new)
    first = rename(script, mapping, bound)
    found = [first]
    # second order: each renamed lemma against its new name's statement
    renamed = {
        old: new
        for old, new in zip(_IDENT.findall(script), _IDENT.findall(first), strict=False)
        if old != new and old not in bound
    }
    extra: dict[str, str] = {}
    for old, new in list(renamed.items())[:SECOND_ORDER]:
        before = await _type_of(session, old, "")
        after = await _type_of(session, new, "")
        if before is None or after is None:
            continue
        for a, b in token_map(before, after).items():
            if a not in mapping and a not in extra:
                extra[a] = b
    if extra:
        found.insert(0, rename(script, {**mapping, **extra}, bound))
    morph = name_morph(example.name, _declared_name(goal_statement))
    if morph is not None:
        found.append(_morphed(found[0], morph, bound))
    found.append(script)
    return list(dict.fromkeys(found))


def name_morph(neighbour: str, goal: str) -> tuple[str, str] | None:
    """How the goal's name ends where the neighbour's ends otherwise (``fsetUC``,
    ``fsetUA``: ``C`` -> ``A``), when the names differ only in a short ending."""
    if not neighbour or not goal or neighbour == goal:
        return None
    common = next(
        (i for i, (a, b) in enumerate(zip(neighbour, goal, strict=False)) if a != b),
        min(len(neighbour), len(goal)),
    )
    old, new = neighbour[common:], goal[common:]
    if common < 2 or not old or not new or len(old) > 4 or len(new) > 4:
        return None
    return old, new


def _morphed(script: str, morph: tuple[str, str], bound: set[str]) -> str:
    """``script`` with every name that ends like the neighbour's ending like the goal's
    (mathcomp's naming: ``orbC`` for ``fsetUC`` is ``orbA`` for ``fsetUA``)."""
    old, new = morph

    def one(match: re.Match[str]) -> str:
        word = match.group(0)
        if word in bound or word in _KEYWORDS or not word.endswith(old) or word == old:
            return word
        return word[: len(word) - len(old)] + new

    return _IDENT.sub(one, script)


def _declared_name(statement: str) -> str:
    match = _HEADER.match(statement)
    return match.group(0).split()[-1] if match else ""


class AnalogyStrategy(StrategyDefaults):
    """The nearest visible proofs, as written and adapted to the goal's names."""

    name = "analogy"
    weight = "light"
    language = "coq"
    uses_slot = True
    needs_ledger = False

    def __init__(self, neighbours: int = 16, max_sentences: int = 4) -> None:
        self.neighbours = neighbours
        self.max_sentences = max_sentences

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        visible = await LEARNING.visible(session)
        near = visible.nearest(
            goal.statement,
            self.neighbours,
            exclude=(goal.name,),
            max_sentences=self.max_sentences,
        )
        plain = await plain_goal(session)
        goal_plain = plain.conclusion if plain is not None else ""
        singles: list[str] = []
        multiples: list[tuple[str, ...]] = []
        for _, example in near:
            for text in await adapted_scripts(session, goal_plain, goal.statement, example):
                if example.is_one_sentence and text == example.script[0]:
                    continue  # as written, it is ``cached``'s to try
                if example.is_one_sentence:
                    singles.append(text)
                else:
                    multiples.append(_sentences(text, len(example.script)))
        singles = [s for s in dict.fromkeys(singles) if passes_gate(s)]
        found = await FixedScripts(self.name, singles).prove(session, goal, budget)
        tried = found.tactics_tried
        if found.outcome is Outcome.CANDIDATE:
            return found
        seconds = max(1, math.ceil(budget.tactic_seconds))
        outcome = found.outcome
        for sentences in dict.fromkeys(multiples):
            if session.cpu_seconds() - cpu_start >= budget.cpu_seconds:
                outcome = Outcome.TIMEOUT
                break
            if not all(passes_gate(s) for s in sentences):
                continue
            tried += 1
            result = await session.run_script(sentences, session.root, timeout=seconds)
            if result.status is TacticStatus.COMPLETE:
                return StrategyResult(
                    Outcome.CANDIDATE,
                    sentences,
                    tried,
                    session.cpu_seconds() - cpu_start,
                    time.monotonic() - started,
                )
        return StrategyResult(
            outcome,
            (),
            tried,
            session.cpu_seconds() - cpu_start,
            time.monotonic() - started,
            found.message,
        )


def _sentences(text: str, count: int) -> tuple[str, ...]:
    """``text`` (sentences joined by spaces) cut back into its sentences."""
    try:
        parts = tuple(s.code for s in split_sentences(text))
    except OrchError:
        return ()
    return parts if len(parts) == count else ()
