"""What an agent (``orch mcp``) reads and checks in a Coq file: goal context, helper proofs."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..errors import OrchError
from .audit import declared_axioms, parse_assumptions
from .holes import CoqHole
from .strategies.context import gather_context

__all__ = ["CoqAgentSide"]


class CoqAgentSide:
    """The backend's ``agent`` feature for Coq."""

    @staticmethod
    async def describe(
        session: Any,
        goal: Any,
        proved: Sequence[tuple[str, Sequence[str]]],
        errors: Sequence[tuple[str, str, str]],
    ) -> tuple[str, list[tuple[str, str]], list[tuple[str, str]]]:
        """(the goal as Coq prints it, premises (name, statement), nearest proofs)."""
        context = await gather_context(session, goal, proved, errors)
        return context.goal, list(context.premises), list(context.neighbours)

    @staticmethod
    async def check_helper(
        tools: Any, hole: Any, text: str, name: str, statement: str, sentences: Sequence[str]
    ) -> tuple[bool, str, float]:
        """Check a helper lemma's proof just before ``hole``'s declaration in ``text``.

        Returns (accepted, the reason when not, the prover's CPU seconds). The
        helper must close with ``Qed`` and assume nothing the file does not
        declare itself (the audit of :mod:`.audit`).
        """
        if not isinstance(hole, CoqHole):
            raise OrchError("a helper lemma is checked in a Coq file only")
        name = re.sub(r"\W", "_", name) or "helper"
        source = text[: hole.statement_start] + f"Lemma {name} : {statement}.\nProof.\n"
        helper = replace(hole.goal, name=name, statement=f"Lemma {name} : {statement}.")
        async with tools.prover_for(hole.goal.file).session(helper, source, len(source)) as session:
            closed, assumptions = await session.qed_check(sentences, name, timeout=10.0)
            cpu = float(session.cpu_seconds())
        if not closed:
            return False, assumptions.strip()[-1000:], cpu
        declared = declared_axioms(text)
        new = sorted(
            k for k in parse_assumptions(assumptions) if k.rsplit(".", 1)[-1] not in declared
        )
        if new:
            return False, f"new assumptions: {new}", cpu
        return True, "", cpu
