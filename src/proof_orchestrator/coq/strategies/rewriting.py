"""Rewrite chains: the goal rewritten with the lemmas that fit it, then closed.

Many one-line proofs of a real project are a rewrite chain with the
project's own equations: ``by rewrite !in_fsetI andbC.``,
``by rewrite mem_supp negbK.``. The lemmas come from what the goal can see:

* the lemmas the nearest visible proofs rewrite with (:mod:`..learning`),
  also with their names carried over to the goal (:mod:`.analogy`), and
* the equations and equivalences that premise retrieval ranks best
  (:mod:`.retrieval`).

From the goal's root, after ``intros`` and after the openings of the nearest
proofs (``move=> s1 s2; apply/eq_fset=> x``), a small breadth-first search
rewrites (``rewrite !L``, ``rewrite -L``; ``rewrite <- L`` where ssreflect is
not loaded), keeps the states a rewrite changed (one probe sentence per node
finds them), and tries the closers at every state: ``done`` and ``case: eqP``
with ssreflect, ``reflexivity``, ``auto``, ``easy``, ``tauto`` and
``congruence``. The first chain that leaves no goal is the candidate.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import math
import re
import time
import weakref
from collections.abc import Sequence

from ...errors import OrchError
from ...goals import Budget, Goal, Outcome
from ...learn import Corpus
from ...provers.base import ProofState, TacticStatus
from ...strategies.base import StrategyDefaults, StrategyResult
from ..learning import LEARNING
from ..probe import probe
from ..script import passes_gate
from ..session import CoqSession
from ..syntax import split_sentences, split_top_level
from .analogy import adapted_scripts
from .lemma_search import GENERIC, bound_names, plain_goal
from .micro import FixedScripts
from .retrieval import PremiseIndex, index_for
from .scrutinees import scrutinee_tactics

__all__ = [
    "PLUMBING",
    "RewriteStrategy",
    "interleave",
    "introduced_names",
    "popular_rewrites",
    "rewrite_names",
    "unfoldable",
]

_IDENT = re.compile(r"[A-Za-z_][\w'.]*")
#: a rewrite's clause: up to its sentence's end, a ``;``, a ``|`` or a ``]`` that closes no
#: ``[`` of its own (``rewrite -[ord1]inord_val`` rewrites with ``inord_val`` at the
#: pattern ``ord1``; ``.+1`` and ``M.lemma`` do not end it)
_REWRITE = re.compile(
    r"\b(?:rewrite|rewrite_strat|setoid_rewrite)\b((?:[^;|\[\].]|\.(?!\s|$)|\[[^\[\]]*\])*)"
)
#: words inside a rewrite clause that are not lemmas
_NOT_LEMMAS = frozenset({"in", "at", "by", "as", "with", "using", "fun", "forall", "_"})
#: ssreflect's closers: ``done`` and the boolean reflection idioms of mathcomp
SSR_CLOSERS = (
    "done.",
    "by case: eqP.",
    "by case: ifP.",
    "exact/eqP.",
    "by apply/eqP.",
    "by case/andP.",
    "by case/orP.",
)
PLAIN_CLOSERS = ("reflexivity.", "auto.", "easy.", "tauto.", "congruence.")
#: a rewrite with ssreflect is repeated at most this many more times (``rewrite L 3?L``)
REPEAT = 3
#: the constants of the goal's conclusion offered to ``rewrite /c`` (ssreflect)
MAX_UNFOLDS = 3
#: the nearest proofs whose names are also carried over to the goal (:mod:`.analogy`)
ADAPTED = 3
#: the names the most visible proofs rewrite with, offered from each corpus (the file and
#: the project files it imports; the libraries it loads)
POPULAR = 4
#: equations ranked against each state's own goal, offered at that state (both directions)
STATE_LEMMAS = 2
#: the CPU seconds of a grant for which :attr:`RewriteStrategy.nodes` states are expanded
NODES_SECONDS = 1.0
#: rewrites in a chain, at most, however large the grant
MAX_DEPTH = 5
#: the starting points of the chains: ``intros.`` and the nearest proofs' openings
OPENINGS = 4
#: a node's steps go on past the grant by at most this share of it: they are tried
#: together, and the one a strict stop cuts can be the proof (RegLang's
#: `Neg_correct`: 1.45 CPU s on a 1.2 s grant); without a bound a node's steps at
#: their timeouts took twice the grant (11.4 CPU s of 5.85)
NODE_SLACK = 0.25
#: a statement that can be rewritten with: an equation or an equivalence
_EQUATIONAL = re.compile(r"=|<->")


#: names a script gives to hypotheses: an intro pattern (``=> x Hx``, ``intros n IH``), a
#: ``have``/``set``/``pose``/``remember`` (up to the sentence's end or the next ``;``)
_INTRODUCED = re.compile(
    r"(?:=>|\bintros?\b|\bdestruct\b.*?\bas\b)([^.;]*)"
    r"|\b(?:have|set|pose)\s+([A-Za-z_][\w']*)"
)


def introduced_names(script: str) -> set[str]:
    """The hypothesis names a script introduces (never lemmas to rewrite with elsewhere)."""
    found: set[str] = set()
    for pattern, single in _INTRODUCED.findall(script):
        found.update(_IDENT.findall(pattern))
        if single:
            found.add(single)
    return found


def rewrite_names(script: str, bound: Sequence[str] = ()) -> list[str]:
    """The names a script rewrites with, in order (``rewrite !in_fsetI andbC`` ->
    ``in_fsetI``, ``andbC``), less the ``bound`` ones (its hypotheses) and those its
    intro patterns name.

    A clause ends with its sentence: ``have H : P. by rewrite L.`` is two clauses,
    not one that rewrites with ``rewrite``."""
    skip = set(bound) | _NOT_LEMMAS | introduced_names(script)
    found: list[str] = []
    for clause in _REWRITE.findall(script):
        clause = re.split(r"\s(?:in|at)\s|\.(?:\s|$)", clause)[0]
        # ``{x}`` clears, ``[p]`` patterns and ``/c`` unfolds (ssreflect) name no lemma
        clause = re.sub(r"\{[^}]*\}|\[[^\]]*\]|/[A-Za-z_][\w'.]*", " ", clause)
        for word in _IDENT.findall(clause):
            word = word.rstrip(".")
            if word and word not in skip and not word[0].isdigit():
                found.append(word)
    return list(dict.fromkeys(found))


#: constants behind notations whose unfolding shows only the notation's machinery
#: (``x \in A`` is ``in_mem x (mem A)``; ``iff`` and the logic's connectives): never the
#: project's own definition that a one-line proof unfolds (``rewrite /Neg``)
PLUMBING = GENERIC | {
    "in_mem",
    "mem",
    "pred_of_simpl",
    "pred_of_mem",
    "simpl_pred",
    "is_true",
    "pair",
    "fst",
    "snd",
    "negb",
    "andb",
    "orb",
    "nat_of_ord",
}


def unfoldable(constants: Sequence[str], limit: int = MAX_UNFOLDS) -> list[str]:
    """The first ``limit`` of a goal's constants worth a ``rewrite /c`` (not :data:`PLUMBING`)."""
    return [c for c in constants if c not in PLUMBING][:limit]


