"""Which of several tactics could take a step, asked of ``coqtop`` in one sentence.

A search tries some forty candidate tactics at each node, and most fail
within a millisecond. Sent one by one, each costs a round trip that the
orchestrator pays in CPU about a third as much as the prover pays to run it.
A *probe* sends a node's candidates as one sentence that tries each in turn
and puts the state back::

    Timeout 9 idtac; try (assert_succeeds (timeout 1 (progress (T1))); idtac "@@probe0@@");
                     try (assert_succeeds (timeout 1 (progress (T2))); idtac "@@probe1@@"); ...

``assert_succeeds`` (Coq's ``Init.Tactics``) runs a tactic and undoes it, and
``progress`` drops a tactic that leaves the goal as it was (a state the search
merges away anyway), so the markers printed are the candidates worth running
for real. Only those are then run one by one, to read the goals they leave.

A candidate that breaks the whole sentence before it runs (an unknown global
name, a goal selector Coq does not take inside parentheses) is found from the
error's character range, marked to be run on its own, and the probe is sent
again without it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import SourceSyntaxError
from ..provers.base import ProofState
from .syntax import one_sentence

if TYPE_CHECKING:
    from .session import CoqSession

__all__ = ["MAX_PROBE_RETRIES", "probe", "probe_sentence"]

_MARK = "@@probe{}@@"
_MARKED = re.compile(r"@@probe(\d+)@@")
_ERROR_AT = re.compile(r"Toplevel input, characters (\d+)-(\d+):")
#: probes re-sent after a candidate broke the sentence, at most (then: run them one by one)
MAX_PROBE_RETRIES = 2


def probe_sentence(tactics: Sequence[str], seconds: int) -> tuple[str, list[tuple[int, int]]]:
    """The probe's sentence for ``tactics`` (each one sentence, with its final ``.``) and
    the character range of each tactic in it.

    :class:`SourceSyntaxError` if a tactic is not exactly one sentence.
    """
    total = seconds * len(tactics) + 1
    code = f"Timeout {total} idtac"
    spans: list[tuple[int, int]] = []
    for index, tactic in enumerate(tactics):
        body = one_sentence(tactic).code.removesuffix(".")
        head = f"; try (assert_succeeds (timeout {seconds} (progress ("
        start = len(code) + len(head)
        code += f'{head}{body}))); idtac "{_MARK.format(index)}")'
        spans.append((start, start + len(body)))
    return code + ".", spans


async def probe(
    session: CoqSession, tactics: Sequence[str], state: ProofState, *, timeout: float
) -> list[bool] | None:
    """For each of ``tactics``: might it succeed and change the first goal at ``state``?

    True for the ones to run (a probe cannot say for those that broke the
    sentence); None when no probe could be made (run them all).
    """
    seconds = max(1, round(timeout))
    verdict: list[bool | None] = [None] * len(tactics)
    for _ in range(MAX_PROBE_RETRIES + 1):
        pending = [i for i, v in enumerate(verdict) if v is None]
        if not pending:
            break
        try:
            code, spans = probe_sentence([tactics[i] for i in pending], seconds)
        except SourceSyntaxError:
            return None
        ran = await session.run_probe(code, state, timeout=seconds * len(pending) + 1)
        if ran is None:
            return None
        took, output = ran
        if took:
            marked = {int(m) for m in _MARKED.findall(output)}
            for position, index in enumerate(pending):
                verdict[index] = position in marked
            break
        error = _ERROR_AT.search(output)
        if error is None:
            return None
        at = int(error.group(1))
        culprits = [p for p, (a, b) in enumerate(spans) if a <= at < b or (a == b == at)]
        if not culprits:
            return None
        verdict[pending[culprits[0]]] = True  # cannot be probed: run it on its own
    return [v is not False for v in verdict]
