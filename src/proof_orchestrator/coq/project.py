"""Reading a Coq project's layout as its build tool does: ``_CoqProject`` or dune.

* ``_CoqProject``: ``-R dir Name``, ``-Q dir Name``, ``-I dir``, ``-arg "..."``
  and the ``.v`` files it lists (comments start with ``#``).
* dune: a ``dune-project`` at the root and, in any folder below it, a ``dune``
  file with a ``(coq.theory (name X) ...)`` stanza: each theory's files are
  compiled with the flags dune gives them (:mod:`.dune`: the stanza's flags,
  ``-Q`` for the theories it needs, ``-R folder X`` for its own folder), which
  :meth:`CoqProject.flags_for` returns; :attr:`CoqProject.flags` maps every
  theory's folder with ``-R``, for what is not about one file.

The nearest ``_CoqProject`` wins over a ``dune-project`` in the same folder
or above it (editors read ``_CoqProject``; a project with both keeps them in
step).
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ProverHung
from ..provers.process import run_sync
from .dune import DuneTheory, dune_theories

__all__ = [
    "CoqProject",
    "coq_library_folders",
    "coq_library_roots",
    "find_coqproject",
    "load_coqproject",
    "load_dune_project",
    "loaded_modules",
    "module_source",
    "project_for",
    "working_folder_flags",
]


@dataclass(frozen=True, slots=True)
class CoqProject:
    """Where a project lives and the flags that ``coqc``/``coqtop`` need for it.

    ``flags`` holds ``-Q``/``-R``/``-I`` pairs with absolute directories and
    the options given through ``-arg``; ``files`` lists the ``.v`` files the
    project names (empty when there is no project description).
    """

    root: Path
    flags: tuple[str, ...] = ()
    files: tuple[Path, ...] = field(default=())
    #: the file that describes the project (``_CoqProject`` or ``dune-project``)
    coqproject: Path | None = None
    #: a dune project's theories, each with the flags of its own files
    theories: tuple[DuneTheory, ...] = ()

    @property
    def kind(self) -> str:
        if self.coqproject is None:
            return "none"
        return "dune" if self.coqproject.name == "dune-project" else self.coqproject.name

    def mappings(self, flags: Sequence[str] | None = None) -> list[tuple[str, Path, str]]:
        """The ``(-Q or -R, folder, logical prefix)`` triples of ``flags`` (:attr:`flags`)."""
        flags = self.flags if flags is None else flags
        return [
            (flag, Path(flags[i + 1]), flags[i + 2])
            for i, flag in enumerate(flags[:-2])
            if flag in ("-Q", "-R")
        ]

    def theory_of(self, path: Path) -> DuneTheory | None:
        """The dune theory ``path`` is a file of (else the deepest whose folder holds it)."""
        path = path.resolve()
        held = [t for t in self.theories if t.holds(path)]
        if not held:
            held = [t for t in self.theories if path.is_relative_to(t.folder)]
        return max(held, key=lambda t: len(t.folder.parts), default=None)

    def flags_for(self, path: Path) -> tuple[str, ...]:
        """The flags ``path`` is compiled with: its dune theory's, else :attr:`flags`."""
        theory = self.theory_of(path)
        return theory.flags if theory is not None else self.flags


def working_folder_flags(root: Path, flags: Sequence[str], coqc: str = "coqc") -> tuple[str, ...]:
    """Flags that stand in for ``root`` as the working folder of ``coqc``/``coqtop``.

    Coq puts its working folder into the load path under the empty logical name
    (a lone file's ``Require Import Sibling.``). Run elsewhere (in a scratch
    folder, so that what Coq writes where it runs, a failing ``lia``'s
    ``.lia.cache`` or an ``Extraction "x.ml"``, stays out of the user's tree),
    ``-Q root ""`` does the same, first, so the project's own mappings win. It
    is left out when a folder the flags map is ``root``, above it or below it:
    there Coq would report the folder as remapped, and the project's mappings
    name its files anyway. It is left out too inside a folder Coq maps by itself
    (its standard library, ``user-contrib``, ``COQPATH``): Coq's own working
    folder comes last in the load path, where ``-Q`` would come first, and a
    stdlib file's ``Require Import Ensembles.`` would then find
    ``Sets/Ensembles.vo`` under the wrong name; there the library's mapping
    names the siblings already.
    """
    root = root.resolve()
    if any(root == f or root.is_relative_to(f) for f in coq_library_folders(coqc)):
        return ()
    mapped = [
        Path(flags[i + 1]).resolve() for i, flag in enumerate(flags[:-2]) if flag in ("-Q", "-R")
    ]
    if any(m == root or m.is_relative_to(root) or root.is_relative_to(m) for m in mapped):
        return ()
    return ("-Q", str(root), "")