def interleave(*sources: Sequence[str]) -> list[str]:
    """The names of ``sources`` taken in turn (the first of each, then the second...),
    each once."""
    found: dict[str, None] = {}
    for row in itertools.zip_longest(*sources):
        for name in row:
            if name is not None:
                found.setdefault(name)
    return list(found)


#: the rewrite rules the most visible proofs use, per corpus (counted once per corpus)
_POPULAR: weakref.WeakKeyDictionary[Corpus, tuple[int, list[str]]] = weakref.WeakKeyDictionary()


def popular_rewrites(corpus: Corpus, k: int) -> list[str]:
    """The ``k`` names the most proofs of ``corpus`` rewrite with, at least two of them
    (mathcomp's ``inE``, a project's own ``setmE``): the rules a rewrite chain of the
    library's style is made of, whether or not the nearest proofs use them."""
    cached = _POPULAR.get(corpus)
    if cached is None or cached[0] != len(corpus):
        counts: collections.Counter[str] = collections.Counter()
        for example in corpus.examples:
            bound = bound_names(example.statement)
            counts.update(set(rewrite_names(" ".join(example.script), sorted(bound))))
        cached = (len(corpus), [name for name, n in counts.most_common(4 * k) if n >= 2])
        _POPULAR[corpus] = cached
    return cached[1][:k]


def _exact_scripts(lemmas: Sequence[str], ssr: bool) -> list[str]:
    """One-sentence proofs by a lemma: ``exact: L.``, ``exact/L.`` (ssreflect), ``apply L.``."""
    found: list[str] = []
    for name in lemmas:
        found += [f"exact: {name}.", f"exact/{name}."] if ssr else [f"intros; apply {name}."]
    return found


