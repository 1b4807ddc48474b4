"""Premise retrieval for Lean: the declarations visible at a ``sorry``, ranked by BM25.

Visible at a hole are (a) the declarations of the file *before* the hole's
declaration (never the declaration under proof, never anything after it),
and (b) the declarations of the modules in the file's import closure, read
from their sources: the project's own modules under its root, packages under
``.lake/packages/*`` (Mathlib, Batteries, Aesop...), and core (``Init``,
``Std``, ``Lean``) under the toolchain's ``src/lean`` where elan installed it.
A module whose source is not found is left out (with its imports). Private
declarations of other modules are not visible and are left out.

A premise is a declaration's full name (namespaces included) and its
statement (the text between the name and ``:=``). They are ranked against the
goal with :class:`~proof_orchestrator.search.premises.PremiseIndex` using
Lean's identifier rules. The file's own declarations are read with the Lean
lexer; library modules with a line scan that finds the same declarations
about eight times faster (Mathlib has thousands of modules). The library
part of an index is built once per import closure and shared; a hole's index
adds the file's own declarations above it and is cached per (file, text
before the hole).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...errors import SourceSyntaxError
from ...search.premises import Premise, PremiseIndex
from ..display import LEAN
from ..holes import _commands, _keyword, lex

__all__ = [
    "LEAN_INDEXES",
    "PREMISE_KEYWORDS",
    "LeanPremiseIndexes",
    "blank_comments",
    "header_imports",
    "import_closure",
    "lean_declarations",
    "library_declarations",
    "library_index",
    "module_source",
    "source_roots",
    "toolchain_sources",
]

#: declarations that can serve as a premise (``def``/``abbrev``: to unfold or simp with)
PREMISE_KEYWORDS = frozenset({"theorem", "lemma", "axiom", "def", "abbrev"})
#: at most this many modules of an import closure are read (``import Mathlib`` is ~7000)
MAX_MODULES = 4000


def lean_declarations(
    text: str, module: str = "", *, end: int | None = None, private: bool = True
) -> list[Premise]:
    """The named premise-like declarations of ``text`` that start before offset ``end``.

    Names are qualified by the enclosing ``namespace``s; ``private`` ones are
    kept only when ``private`` is true (the file's own). Raises
    :class:`~proof_orchestrator.errors.SourceSyntaxError` on text that does not lex.
    """
    tokens = lex(text)
    scopes: list[str] = []
    found: list[Premise] = []
    for a, b in _commands(text, tokens):
        if end is not None and tokens[a].start >= end:
            break
        keyword, k = _keyword(tokens, a, b)
        following = tokens[k + 1].text if k + 1 < b else ""
        if keyword == "namespace":
            scopes.append(following)
        elif keyword == "section":
            scopes.append("")
        elif keyword == "end":
            if scopes:
                scopes.pop()
        elif keyword in PREMISE_KEYWORDS and following and k + 1 < b:
            if not private and any(tokens[i].text == "private" for i in range(a, k)):
                continue
            assign = next(
                (
                    i
                    for i in range(k + 2, b)
                    if tokens[i].text == ":="
                    or (tokens[i].line_start and tokens[i].text in ("where", "|"))
                ),
                b,
            )
            stop = tokens[assign].start if assign < b else tokens[b - 1].end
            statement = " ".join(text[tokens[k + 1].end : stop].split())
            name = following.removeprefix("_root_.")
            if not following.startswith("_root_."):
                name = ".".join([*(s for s in scopes if s), following])
            found.append(Premise(name, statement, module, keyword))
    return found


_COMMAND = re.compile(
    r"^(?P<mods>(?:@\[[^\n]*?\]\s*)?(?:(?:private|protected|noncomputable|nonrec|partial"
    r"|unsafe|public)\s+)*)(?P<kw>theorem|lemma|def|abbrev|axiom|namespace|section|end)\b"
    r"[ \t]*(?P<name>[^\s({\[]*)",
    re.M,
)
#: where a statement ends when there is no ``:=`` (``where`` or a ``|`` at a line's start)
_STATEMENT_END = re.compile(r":=|^\s*\|\s|^\s*where\b|\bwhere\s*$", re.M)


def blank_comments(text: str) -> str:
    """``text`` with its ``--`` and (nested) ``/- -/`` comments blanked, lines kept."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        line, block = text.find("--", i), text.find("/-", i)
        starts = [j for j in (line, block) if j >= 0]
        if not starts:
            out.append(text[i:])
            break
        j = min(starts)
        out.append(text[i:j])
        if j == line:
            end = text.find("\n", j)
            end = n if end < 0 else end
        else:
            depth, end = 1, j + 2
            while depth and end < n:
                opening, closing = text.find("/-", end), text.find("-/", end)
                if closing < 0:
                    end = n
                    break
                if 0 <= opening < closing:
                    depth, end = depth + 1, opening + 2
                else:
                    depth, end = depth - 1, closing + 2
        out.append(re.sub(r"[^\n]", " ", text[j:end]))
        i = end
    return "".join(out)


def library_declarations(text: str, module: str) -> list[Premise]:
    """The public premise-like declarations of a library module, by a line scan.

    A faster reading than :func:`lean_declarations` (which lexes every
    character) for the thousands of modules of Mathlib: commands are found at
    the start of lines once comments are blanked. Strings holding ``--`` or
    ``/-`` may hide a line's end from it; a premise more or less is harmless.
    """
    clean = blank_comments(text)
    matches = list(_COMMAND.finditer(clean))
    scopes: list[str] = []
    found: list[Premise] = []
    for index, match in enumerate(matches):
        keyword, name = match.group("kw"), match.group("name")
        if keyword == "namespace":
            scopes.append(name)
        elif keyword == "section":
            scopes.append("")
        elif keyword == "end":
            if scopes:
                scopes.pop()
        elif name and "private" not in match.group("mods").split():
            stop = matches[index + 1].start() if index + 1 < len(matches) else len(clean)
            body = clean[match.end() : stop]
            cut = _STATEMENT_END.search(body)
            statement = " ".join((body[: cut.start()] if cut else body).split())
            qualified = name.removeprefix("_root_.")
            if not name.startswith("_root_."):
                qualified = ".".join([*(s for s in scopes if s), name])
            found.append(Premise(qualified, statement, module, keyword))
    return found


def header_imports(text: str) -> list[str]:
    """The modules a file imports (its ``import`` lines, ``public``/``meta`` ones too)."""
    try:
        tokens = lex(text)
    except SourceSyntaxError:
        return []
    modules: list[str] = []
    for a, b in _commands(text, tokens):
        words = [t.text for t in tokens[a:b]]
        while words and words[0] in ("public", "meta", "private"):
            words.pop(0)
        if not words or words[0] not in ("import", "prelude", "module"):
            break
        if words[0] == "import":
            modules += [w for w in words[1:] if w not in ("import", "public", "meta", "all")]
    return modules


def toolchain_sources(toolchain: str) -> Path | None:
    """``src/lean`` of an elan toolchain (``leanprover/lean4:v4.9.0``), where installed."""
    if not toolchain:
        return None
    home = Path(os.environ.get("ELAN_HOME", Path.home() / ".elan"))
    folder = toolchain.replace("/", "--").replace(":", "---")
    src = home / "toolchains" / folder / "src" / "lean"
    return src if src.is_dir() else None


def source_roots(root: Path, toolchain: str = "") -> list[Path]:
    """Where modules are looked up: the project, its Lake packages, the toolchain."""
    roots = [root]
    packages = root / ".lake" / "packages"
    if packages.is_dir():
        roots += sorted(p for p in packages.iterdir() if p.is_dir())
    core = toolchain_sources(toolchain)
    if core is not None:
        roots.append(core)
    return roots


def module_source(module: str, roots: Sequence[Path]) -> Path | None:
    """The ``.lean`` file of ``module`` (``Mathlib.Data.Nat.Basic``) under the first root."""
    relative = Path(*module.split(".")).with_suffix(".lean")
    for root in roots:
        candidate = root / relative
        if candidate.is_file():
            return candidate
    return None


def import_closure(
    imports: Iterable[str], roots: Sequence[Path], limit: int = MAX_MODULES
) -> list[tuple[str, Path]]:
    """(module, source) of every module reachable from ``imports``, breadth first."""
    queue = list(dict.fromkeys(imports))
    seen = set(queue)
    found: list[tuple[str, Path]] = []
    while queue and len(found) < limit:
        module = queue.pop(0)
        path = module_source(module, roots)
        if path is None:
            continue
        found.append((module, path))
        for child in _imports_of(path, _mtime(path)):
            if child not in seen:
                seen.add(child)
                queue.append(child)
    return found


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


@functools.lru_cache(maxsize=8192)
def _imports_of(path: Path, mtime: float) -> tuple[str, ...]:
    del mtime  # part of the cache key: an edited file is read again
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return tuple(header_imports(path.read_text(encoding="utf-8")))
    return ()


@functools.lru_cache(maxsize=8192)
def _module_premises(module: str, path: Path, mtime: float) -> tuple[Premise, ...]:
    del mtime
    try:
        return tuple(library_declarations(path.read_text(encoding="utf-8"), module))
    except (OSError, UnicodeDecodeError):
        return ()


@functools.lru_cache(maxsize=16)
def library_index(closure: tuple[tuple[str, Path], ...]) -> PremiseIndex:
    """The index of the declarations of the modules of ``closure`` (built once per closure)."""
    premises = [p for m, path in closure for p in _module_premises(m, path, _mtime(path))]
    return PremiseIndex(premises, syntax=LEAN)


class LeanPremiseIndexes:
    """Premise indexes per position (file and text before the hole's declaration)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._indexes: OrderedDict[tuple[object, ...], PremiseIndex] = OrderedDict()
        self.built = 0
        self.reused = 0

    def build(self, root: Path, toolchain: str, text: str, end: int) -> PremiseIndex:
        """The index at offset ``end`` of ``text`` (a file of the project at ``root``)."""
        closure = tuple(import_closure(header_imports(text), source_roots(root, toolchain)))
        try:
            own = lean_declarations(text, "", end=end)
        except SourceSyntaxError:
            own = []
        return PremiseIndex(own, library_index(closure))

    async def index_at(self, root: Path, toolchain: str, text: str, end: int) -> PremiseIndex:
        """:meth:`build`, cached; built in a thread (reading Mathlib's sources takes a while)."""
        key = (root, toolchain, text[:end])
        index = self._indexes.get(key)
        if index is not None:
            self.reused += 1
            self._indexes.move_to_end(key)
            return index
        index = await asyncio.to_thread(self.build, root, toolchain, text, end)
        self.built += 1
        self._indexes[key] = index
        while len(self._indexes) > self.size:
            self._indexes.popitem(last=False)
        return index


#: the indexes shared by every Lean strategy of this process
LEAN_INDEXES = LeanPremiseIndexes()
