"""What ``orch repair`` needs of Coq (the backend's ``repair`` feature).

Finding the broken proofs (:mod:`.broken`), the strategy that starts from the
old proof (:mod:`.strategies.repair`) with the names of the file and of its
project, and the text written back: the repaired proofs in the file as it
was, every other proof byte for byte as it was, or, with ``admit_broken``,
the proofs that could not be repaired replaced by ``Admitted.`` under a
comment that names their error (so that the files after them can be checked).
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from ..strategies.repairing import apply_edits
from .broken import BrokenProof, Detection, find_broken
from .holes import iter_proofs
from .strategies.knn import FileModels
from .strategies.repair import RepairStrategy
from .strategies.repair_variants import opaque_names
from .syntax import split_sentences

__all__ = ["CoqRepair", "scope_names"]

_DEFINITION = re.compile(
    r"(?m)^\s*(?:#\[[^\]]*\]\s*)?(?:(?:Local|Global|Program)\s+)*"
    r"(?:Definition|Fixpoint|CoFixpoint|Function|Let)\s+([A-Za-z_][\w']*)"
)
_NOT_SOURCES = frozenset({".orch", "_build", "_opam", ".git", "node_modules"})
#: the most project files read for names
_MAX_FILES = 400


_INDUCTIVE = re.compile(r"^\s*(?:#\[[^\]]*\]\s*)?(?:Local\s+)?(?:Co)?Inductive\s|^\s*Variant\s")
_CONSTRUCTOR = re.compile(r"\s*([A-Za-z_][\w']*)")


def _constructors(inductive: str) -> list[str]:
    """The constructor names of an ``Inductive`` sentence: the first word of each
    ``|``-separated piece after ``:=``, outside brackets (not ``{x | P x}``)."""
    body = inductive.partition(":=")[2]
    pieces, depth, start = [], 0, 0
    for i, c in enumerate(body):
        depth += c in "([{"
        depth -= c in ")]}"
        if c == "|" and depth == 0:
            pieces.append(body[start:i])
            start = i + 1
    pieces.append(body[start:])
    found = (_CONSTRUCTOR.match(piece) for piece in pieces)
    return [m.group(1) for m in found if m is not None]


def _names_in(text: str) -> tuple[list[str], list[str]]:
    """(constructor and lemma names, definition names) declared in ``text``: what a
    repaired proof may name (``eauto using`` the constructors where a ``Hint
    Constructors`` went away: they come first, being few)."""
    sentences = split_sentences(text)
    constructors = [
        name
        for sentence in sentences
        if _INDUCTIVE.match(sentence.code)
        for name in _constructors(sentence.code)
    ]
    return constructors + [p.name for p in iter_proofs(sentences)], _DEFINITION.findall(text)


def scope_names(
    root: Path | None, text: str, skip: Path | None = None
) -> tuple[list[str], list[str]]:
    """(lemma names, definition names) of ``text`` and of the ``.v`` files under ``root``
    (but ``skip``), ``text``'s first."""
    lemmas, definitions = _names_in(text)
    if root is None or not root.is_dir():
        return lemmas, definitions
    skipped = skip.resolve() if skip is not None else None
    read = 0
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in _NOT_SOURCES)
        for name in sorted(names):
            if not name.endswith(".v") or read >= _MAX_FILES:
                continue
            source = Path(folder) / name
            if skipped is not None and source.resolve() == skipped:
                continue
            read += 1
            try:
                other = source.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            more_lemmas, more_definitions = _names_in(other)
            lemmas += more_lemmas
            definitions += more_definitions
    return list(dict.fromkeys(lemmas)), list(dict.fromkeys(definitions))


class CoqRepair:
    """The backend's ``repair`` feature (one per file: its broken proofs share the k-NN
    model of the file's earlier proofs, mined once)."""

    def __init__(self) -> None:
        self.models = FileModels()

    @staticmethod
    async def find_broken(
        path: Path, text: str, compile_text: Callable[[str], Awaitable[tuple[bool, str]]]
    ) -> Detection:
        return await find_broken(path, text, compile_text)

    def strategy(self, broken: BrokenProof, text: str, root: Path | None) -> RepairStrategy:
        # the file's names declared before the proof (a later one is not in scope
        # yet, and one unknown name fails a whole ``eauto using``), then the project's
        before = text[: broken.hole.statement_start]
        lemmas, definitions = scope_names(root, before, skip=broken.hole.goal.file)
        own = broken.hole.goal.name
        return RepairStrategy(
            broken,
            [n for n in lemmas if n != own],
            definitions,
            opaque_names(text, broken.error),
            self.models,
        )

    @staticmethod
    def written_text(
        text: str,
        detection: Detection,
        repaired: Sequence[tuple[BrokenProof, Sequence[str]]],
        admit_broken: bool = False,
    ) -> str:
        """The file once ``repaired`` are written: into ``text`` as it is, or, with
        ``admit_broken``, into the stand-in (the unrepaired proofs admitted, with a
        comment naming their error)."""
        done = {id(b): sentences for b, sentences in repaired}
        edits: list[tuple[int, int, str]] = []
        base = detection.standin if admit_broken else text
        for broken in detection.broken:
            hole = broken.hole if admit_broken else broken.original
            if id(broken) in done:
                edits.append((hole.proof_start, hole.proof_end, hole.replacement(done[id(broken)])))
            elif admit_broken:
                error = " ".join(broken.error.replace("*)", "* )").split())[:300]
                note = f"(* orch repair: not repaired ({broken.kind.value}): {error} *)"
                edits.append(
                    (
                        hole.proof_start,
                        hole.proof_end,
                        f"{hole.proof_opener}\n{hole.indent}  {note}\n{hole.indent}Admitted.",
                    )
                )
        return apply_edits(base, edits)