def _opening(script: str) -> str | None:
    """The part of a one-sentence proof before its first rewrite (``move=> x; apply/P``),
    as a sentence, or None when it starts with the rewrite."""
    body = script.strip().removesuffix(".")
    body = re.sub(r"^by\s+", "", body)
    parts = split_top_level(body, ";")
    head: list[str] = []
    for part in parts:
        if re.match(r"\s*rewrite\b", part):
            break
        head.append(part.strip())
    if not head or len(head) == len(parts):
        return None
    return "; ".join(head) + "."


def _first_sentence(text: str) -> str:
    """The first sentence of a script written as one text ("" if it does not parse)."""
    try:
        sentences = split_sentences(text)
    except OrchError:
        return ""
    return sentences[0].code if sentences else ""


def case_closers(shown: str, ssr: bool) -> list[str]:
    """Closers by a case analysis on what the state's conclusion branches on
    (``by case: (k \\in ks).`` where the rewrites left ``if k \\in ks then f k else
    None = f k && (k \\in ks)``)."""
    found: list[str] = []
    for tactic in scrutinee_tactics(shown, ssr):
        if ssr and tactic.startswith("case:"):
            found.append(f"by {tactic}")
        elif not ssr and tactic.startswith("destruct"):
            found.append(f"{tactic.removesuffix('.')}; auto.")
    return found


#: the names a one-sentence proof opens with (``move=> s;``, ``intros x y;``)
_NAMED_INTROS = re.compile(r"^(move\s*=>|intros)((?:\s+[A-Za-z_][\w']*)+)\s*;\s*(?=\S)")


def _intros_any(opening: str) -> str | None:
    """``opening`` introducing every premise however many the goal has
    (``move=> s; apply/eq_fperm=> x.`` -> ``move=> *; apply/eq_fperm=> x.``: the
    neighbour's statement has one binder, an ``associative`` goal three; the
    names ssreflect's ``*`` gives clash with none the opening binds), or None
    when it does not start by naming what it introduces."""
    match = _NAMED_INTROS.match(opening)
    if match is None:
        return None
    head = "move=> *; " if match.group(1).startswith("move") else "intros; "
    return head + opening[match.end() :]