@functools.cache
def coq_library_roots(coqc: str = "coqc") -> tuple[tuple[Path, str], ...]:
    """The folders Coq puts in its load path by itself, each with the logical
    prefix its files are loaded under: ``COQPATH``'s and ``user-contrib`` (none:
    their subfolders name the libraries) and the library's ``theories``
    (``Coq``), as ``coqc -where`` places them."""
    roots = [(Path(p), "") for p in os.environ.get("COQPATH", "").split(os.pathsep) if p]
    try:
        run = run_sync([coqc, "-where"], timeout=60)
        where = run.stdout.strip() if run.returncode == 0 else ""
    except (OSError, ProverHung):
        where = ""  # no coqc here: nothing is mapped by it
    if where:
        roots += [(Path(where) / "theories", "Coq"), (Path(where) / "user-contrib", "")]
    return tuple((f.resolve(), prefix) for f, prefix in roots if f.is_dir())


def flag_roots(flags: Sequence[str], cwd: Path) -> list[tuple[Path, str]]:
    """The folders the ``-Q``/``-R`` pairs of ``flags`` map (relative to ``cwd``), each
    with its logical prefix, then ``cwd`` itself under the empty prefix (as for ``coqc``)."""
    pairs = [
        (cwd / flags[i + 1], flags[i + 2])
        for i, flag in enumerate(flags[:-2])
        if flag in ("-Q", "-R")
    ]
    return [*pairs, (cwd, "")]


def under_prefix(prefix: str, parts: Sequence[str]) -> list[str] | None:
    """``parts`` less the logical ``prefix`` (``""``: none); None when they lie outside it."""
    head = prefix.split(".") if prefix else []
    return list(parts[len(head) :]) if list(parts[: len(head)]) == head else None


#: a module name in ``Print Libraries``'s output, one per line
_MODULE_LINE = re.compile(r"^\s+([A-Za-z_][\w']*(?:\.[A-Za-z_][\w']*)*)\s*$", re.M)


def loaded_modules(print_libraries: str) -> list[str]:
    """The modules a ``Print Libraries`` output lists, in its order, each once."""
    return list(dict.fromkeys(_MODULE_LINE.findall(print_libraries)))


def module_source(module: str, flags: Sequence[str] = (), cwd: Path | None = None) -> Path | None:
    """The ``.v`` source of the loaded module ``module`` (:func:`_module_source`, remembered)."""
    return _module_source(module, tuple(flags), cwd or Path.cwd())


@functools.lru_cache(maxsize=8192)
def _module_source(module: str, flags: tuple[str, ...], cwd: Path) -> Path | None:
    """The ``.v`` source of the loaded module ``module`` (``stdpp.sets``), or None.

    Found as Coq finds its ``.vo``: under the ``-Q``/``-R`` pairs of ``flags`` and
    ``cwd`` (:func:`flag_roots`), then Coq's own load path
    (:func:`coq_library_roots`). A compiled module met first without its
    source beside it has no source here (a later folder's file is another module).
    """
    parts = module.split(".")
    for folder, prefix in [*flag_roots(flags, cwd), *coq_library_roots()]:
        rest = under_prefix(prefix, parts)
        if not rest:
            continue
        candidate = folder.joinpath(*rest).with_suffix(".v")
        if candidate.is_file():
            return candidate
        if candidate.with_suffix(".vo").is_file():
            return None  # the module is this compiled file, whose source is not beside it
    return None


