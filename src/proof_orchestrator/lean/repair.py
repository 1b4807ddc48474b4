"""What ``orch repair`` needs of Lean (the backend's ``repair`` feature).

Finding the broken proofs through the REPL (:mod:`.broken`), the strategy that
starts from the old tactics (:mod:`.strategies.repair`) with the declarations
of the file and of its project, and the text written back: the repaired
proofs in the file as it was, every other proof byte for byte as it was, or,
with ``admit_broken``, the proofs that could not be repaired replaced by
``sorry`` under a comment that names their error.

Detection goes through a REPL of its own (the one ``ORCH_LEAN_REPL``, ``orch
lean setup`` or ``PATH`` gives, as for sessions), not through the engine's
``compile_text``: the REPL answers command by command with positions, and
gives the stand-in's ``sorry`` a proof state. ``lake env lean --json`` (the
verifier) still checks every repair in the whole file before it is written.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from ..errors import SourceSyntaxError
from ..strategies.repairing import apply_edits
from .broken import BrokenProof, Detection, find_broken
from .holes import commands, declarations
from .repl import CommandReply
from .session import LeanProject, LeanProver, LeanSettings
from .strategies.repair import LeanRepairStrategy

__all__ = ["LeanRepair", "scope_names"]

_NOT_SOURCES = frozenset({".orch", ".lake", "lake-packages", "build", ".git", "node_modules"})
#: the most project files read for names
_MAX_FILES = 400
_DEFINITIONS = frozenset({"def", "abbrev"})
_HEADER = frozenset({"import", "prelude", "module"})


def _names_in(text: str) -> tuple[list[str], list[str]]:
    try:
        found = declarations(text)
    except SourceSyntaxError:
        return [], []
    names = [d.name for d in found]
    short = [n.rsplit(".", 1)[-1] for n in names]
    definitions = [d.name for d in found if d.keyword in _DEFINITIONS]
    return [*names, *short], definitions + [n.rsplit(".", 1)[-1] for n in definitions]


def scope_names(root: Path | None, text: str) -> tuple[list[str], list[str]]:
    """(declaration names, definition names) of ``text`` and of the ``.lean`` files under
    ``root``, the file's own first (full names and last components)."""
    names, definitions = _names_in(text)
    if root is None or not root.is_dir():
        return list(dict.fromkeys(names)), list(dict.fromkeys(definitions))
    read = 0
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in _NOT_SOURCES)
        for name in sorted(files):
            if not name.endswith(".lean") or read >= _MAX_FILES:
                continue
            read += 1
            try:
                other = (Path(folder) / name).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            more_names, more_definitions = _names_in(other)
            names += more_names
            definitions += more_definitions
    return list(dict.fromkeys(names)), list(dict.fromkeys(definitions))


def _comment(text: str) -> str:
    return " ".join(text.replace("-/", "- /").split())[:300]


class LeanRepair:
    """The backend's ``repair`` feature for ``.lean`` files."""

    def __init__(self, settings: LeanSettings | None = None) -> None:
        self.settings = settings or LeanSettings()

    async def find_broken(
        self,
        path: Path,
        text: str,
        compile_text: Callable[[str], Awaitable[tuple[bool, str]]] | None = None,
    ) -> Detection:
        """The broken proofs of ``text``, found through the REPL (``compile_text``, the
        engine's whole-file compilation, is not used: see the module's docstring)."""
        del compile_text
        try:
            every = commands(text)
        except SourceSyntaxError as exc:
            return Detection(standin=text, stuck=f"the file does not lex: {exc}")
        header_commands = []
        for command in every:
            if command.keyword not in _HEADER:
                break
            header_commands.append(command)
        header = text[: header_commands[-1].end].strip() if header_commands else ""
        prover = LeanProver(LeanProject.for_file(path), self.settings)
        timeout = self.settings.load_timeout
        try:
            async with prover.repl(header) as repl:

                async def elaborate(command: str, env: int | None) -> CommandReply:
                    return await repl.command(command, env, timeout=timeout)

                return await find_broken(path, text, elaborate)
        finally:
            await prover.aclose()

    @staticmethod
    def strategy(broken: BrokenProof, text: str, root: Path | None) -> LeanRepairStrategy:
        names, definitions = scope_names(root, text)
        own = broken.hole.decl_name
        return LeanRepairStrategy(
            broken, [n for n in names if n not in (own, own.rsplit(".", 1)[-1])], definitions
        )

    @staticmethod
    def written_text(
        text: str,
        detection: Detection,
        repaired: Sequence[tuple[BrokenProof, Sequence[str]]],
        admit_broken: bool = False,
    ) -> str:
        """The file once ``repaired`` are written: into ``text`` as it is, or, with
        ``admit_broken``, into the stand-in (the unrepaired proofs ``sorry``, under a
        comment naming their error)."""
        done = {id(b): sentences for b, sentences in repaired}
        edits: list[tuple[int, int, str]] = []
        base = detection.standin if admit_broken else text
        for broken in detection.broken:
            hole = broken.hole
            if admit_broken:
                start, end = hole.proof_start, hole.proof_end
            else:
                start, end = broken.original_start, broken.original_end
            if id(broken) in done:
                edits.append((start, end, hole.replacement(done[id(broken)])))
            elif admit_broken:
                why = f"not repaired ({broken.kind.value}): {_comment(broken.error)}"
                pad = " " * hole.block_column
                if base[start - 1 : start] == " ":
                    start -= 1
                edits.append((start, end, f"\n{pad}/- orch repair: {why} -/\n{pad}sorry"))
        return apply_edits(base, edits)