class RewriteStrategy(StrategyDefaults):
    """A breadth-first search over rewrites with the lemmas the goal can see."""

    name = "rewrite"
    weight = "light"
    language = "coq"
    uses_slot = True
    needs_ledger = False

    def __init__(self, lemmas: int = 16, depth: int = 3, width: int = 6, nodes: int = 12) -> None:
        self.lemmas = lemmas
        self.depth = depth
        self.width = width
        #: states expanded at most in one attempt (each costs a probe and its children)
        self.nodes = nodes

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        seconds = max(1, math.ceil(budget.tactic_seconds))
        tried = 0

        def spent() -> bool:
            return session.cpu_seconds() - cpu_start >= budget.cpu_seconds

        def left() -> float:
            return budget.cpu_seconds - (session.cpu_seconds() - cpu_start)

        def overran() -> bool:
            """Past the grant by more than :data:`NODE_SLACK` of it: a node's steps stop."""
            return session.cpu_seconds() - cpu_start >= budget.cpu_seconds * (1 + NODE_SLACK)

        visible = await LEARNING.visible(session)
        ssr = "Coq.ssr.ssreflect" in visible.modules
        near = visible.nearest(goal.statement, 12, exclude=(goal.name,), max_sentences=10)
        names: list[str] = []
        openings: list[str] = []
        plain = await plain_goal(session)
        for rank, (_, example) in enumerate(near):
            bound = sorted(bound_names(example.statement))
            texts = [" ".join(example.script)]
            if rank < ADAPTED:  # the nearest also with their names carried over to the goal
                texts = await adapted_scripts(
                    session, plain.conclusion if plain else "", goal.statement, example
                )
            for text in texts:
                names += rewrite_names(text, bound)
                # a longer proof's first sentence opens too (``apply/eq_fset=> k; rewrite …``)
                head = text if example.is_one_sentence else _first_sentence(text)
                if head and (opening := _opening(head)):
                    openings.append(opening)
                    if (any_arity := _intros_any(opening)) is not None:
                        openings.append(any_arity)
        index = await index_for(session)
        ranked = index.rank(goal.statement, 2 * self.lemmas, exclude=[goal.name])
        lemmas = [
            n
            for n in interleave(list(dict.fromkeys(names)), [p.name for p in ranked])
            if n != goal.name
        ]
        popular = await asyncio.to_thread(
            lambda: interleave(
                popular_rewrites(visible.local, POPULAR), popular_rewrites(visible.library, POPULAR)
            )
        )
        # the three sources take turns, so that no one of them fills every slot
        names = interleave(
            list(dict.fromkeys(names)),
            [p.name for p in ranked if _EQUATIONAL.search(p.statement)],
            popular,
        )
        names = [n for n in names if n != goal.name][: 2 * self.lemmas]
        if not names and not lemmas:
            return StrategyResult(Outcome.FAILED, (), 0, 0.0, time.monotonic() - started)
        closers = [*(SSR_CLOSERS if ssr else ()), *PLAIN_CLOSERS]
        # bounded: ``rewrite !addnC`` rewrites until its timeout (a commutativity loops)
        # (once, and with ssreflect also a few times more: a commutativity used an even
        # number of times changes nothing)
        # With ssreflect each rewrite also simplifies and closes what ``done`` closes
        # (``//=``): the side conditions of ``inordK`` go, ``(p, q).1`` becomes ``p``,
        # and a chain needs no ``/=`` step of its own (``rewrite inE runL /= inordK``).
        tail = " //=" if ssr else ""
        steps = [f"rewrite {n}{tail}." for n in names[: self.lemmas]]
        if ssr:
            steps += [f"rewrite {n} {REPEAT}?{n}{tail}." for n in names[: self.lemmas]]
        # the states expanded and the right-to-left rewrites offered grow with the
        # grant: twelve states cost one to two CPU s, and the search ended with most of a
        # larger grant unspent (``-nfa_to_dfa_correct`` was never offered)
        scale = max(1.0, budget.cpu_seconds / NODES_SECONDS)
        nodes = int(self.nodes * scale)
        # and one rewrite more in a chain for every doubling (``apply/eq_fset=> k``, then
        # ``mem_domm``, ``mkfmapfpE``, ``in_fset``, ``mem_filter``, then the closer)
        depth = min(MAX_DEPTH, self.depth + int(math.log2(scale)))
        backwards = min(len(names), int(self.lemmas // 4 * scale))
        backward = [f"rewrite -{n}{tail}." if ssr else f"rewrite <- {n}." for n in names]
        steps += backward[: self.lemmas // 4]
        if ssr:  # unfold what the goal names, simplify
            steps += [f"rewrite /{c}." for c in unfoldable(plain.constants if plain else [])]
            steps.append("rewrite /=.")
        # after the unfolds: a right-to-left rewrite fits wherever its right side does,
        # and a node takes the first few steps that fit
        steps += backward[self.lemmas // 4 : backwards]
        offered = frozenset(names[: self.lemmas])
        # ssreflect's ``move=> *`` also opens what ``intros`` leaves (``=i``, ``{in A, P}``)
        opened = ["intros.", "move=> *."] if ssr else ["intros."]
        starts = [*opened, *dict.fromkeys(openings)][: OPENINGS + len(opened) - 1]
        expanded = 0
        outcome = Outcome.FAILED
        # the closers at the root first (``by case/andP.`` needs the premise unintroduced;
        # they are cheap, where an ``exact:`` of a lemma that does not fit can run out its
        # timeout)
        if spent():
            return StrategyResult(
                Outcome.TIMEOUT,
                (),
                tried,
                session.cpu_seconds() - cpu_start,
                time.monotonic() - started,
            )
        closed = await self._close(session, session.root, closers, seconds, left())
        tried += len(closers)
        if closed is not None:
            return StrategyResult(
                Outcome.CANDIDATE,
                (closed,),
                tried,
                session.cpu_seconds() - cpu_start,
                time.monotonic() - started,
            )
        # then a lemma that is the goal up to its arguments or a view: one sentence
        exact = await FixedScripts(self.name, _exact_scripts(lemmas[: self.lemmas], ssr)).prove(
            session, goal, Budget(left(), budget.tactic_seconds, budget.grace_seconds)
        )
        tried += exact.tactics_tried
        if exact.outcome is Outcome.CANDIDATE:
            return exact
        started_from: set[str] = set()
        for start in starts:
            if spent():
                outcome = Outcome.TIMEOUT
                break
            if not passes_gate(start):
                continue
            first = await session.run_tactic(start, session.root, timeout=seconds)
            tried += 1
            if not first.ok:
                continue
            shown = first.goals[0] if first.goals else ""
            opened_at = " ".join("\n".join(first.goals).split())
            if opened_at in started_from:
                continue  # ``move=> *`` where it does what ``intros`` did
            started_from.add(opened_at)
            frontier: list[tuple[ProofState, str, tuple[str, ...]]] = [
                (first.state, shown, (start,))
            ]
            seen = {" ".join(shown.split())}
            for _depth in range(depth + 1):
                # the states each node opens, kept apart so that the next level takes
                # from every node in turn (the first node's many children filled it)
                following: list[list[tuple[ProofState, str, tuple[str, ...]]]] = []
                for state, shown, script in frontier:
                    if spent():
                        break
                    here_closers = [*closers, *case_closers(shown, ssr)]
                    closed = await self._close(session, state, here_closers, seconds, left())
                    tried += len(here_closers)
                    if closed is not None:
                        return StrategyResult(
                            Outcome.CANDIDATE,
                            (*script, closed),
                            tried,
                            session.cpu_seconds() - cpu_start,
                            time.monotonic() - started,
                        )
                    if _depth == depth or expanded >= nodes:
                        continue
                    expanded += 1
                    children: list[tuple[ProofState, str, tuple[str, ...]]] = []
                    following.append(children)
                    here = [*self._fitting(index, shown, offered, goal.name, tail, ssr), *steps]
                    fits = await probe(session, here, state, timeout=seconds)
                    chosen = [
                        s for s, ok in zip(here, fits or [True] * len(here), strict=True) if ok
                    ]
                    for step in chosen[: self.width]:
                        if overran():
                            break  # a node's six steps at their timeouts overran the grant
                        result = await session.run_tactic(
                            step, state, timeout=min(seconds, max(1.0, left()))
                        )
                        tried += 1
                        if result.status is TacticStatus.COMPLETE:
                            return StrategyResult(
                                Outcome.CANDIDATE,
                                (*script, step),
                                tried,
                                session.cpu_seconds() - cpu_start,
                                time.monotonic() - started,
                            )
                        if result.ok:
                            now = result.goals[0] if result.goals else ""
                            key = " ".join("\n".join(result.goals).split())
                            if key not in seen:  # ``rewrite inE`` and ``rewrite !inE``
                                seen.add(key)
                                children.append((result.state, now, (*script, step)))
                frontier = [
                    child
                    for row in itertools.zip_longest(*following)
                    for child in row
                    if child is not None
                ][: self.width]
                if not frontier:
                    break
        if spent():
            outcome = Outcome.TIMEOUT
        return StrategyResult(
            outcome, (), tried, session.cpu_seconds() - cpu_start, time.monotonic() - started
        )

    @staticmethod
    def _fitting(
        index: PremiseIndex,
        shown: str,
        offered: frozenset[str],
        goal_name: str,
        tail: str,
        ssr: bool,
    ) -> list[str]:
        """Rewrites with the equations that rank best against the state's own goal
        (``shown``), not offered already: a chain's later steps rewrite what its first
        steps uncovered (``rewrite -dfa_to_re_correct`` shows ``dfa_compl``, and
        ``dfa_compl_correct`` rewrites it), which a ranking against the statement
        does not see."""
        conclusion = shown.split("====", 1)[-1].lstrip("=").strip()
        if not conclusion:
            return []
        ranked = index.rank(conclusion, 3 * STATE_LEMMAS, exclude=[goal_name])
        names = [p.name for p in ranked if _EQUATIONAL.search(p.statement)]
        fresh = [n for n in names if n not in offered][:STATE_LEMMAS]
        found = [f"rewrite {n}{tail}." for n in fresh]
        found += [f"rewrite -{n}{tail}." if ssr else f"rewrite <- {n}." for n in fresh]
        return found

    @staticmethod
    async def _close(
        session: CoqSession, state: ProofState, closers: Sequence[str], seconds: int, left: float
    ) -> str | None:
        """The first closer that leaves no goal at ``state`` (one sentence tries them all).

        Every closer is in the sentence, and the sentence has what is ``left`` (at least
        one closer's ``seconds``): most closers fail at once, and a sentence that kept
        only as many as would fit if each ran out its time tried ``done`` alone at a
        grant of 1 CPU s (``by case: eqP`` and ``by case/andP`` were never tried)."""
        branches = " | ".join(
            f"solve [ timeout {seconds} ({c.removesuffix('.')}) ]" for c in closers
        )
        batch = await session.run_tactic(
            f"first [ {branches} ].",
            state,
            timeout=max(float(seconds), min(seconds * len(closers), left)),
        )
        if batch.status is not TacticStatus.COMPLETE:
            return None
        for closer in closers:
            single = await session.run_tactic(closer, state, timeout=seconds)
            if single.status is TacticStatus.COMPLETE:
                return closer
        return None