def coq_library_folders(coqc: str = "coqc") -> tuple[Path, ...]:
    """The folders of :func:`coq_library_roots`."""
    return tuple(folder for folder, _ in coq_library_roots(coqc))


#: a sentence that loads CoqHammer (``From Hammer Require Import Tactics.``, ``Require Hammer.``)
_LOADS_HAMMER = re.compile(
    r"(?m)^\s*(?:From\s+Hammer\s+Require|Require\s+(?:(?:Import|Export)\s+)?Hammer\b)"
)
#: folders of a project that hold no source of its own
_NOT_SOURCES = frozenset({".orch", "_build", "_opam", "node_modules", ".git"})


def loads_hammer(root: Path) -> bool:
    """Whether some ``.v`` file of the project at ``root`` loads CoqHammer.

    Such a project already depends on CoqHammer's tactics, so a proof may add
    ``From Hammer Require Import Tactics.`` without ``--allow-import``.
    """
    if not root.is_dir():
        return False
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [d for d in subfolders if d not in _NOT_SOURCES]
        for name in names:
            if name.endswith(".v"):
                try:
                    text = (Path(folder) / name).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                if _LOADS_HAMMER.search(text):
                    return True
    return False


def _nearest(start: Path, name: str) -> Path | None:
    here = start if start.is_dir() else start.parent
    for folder in (here, *here.parents):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def find_coqproject(start: Path) -> Path | None:
    """The nearest ``_CoqProject`` in ``start`` or one of its parents."""
    return _nearest(start, "_CoqProject")


def load_coqproject(path: Path) -> CoqProject:
    """Parse a ``_CoqProject`` file (comments start with ``#``)."""
    root = path.parent.resolve()
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0]
        words.extend(shlex.split(line))
    flags: list[str] = []
    files: list[Path] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-Q", "-R") and i + 2 < len(words):
            directory = (root / words[i + 1]).resolve()
            flags += [word, str(directory), words[i + 2]]
            i += 3
        elif word == "-I" and i + 1 < len(words):
            flags += ["-I", str((root / words[i + 1]).resolve())]
            i += 2
        elif word == "-arg" and i + 1 < len(words):
            flags += shlex.split(words[i + 1])
            i += 2
        elif word.endswith(".v"):
            files.append((root / word).resolve())
            i += 1
        else:
            i += 1  # other options (-docroot, .mlg files, ...) do not matter to us
    return CoqProject(root=root, flags=tuple(flags), files=tuple(files), coqproject=path)


def load_dune_project(path: Path, *, ask: bool = True) -> CoqProject:
    """The Coq theories of the dune project whose ``dune-project`` is ``path``
    (``ask``: dune itself, when it is on the ``PATH``; see :mod:`.dune`)."""
    root = path.parent.resolve()
    theories = dune_theories(path, ask=ask)
    flags: list[str] = []
    seen: list[tuple[str, ...]] = []
    for theory in theories:
        flags += ["-R", str(theory.folder), theory.name]
        pairs = {i + k for i, w in enumerate(theory.flags) if w in ("-R", "-Q") for k in range(3)}
        extra = tuple(w for i, w in enumerate(theory.flags) if i not in pairs)
        if extra and extra not in seen:  # one set of flags for the project: each once
            seen.append(extra)
            flags += extra
    files = tuple(f for t in theories for f in t.files)
    return CoqProject(
        root=root, flags=tuple(flags), files=files, coqproject=path, theories=theories
    )


def project_for(path: Path) -> CoqProject:
    """The project that ``path`` (a file or directory) belongs to."""
    start = path.resolve()
    coqproject = find_coqproject(start)
    dune = _nearest(start, "dune-project")
    # a dune project nearer than the nearest _CoqProject (or alone) describes the file
    nearer = dune is not None and (
        coqproject is None or len(dune.parent.resolve().parts) > len(coqproject.parent.parts)
    )
    if dune is not None and nearer:
        project = load_dune_project(dune)
        if project.flags:
            return project
    if coqproject is not None:
        return load_coqproject(coqproject)
    root = start if start.is_dir() else start.parent
    return CoqProject(root=root)
