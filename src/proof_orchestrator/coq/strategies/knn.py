"""Learning from proofs, the way Tactician does: k-nearest neighbours over proof states.

Pairs (proof state, tactic) are mined by replaying finished ``Qed`` proofs
through the prover: before each sentence of the proof, the first goal as Coq
prints it, then the sentence. A new state gets the tactics of its nearest
stored states, by cosine similarity of cheap features: the identifiers of
the conclusion and of the hypotheses (kept apart), the conclusion's head and
shape, and identifier bigrams of the conclusion, hashed into integers.

A broken proof's old script (``orch repair``; ``Goal.old_script``) is
replayed from its goal until a step fails, and its steps join the model for
that goal: the states the repair passes through are near the old ones.

Position-faithful by construction: :class:`FileModels` mines a file's proofs
from the sentences a session has loaded, that is, only the lemmas *before*
the hole; the hidden proof and everything after it are never seen. No torch:
plain Python dictionaries.
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import ProverError, SourceSyntaxError
from ...goals import Goal, HoleKind
from ...learn import FOUND
from ...provers.base import TacticStatus
from ...search.features import TacticModel, features, similarity
from ..display import COQ
from ..learning import VisibleSource
from ..session import CoqSession, PrefixError
from ..syntax import one_sentence

__all__ = ["FileModels", "TacticModel", "features", "proofs_in_prefix", "similarity"]

#: the nearest proofs of the loaded modules whose first step joins a goal's model
VISIBLE_PAIRS = 200

_LEMMA = re.compile(
    r"^(?:#\[[^\]]*\]\s*)?(?:(?:Local|Global|Polymorphic|Program)\s+)*"
    r"(?:Lemma|Theorem|Fact|Remark|Corollary|Proposition|Example)\s+([A-Za-z_][\w']*)"
)


@functools.lru_cache(maxsize=20_000)
def _statement_features(statement: str) -> dict[int, float]:
    """The features of a visible proof's statement (the same statements come back for
    every model near them: computed once)."""
    return features(statement, COQ)


@dataclass(frozen=True, slots=True)
class _Proof:
    name: str
    #: index of the statement in the loaded sentences
    statement: int
    #: the proof's sentences after the statement (``Proof.`` included), ``Qed.`` excluded
    body: tuple[str, ...]


def proofs_in_prefix(prefix: Sequence[str]) -> list[_Proof]:
    """The ``Qed`` proofs among loaded sentences, in order."""
    found: list[_Proof] = []
    index = 0
    while index < len(prefix):
        match = _LEMMA.match(prefix[index])
        if match is None:
            index += 1
            continue
        end = index + 1
        while end < len(prefix) and prefix[end].split()[0].rstrip(".") not in (
            "Qed",
            "Defined",
            "Admitted",
            "Abort",
        ):
            end += 1
        if end < len(prefix) and prefix[end].startswith("Qed"):
            found.append(_Proof(match.group(1), index, tuple(prefix[index + 1 : end])))
        index = end + 1
    return found


class FileModels:
    """The k-NN models of files, one per loaded prefix, fed by mining the proofs above the hole.

    Each ``Qed`` proof is mined (replayed) once per file and its pairs kept; the
    model for a hole is the seed plus the pairs of exactly the proofs in its
    prefix, so a proof below the hole (mined for a later hole first) never
    reaches it. Models are cached per prefix: every attempt on a hole and every
    node of a search share one, instead of scanning the prefix each time.

    ``proved`` (statement, script) pairs, such as the ledger's verified proofs,
    seed every file's model: the statement stands for the first state and the
    script's first sentence for its tactic.
    """

    def __init__(
        self,
        proved: Sequence[tuple[str, Sequence[str]]] = (),
        size: int = 64,
        learning: VisibleSource | None = None,
    ) -> None:
        #: where the proofs of the loaded modules come from (None: the file's own only)
        self.learning = learning
        self._seed = [(features(s, COQ), script[0]) for s, script in proved if script]
        #: file -> proof name -> its mined (features, tactic) pairs
        self._mined: dict[str, dict[str, list[tuple[dict[int, float], str]]]] = {}
        self._models: OrderedDict[
            tuple[str, tuple[str, ...], tuple[str, ...], int], TacticModel
        ] = OrderedDict()
        self.size = size
        #: CPU seconds spent replaying proofs to mine them
        self.cpu_seconds = 0.0
        #: models assembled (misses) and reused (hits)
        self.built = 0
        self.reused = 0

    async def model_for(self, session: CoqSession, *, max_new: int = 400) -> TacticModel:
        """The model at ``session``'s hole: the seed and every proof before the hole, mined."""
        file, prefix = str(session.goal.file), tuple(session.prefix)
        # proofs found in this run join the model at once: a new one makes a new model
        found = FOUND.version if self.learning is not None else 0
        key = (file, prefix, session.goal.old_script, found)
        cached = self._models.get(key)
        if cached is not None:
            self.reused += 1
            self._models.move_to_end(key)
            return cached
        mined = self._mined.setdefault(file, {})
        proofs = proofs_in_prefix(prefix[:-1])
        fresh = [p for p in proofs if p.name not in mined]
        for proof in fresh[:max_new]:
            pairs = mined[proof.name] = []
            await self._mine(session, prefix, proof, pairs)
        model = TacticModel(COQ, list(self._seed))
        for proof in proofs:
            model.pairs += mined.get(proof.name, ())
        # the nearest proofs of the modules the session loads (the project files the file
        # imports, the libraries): their statement stands for the first state
        if self.learning is not None:
            visible = await self.learning.visible(session)
            goal = session.goal
            near = visible.nearest(goal.statement, VISIBLE_PAIRS, exclude=(goal.name,))
            model.pairs += [(_statement_features(e.statement), e.script[0]) for _, e in near]
        if session.goal.old_script:
            # a broken proof: its old steps, as far as they still run, are the nearest
            # evidence there is for the states the repair goes through
            model.pairs += await self._old_steps(session)
        self.built += 1
        if len(fresh) <= max_new:  # complete: later calls at this prefix reuse it
            self._models[key] = model
            while len(self._models) > self.size:
                self._models.popitem(last=False)
        return model

    async def _old_steps(self, session: CoqSession) -> list[tuple[dict[int, float], str]]:
        """The (state, tactic) pairs of the broken goal's old script, replayed from the
        goal's root until a step fails."""
        pairs: list[tuple[dict[int, float], str]] = []
        before = session.cpu_seconds()
        try:
            await self._replay(session, session.goal.old_script, pairs)
        except ProverError:
            pass
        finally:
            self.cpu_seconds += session.cpu_seconds() - before
        return pairs

    async def learn(self, session: CoqSession, body: Sequence[str]) -> None:
        """Mine the proof ``body`` of the lemma ``session`` is open on, from its root.

        For a proof that has just been found, or (in ``orch eval``) the hidden
        proof of a goal once every arm is done with it: from then on it is an
        earlier proof for the goals further down, and mining it in place costs
        one replay instead of a session of its own later.
        """
        mined = self._mined.setdefault(str(session.goal.file), {})
        if session.goal.name in mined:
            return
        pairs = mined[session.goal.name] = []
        before = session.cpu_seconds()
        try:
            await self._replay(session, body, pairs)
        except ProverError:
            return
        finally:
            self.cpu_seconds += session.cpu_seconds() - before

    async def _mine(
        self,
        session: CoqSession,
        prefix: Sequence[str],
        proof: _Proof,
        pairs: list[tuple[dict[int, float], str]],
    ) -> None:
        opener = 1 if proof.body and proof.body[0].startswith("Proof") else 0
        codes = list(prefix[: proof.statement + 1 + opener])
        goal = Goal(session.goal.file, 0, proof.name, prefix[proof.statement], HoleKind.PROVED, "")
        try:
            async with session.prover.session_at(goal, codes) as replay:
                try:
                    await self._replay(replay, proof.body[opener:], pairs)
                finally:
                    self.cpu_seconds += replay.cpu_seconds()
        except (ProverError, PrefixError):
            return

    @staticmethod
    async def _replay(
        replay: CoqSession, body: Sequence[str], pairs: list[tuple[dict[int, float], str]]
    ) -> None:
        state = replay.root
        display = (await replay.run_tactic("idtac.", state, timeout=5)).goals
        for sentence in body:
            try:
                bullet = one_sentence(sentence).is_bullet_or_brace
            except SourceSyntaxError:
                return
            result = await replay.run_tactic(sentence, state, timeout=5)
            if not result.ok:
                return
            if not bullet and display:
                pairs.append((features(display[0], COQ), sentence))
            state = result.state
            if result.status is TacticStatus.COMPLETE:
                return
            display = result.goals
