"""Premises found by Coq's own ``Search``, over the constants of the goal as Coq sees them.

Goals are displayed with notations (``0 + x == x``), so a ranking over the
identifiers of the displayed text sees only ``x``. Printed without notations
the same goal is ``Qeq (Qplus 0 x) x``: its constants are what a lemma about
it must mention. :func:`plain_goal` asks the session for that form (the
option is unset just for the query), and :class:`LemmaSearch` runs
``Search Qeq Qplus.`` in the session, so what comes back is exactly what is
in scope at the hole, whatever the notations and modules (position-faithful:
nothing declared after the hole exists yet). The lemmas are ranked by how
well their conclusion's constants match the goal's, and the best few become
``apply``/``rewrite`` candidates in the search.

That query needs a lemma to mention every constant it names, so it misses the
general rules a proof starts with: ``RInt f a b = l`` follows from
``is_RInt f a b l`` (``is_RInt_unique``), which mentions none of the goal's
``PSeries``. :meth:`LemmaSearch.appliers` asks the other question, which
lemmas conclude with the goal's shape (``Search headconcl:(eq (RInt _ _ _) _).``,
from :func:`head_pattern`), and offers them to ``apply``.

A ``Search`` costs tens of milliseconds in a file that loads the reals, so
results are cached per conclusion and the number of searches per attempt is
capped.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from ...errors import OrchError
from ..session import NO_NOTATIONS, CoqSession
from ..syntax import split_top_level

__all__ = [
    "BINDERS",
    "GENERIC",
    "LemmaSearch",
    "PlainGoal",
    "conclusion",
    "constants",
    "covers",
    "head_pattern",
    "plain_goal",
    "premise_tactics",
    "search_entries",
]

#: an identifier; not an existential variable (``?l``) nor a part of a qualified name
_IDENT = re.compile(r"(?<![\w'.?])([A-Za-z_][\w']*(?:\.[A-Za-z_][\w']*)*)")
BINDERS = re.compile(r"\b(?:forall|exists|fun)\s+([^,]*?)\s*(?:,|=>)")
_KEYWORDS = frozenset(
    [
        "forall",
        "exists",
        "fun",
        "match",
        "with",
        "end",
        "as",
        "in",
        "return",
        "let",
        "if",
        "then",
        "else",
        "fix",
        "cofix",
        "Prop",
        "Set",
        "Type",
        "SProp",
    ]
)
#: constants too common to narrow a ``Search`` (still used for ranking)
GENERIC = frozenset(["eq", "iff", "and", "or", "not", "ex", "True", "False", "all"])
#: relations ``rewrite`` can use: ``eq``, ``iff`` and, by their names, setoid equalities
#: (``Qeq``, ``meq``, ``Equal``, ``equiv``)
_EQUATION = re.compile(r"^(?:eq|iff)$|eq$|Eq$|^Equal|equiv|Equiv")
#: mathcomp's extensional equalities (``=i``, ``=1``, ``=2``): ssreflect's ``rewrite``
#: rewrites with the equation under them, Coq's does not
_SSR_EQUATIONS = frozenset(["eq_mem", "eqfun", "eqrel"])
_ENTRY = re.compile(r"^([A-Za-z_][\w'.]*):\s", re.M)
_GOALS_HEADER = re.compile(r"^\d+ (?:focused )?goals?\b")
_GOAL_SPLIT = re.compile(r"\n\s*goal \d+(?: \(ID \d+\))? is:\n")


@functools.lru_cache(maxsize=4096)
def conclusion(statement: str) -> str:
    """What a statement concludes: past its ``forall`` binders and its premises.
    (Cached: the same statements come back from goal to goal; 12,641 calls in a bank.)"""
    text = " ".join(statement.split())
    for _ in range(20):
        if text.startswith("forall "):
            pieces = split_top_level(text, ",")
            if len(pieces) < 2:
                return text
            text = ",".join(pieces[1:]).strip()
            continue
        pieces = split_top_level(text, "->")
        if len(pieces) < 2:
            return text
        text = pieces[-1].strip()
    return text


_BINDER_START = re.compile(r"\b(?:forall|exists|fun)\s+")
_NAME = re.compile(r"[A-Za-z_][\w']*")


def _binder_text(text: str, start: int) -> str:
    """The binders from ``start`` to the ``,`` or ``=>`` that ends them (outside brackets)."""
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return text[start:index]
        elif depth == 0 and (char == "," or text.startswith("=>", index)):
            return text[start:index]
    return text[start:]


def bound_names(text: str) -> set[str]:
    """The names bound by ``forall``/``exists``/``fun`` in ``text``.

    ``forall x y : Q,`` binds x and y; ``forall (p q : Q) (_ : Qle p q),`` binds
    p and q (not ``Q``, not ``Qle``); ``forall {V : T} (f : forall _ : R, V) (a b : R),``
    binds V, f, a and b (a comma inside a binder's type does not end the binders).
    """
    return set(_bound_names(text))


@functools.lru_cache(maxsize=4096)
def _bound_names(text: str) -> frozenset[str]:
    bound: set[str] = set()
    for match in _BINDER_START.finditer(text):
        binders = _binder_text(text, match.end()).strip()
        if not binders.startswith(("(", "{", "`", "[")):
            bound.update(_NAME.findall(split_top_level(binders, ":")[0]))
            continue
        depth = 0
        group = ""
        for char in binders:
            if char in "([{":
                depth += 1
                if depth == 1:
                    group = ""
                    continue
            elif char in ")]}":
                depth -= 1
                if depth == 0:
                    bound.update(_NAME.findall(split_top_level(group, ":")[0]))
                    continue
            if depth >= 1:
                group += char
    return frozenset(bound)


def constants(text: str, local: frozenset[str] = frozenset()) -> list[str]:
    """The constants ``text`` mentions, in order, without bound or local names."""
    bound = set(local) | bound_names(text)
    found: list[str] = []
    for name in _IDENT.findall(text):
        if name in bound or name in _KEYWORDS or name in found:
            continue
        found.append(name)
    return found


@dataclass(frozen=True, slots=True)
class PlainGoal:
    """The first goal printed without notations."""

    hypotheses: frozenset[str]
    conclusion: str
    #: the constants the hypotheses' types mention
    context: frozenset[str] = frozenset()

    @property
    def constants(self) -> list[str]:
        return constants(self.conclusion, self.hypotheses)


def parse_plain_goal(shown: str) -> PlainGoal | None:
    first = _GOAL_SPLIT.split(shown.strip())[0]
    lines = first.splitlines()
    bar = next((i for i, line in enumerate(lines) if line.strip().startswith("====")), None)
    if bar is None:
        return None
    names: set[str] = set()
    types: list[str] = []
    for line in lines[:bar]:
        if _GOALS_HEADER.match(line):
            continue  # ``1 focused goal (shelved: 1)``: no hypothesis
        if ":" in line and not line.startswith(" " * 4):
            head, kind = line.split(":", 1)
            names.update(n for n in re.split(r"[,\s]+", head.strip()) if n)
            types.append(kind)
        elif types:
            types[-1] += " " + line
    context = frozenset(c for kind in types for c in constants(kind, frozenset(names)))
    return PlainGoal(frozenset(names), " ".join(" ".join(lines[bar + 1 :]).split()), context)


async def plain_goal(session: CoqSession) -> PlainGoal | None:
    """The session's first goal, at its current state, printed without notations."""
    try:
        shown = await session.query("Show.", options=NO_NOTATIONS, timeout=10)
    except OrchError:
        return None
    return parse_plain_goal(shown)


def search_entries(output: str) -> list[tuple[str, str]]:
    """``(name, statement)`` pairs of a ``Search`` output."""
    if re.search(r"^Error:", output, re.M):
        return []  # a constant Search does not know: no entries, not an entry "Error"
    starts = [m for m in _ENTRY.finditer(output) if m.group(1) not in ("Warning", "Info")]
    entries: list[tuple[str, str]] = []
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(output)
        entries.append((match.group(1), " ".join(output[match.end() : end].split())))
    return entries


def _score(goal: PlainGoal, statement: str, mentioned: list[str] | None = None) -> float:
    """How well a lemma fits: Jaccard overlap of the conclusions' constants, a bonus
    for the same head, and a smaller one for premises that the hypotheses can meet.

    ``mentioned`` is ``goal.constants``, when the caller has it already.
    """
    if mentioned is None:
        mentioned = goal.constants
    variables = frozenset(bound_names(statement))
    end = conclusion(statement)
    theirs = constants(end, variables)
    if not theirs:
        return 0.0
    mine = set(mentioned)
    overlap = len(mine & set(theirs)) / len(mine | set(theirs))
    score = overlap + (0.5 if mentioned and theirs[0] == mentioned[0] else 0.0)
    hypotheses = re.findall(r"\(_ :([^()]*(?:\([^()]*\)[^()]*)*)\)", statement)
    needed = {c for h in hypotheses for c in constants(h, variables)}
    if needed:
        met = len(needed & (goal.context | mine)) / len(needed)
        score += 0.25 * met - 0.25 * (1 - met)
    return score


#: heads whose first argument's shape is what a lemma must match (``eq (RInt _ _ _) _``)
_SEE_THROUGH = frozenset(["eq", "iff", "is_true", "not"])


def _terms(text: str) -> list[str]:
    """The top-level terms of an application: ``f (g x) y`` is ``f``, ``(g x)``, ``y``."""
    terms: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char.isspace() and depth == 0:
            if current:
                terms.append(current)
            current = ""
            continue
        current += char
    if current:
        terms.append(current)
    return terms


def _unwrap(term: str) -> str:
    """``term`` without the parentheses around all of it."""
    term = term.strip()
    while term.startswith("(") and term.endswith(")") and len(_terms(term)) == 1:
        term = term[1:-1].strip()
    return term


def _skeleton(term: str, local: frozenset[str]) -> str | None:
    """``h _ _`` for an application of a constant ``h`` to two arguments; None otherwise."""
    parts = _terms(_unwrap(term))
    if not parts or not re.fullmatch(r"[A-Za-z_][\w'.]*", parts[0]):
        return None
    if parts[0] in local or parts[0] in _KEYWORDS:
        return None
    return " ".join([parts[0]] + ["_"] * (len(parts) - 1))


def head_pattern(goal: PlainGoal) -> str | None:
    """A ``Search headconcl:`` pattern for the lemmas that conclude what ``goal`` does.

    The head constant with every argument a hole. Under ``eq``, ``iff``,
    ``is_true`` and ``not``, which head too many lemmas to narrow anything, the
    first argument that applies a constant keeps its own head
    (``eq (RInt _ _ _) _``), and without one there is no pattern. None too when
    the conclusion is not an application of a constant (a hypothesis ``P x``,
    a ``forall`` or an implication, which ``intros`` opens first).
    """
    if conclusion(goal.conclusion) != " ".join(goal.conclusion.split()):
        return None
    local = goal.hypotheses | frozenset(bound_names(goal.conclusion))
    top = _skeleton(goal.conclusion, local)
    if top is None or " " not in top:
        return None
    if top.split()[0] not in _SEE_THROUGH:
        return top
    parts = _terms(_unwrap(goal.conclusion))
    for index, argument in enumerate(parts[1:]):
        inner = _skeleton(argument, local) if _unwrap(argument) != argument else None
        if inner is not None and " " in inner and inner.split()[0] not in GENERIC | _SEE_THROUGH:
            arguments = ["_"] * (len(parts) - 1)
            arguments[index] = f"({inner})"
            return " ".join([parts[0], *arguments])
    return None


#: an existential variable of a goal (``?If`` after ``eexists``)
_EVAR = re.compile(r"\?[A-Za-z_]")
#: constants a lemma's conclusion may add where the goal has an existential variable
EVAR_ROOM = 2


def covers(goal: PlainGoal, statement: str) -> bool:
    """Whether every constant of the lemma's conclusion is one the goal mentions,
    but for :data:`EVAR_ROOM` of them when the goal has an existential variable
    (``is_RInt f 0 x ?l`` is concluded by ``is_RInt f 0 x (PSeries (PS_Int a) x)``)."""
    missing = _fit(frozenset(goal.constants), statement)[0]
    return missing == 0 or (missing <= EVAR_ROOM and bool(_EVAR.search(goal.conclusion)))


@functools.lru_cache(maxsize=4096)
def _fit(mentioned: frozenset[str], statement: str) -> tuple[int, float, int]:
    """How likely ``apply`` of a lemma is to unify with a goal mentioning ``mentioned``
    (smaller is better): a constant of its conclusion that the goal lacks rarely
    unifies, so the most general conclusions come first (``RInt f a b = l`` before
    ``RInt f a a = zero``), then the most shared constants, then the shortest."""
    theirs = set(constants(conclusion(statement), frozenset(bound_names(statement))))
    shared = len(theirs & mentioned) / max(1, len(theirs | mentioned))
    return len(theirs - mentioned), -shared, len(statement)


@dataclass
class LemmaSearch:
    """``Search`` in the session, cached per conclusion, at most ``max_searches`` per attempt."""

    #: lemmas kept per goal
    k: int = 5
    max_searches: int = 8
    #: entries of one ``Search`` ranked, at most (ranking is Python work: keep it small)
    max_entries: int = 150
    #: constants a query requires, at most
    terms: int = 3
    searches: int = 0
    #: ``Search headconcl:`` queries made by :meth:`appliers`, and their cap
    shape_searches: int = 0
    max_shape_searches: int = 8
    _cache: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    _shape_cache: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    _applier_cache: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    async def premises(self, session: CoqSession, goal: PlainGoal) -> list[tuple[str, str]]:
        """The ``k`` best lemmas in scope for ``goal``, with their statements.

        The lemma under proof is left out (in ``orch eval`` an earlier copy of it
        may be visible under the same name), and so are the goal's hypotheses.
        """
        cached = self._cache.get(goal.conclusion)
        if cached is not None:
            return cached
        mentioned = goal.constants
        narrowing = [c for c in mentioned if c not in GENERIC][: self.terms]
        entries: list[tuple[str, str]] = []
        while narrowing and self.searches < self.max_searches:
            self.searches += 1
            try:
                output = await session.query(
                    f"Search {' '.join(narrowing)}.", options=NO_NOTATIONS, timeout=10
                )
            except OrchError:
                break
            entries = [
                (name, statement)
                for name, statement in search_entries(output)[: self.max_entries]
                if name != session.goal.name and name not in goal.hypotheses
            ]
            if entries:
                break
            narrowing = narrowing[:-1]
        ranked = sorted(entries, key=lambda e: (-_score(goal, e[1], mentioned), len(e[1])))
        best = ranked[: self.k]
        self._cache[goal.conclusion] = best
        return best

    async def appliers(self, session: CoqSession, goal: PlainGoal) -> list[tuple[str, str]]:
        """The ``k`` best lemmas in scope whose conclusion has ``goal``'s shape
        (:func:`head_pattern`), with their statements, best first."""
        ranked = self._applier_cache.get(goal.conclusion)
        if ranked is not None:
            return ranked
        pattern = head_pattern(goal)
        if pattern is None:
            return []
        cached = self._shape_cache.get(pattern)
        if cached is None:
            if self.shape_searches >= self.max_shape_searches:
                return []
            self.shape_searches += 1
            try:
                output = await session.query(
                    f"Search headconcl:({pattern}).", options=NO_NOTATIONS, timeout=10
                )
            except OrchError:
                output = ""
            cached = search_entries(output)[: self.max_entries]
            self._shape_cache[pattern] = cached
        mentioned = frozenset(goal.constants)
        entries = [
            (name, statement)
            for name, statement in cached
            if name != session.goal.name and name not in goal.hypotheses
        ]
        ranked = sorted(entries, key=lambda e: _fit(mentioned, e[1]))[: self.k]
        self._applier_cache[goal.conclusion] = ranked
        return ranked


def premise_tactics(
    goal: PlainGoal, premises: list[tuple[str, str]], ssreflect: bool = False
) -> list[str]:
    """``apply L`` for each premise; ``rewrite`` both ways where it concludes an equation.

    An equation here is ``eq``/``iff`` or, by its name, a setoid equality
    (``Qeq``, ``meq``, ``Equal``), and with ssreflect also ``=i``, ``=1`` and ``=2``
    (:data:`_SSR_EQUATIONS`), whose equation ssreflect's ``rewrite`` finds under them
    (right to left: ``rewrite -L``; Coq's ``rewrite <-`` does not unfold them).
    """

    tactics: list[str] = []
    for name, statement in premises:
        tactics.append(f"apply {name}.")
        if "(_ :" in statement or split_top_level(" ".join(statement.split()), "->")[1:]:
            # a lemma with premises (``Qle_trans``): its instances and premises from the context
            tactics.append(f"eapply {name}; eauto.")
        head = constants(conclusion(statement))[:1]
        if head and _EQUATION.search(head[0]):
            tactics += [f"rewrite {name}.", f"rewrite <- {name}."]
        elif head and ssreflect and head[0] in _SSR_EQUATIONS:
            tactics += [f"rewrite {name}.", f"rewrite -{name}."]
    return tactics
