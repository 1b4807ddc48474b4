"""What an agent (``orch mcp``) reads in a Lean file: a goal as the REPL prints it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import OrchError
from ..search.proofstate import show_goal

__all__ = ["LeanAgentSide"]


class LeanAgentSide:
    """The backend's ``agent`` feature for Lean."""

    @staticmethod
    async def describe(
        session: Any,
        goal: Any,
        proved: Sequence[tuple[str, Sequence[str]]],
        errors: Sequence[tuple[str, str, str]],
    ) -> tuple[str, list[tuple[str, str]], list[tuple[str, str]]]:
        """(the goal as the REPL prints it, no premises, no neighbours)."""
        return await show_goal(session, noop="skip"), [], []

    @staticmethod
    async def check_helper(
        tools: Any, hole: Any, text: str, name: str, statement: str, sentences: Sequence[str]
    ) -> tuple[bool, str, float]:
        raise OrchError("helper-lemma tickets are checked in Coq files only")
