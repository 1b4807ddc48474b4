"""A dune project's Coq theories, with the ``coqc`` flags dune gives each one.

Each ``(coq.theory (name X) ...)`` stanza in a ``dune`` file under the
``dune-project`` is a theory: the ``.v`` files of its folder (of its subfolders
too with ``(include_subdirs qualified)``, as sub-namespaces), less those its
``(modules ...)`` leaves out. Dune compiles each file of a theory with:

* the stanza's ``(flags ...)``, where ``:standard`` (the default) is ``-q``;
* ``-w -deprecated-native-compiler-option -w -native-compiler-disabled
  -native-compiler ondemand`` (no native code);
* ``-Q folder Y`` for every theory ``Y`` of the workspace that the theory
  needs through ``(theories ...)``, directly or not (dependencies first);
  an installed theory (in ``user-contrib``) needs no flag: Coq finds it;
* ``-R folder X`` for the theory's own folder: its files may require each
  other by their short names (``Require Import Foo.``) as well as by their
  full ones (``From X Require Import Foo.``).

That is what dune 2.9.3 does for ``(using coq 0.1)``, ``0.2`` and ``0.3``
(measured with ``dune build --verbose``), what later versions do too (their
``coq_rules.ml``: ``-R`` for the theory itself, ``-Q`` for the theories it
needs), and what dune assumes for a ``dune-project`` without a ``(using coq
...)`` line (it appends the newest version it knows). It is the fallback
when dune cannot be asked. When ``dune`` is on the ``PATH`` and the
``dune-project`` declares its Coq version, dune is asked (``dune rules`` on one
file of each theory, with its build folder in a temporary folder, so nothing
is written in the project) and its answer wins; native-code options in it are
replaced by the ones above (orch never compiles native code).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ProverHung
from ..provers.process import run_sync

__all__ = [
    "NO_NATIVE",
    "STANDARD_FLAGS",
    "DuneTheory",
    "coq_lang",
    "dune_theories",
    "read_sexps",
]

#: what ``:standard`` stands for in a stanza's ``(flags ...)``
STANDARD_FLAGS = ("-q",)
#: what dune adds after the stanza's flags when it compiles no native code
NO_NATIVE = (
    "-w",
    "-deprecated-native-compiler-option",
    "-w",
    "-native-compiler-disabled",
    "-native-compiler",
    "ondemand",
)
#: folders never searched for a dune project's sources
_SKIPPED = frozenset({"_build", "_opam", "node_modules"})
#: ``(using coq 0.3)`` in a ``dune-project``
_USING_COQ = re.compile(r"\(\s*using\s+coq\s+(\d+)\.(\d+)\s*\)")
#: seconds dune may take to print its rules
_ASK_TIMEOUT = 300.0

#: an S-expression as read here: an atom (a string) or a list of them
Sexp = str | list["Sexp"]


@dataclass(frozen=True, slots=True)
class DuneTheory:
    """One ``coq.theory`` stanza and the flags its files are compiled with."""

    #: its logical name (``A.B`` for ``(name A.B)``)
    name: str
    #: the folder of its ``dune`` file
    folder: Path
    #: its ``.v`` files
    files: tuple[Path, ...] = ()
    #: the ``coqc`` flags of its files (absolute folders)
    flags: tuple[str, ...] = ()
    #: the theories it names in ``(theories ...)``
    needs: tuple[str, ...] = ()
    #: where the flags come from: ``dune rules`` or ``the rules of (using coq X.Y)``
    origin: str = ""

    def holds(self, path: Path) -> bool:
        """Whether ``path`` is one of its files."""
        return path.resolve() in self.files


@dataclass(slots=True)
class _Stanza:
    name: str
    folder: Path
    flags: list[Sexp] | None
    needs: list[str]
    modules: list[Sexp] | None
    qualified: bool
    files: list[Path] = field(default_factory=list)


# -- reading S-expressions -------------------------------------------------------------

_TOKEN = re.compile(r'\s+|;[^\n]*|"(?:[^"\\]|\\.)*"|[()]|[^\s()";]+', re.S)


def read_sexps(text: str) -> list[Sexp]:
    """The forms of ``text`` as dune writes them: atoms, ``"strings"``, lists,
    ``;`` comments. An unbalanced text gives the forms closed so far."""
    stack: list[list[Sexp]] = [[]]
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token.isspace() or token.startswith(";"):
            continue
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) > 1:
                done = stack.pop()
                stack[-1].append(done)
        elif token.startswith('"'):
            stack[-1].append(re.sub(r"\\(.)", r"\1", token[1:-1]))
        else:
            stack[-1].append(token)
    return stack[0]


def _atoms(items: Sequence[Sexp]) -> list[str]:
    return [x for x in items if isinstance(x, str)]


def _fields(stanza: Sequence[Sexp]) -> dict[str, list[Sexp]]:
    """``(coq.theory (name X) (flags a b))`` -> ``{"name": ["X"], "flags": ["a", "b"]}``."""
    return {
        item[0]: item[1:]
        for item in stanza[1:]
        if isinstance(item, list) and item and isinstance(item[0], str)
    }


def _ordered_set(items: Sequence[Sexp], standard: Sequence[str]) -> list[str]:
    """dune's ordered-set language, as far as flags and modules use it: atoms,
    ``:standard``, ``(a b)`` groups and ``\\`` (what follows it is taken away)."""
    kept: list[str] = []
    removing = False
    for item in items:
        if isinstance(item, list):
            words = _ordered_set(item, standard)
        elif item == "\\":
            removing = True
            continue
        elif item == ":standard":
            words = list(standard)
        elif item.startswith("%{"):
            continue  # a variable needs dune to expand it (dune, when asked, does)
        else:
            words = [item]
        if removing:
            kept = [w for w in kept if w not in words]
        else:
            kept += words
    return kept


# -- the project's stanzas -------------------------------------------------------------


def coq_lang(dune_project: Path) -> tuple[int, int] | None:
    """The ``(using coq X.Y)`` version of a ``dune-project`` (None: not declared)."""
    try:
        found = _USING_COQ.search(dune_project.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    return (int(found[1]), int(found[2])) if found else None


def _hidden(parts: Sequence[str]) -> bool:
    return any(p.startswith(".") or p in _SKIPPED for p in parts)


def _dune_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("dune")):
        if path.is_file() and not _hidden(path.relative_to(root).parts[:-1]):
            yield path


def _stanzas(root: Path) -> list[_Stanza]:
    found: list[_Stanza] = []
    for dune in _dune_files(root):
        try:
            forms = read_sexps(dune.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue  # a dune file that cannot be read describes no theory we could use
        lists = [f for f in forms if isinstance(f, list) and f and isinstance(f[0], str)]
        subdirs = next((f for f in lists if f[0] == "include_subdirs"), None)
        qualified = subdirs is not None and _atoms(subdirs[1:]) == ["qualified"]
        for stanza in (f for f in lists if f[0] == "coq.theory"):
            fields = _fields(stanza)
            name = _atoms(fields.get("name", []))
            if not name:
                continue
            found.append(
                _Stanza(
                    name=name[0],
                    folder=dune.parent.resolve(),
                    flags=fields.get("flags"),
                    needs=_atoms(fields.get("theories", [])),
                    modules=fields.get("modules"),
                    qualified=qualified,
                )
            )
    for theory in found:
        theory.files = _files(theory)
    return found


def _files(stanza: _Stanza) -> list[Path]:
    """The theory's ``.v`` files, less those its ``(modules ...)`` leaves out (a module
    in a subfolder is ``sub.Name`` there)."""
    folder = stanza.folder
    found = folder.rglob("*.v") if stanza.qualified else folder.glob("*.v")
    by_module = {
        ".".join(p.relative_to(folder).with_suffix("").parts): p.resolve()
        for p in found
        if not _hidden(p.relative_to(folder).parts[:-1])
    }
    if stanza.modules is not None:
        wanted = _ordered_set(stanza.modules, sorted(by_module))
        by_module = {m: p for m, p in by_module.items() if m in wanted}
    return sorted(by_module.values())


def _closure(stanza: _Stanza, by_name: dict[str, _Stanza]) -> list[_Stanza]:
    """The workspace theories ``stanza`` needs, directly or not, each after those it needs."""
    order: list[_Stanza] = []

    def visit(name: str, trail: tuple[str, ...]) -> None:
        needed = by_name.get(name)
        if needed is None or needed in order or name in trail:
            return  # installed (Coq finds it), seen, or a cycle (dune refuses it)
        for sub in needed.needs:
            visit(sub, (*trail, name))
        order.append(needed)

    for name in stanza.needs:
        visit(name, (stanza.name,))
    return order


def _table_flags(stanza: _Stanza, by_name: dict[str, _Stanza]) -> tuple[str, ...]:
    own = _ordered_set(stanza.flags, STANDARD_FLAGS) if stanza.flags is not None else []
    if stanza.flags is None:
        own = list(STANDARD_FLAGS)
    needed = [w for t in _closure(stanza, by_name) for w in ("-Q", str(t.folder), t.name)]
    return (*own, *NO_NATIVE, *needed, "-R", str(stanza.folder), stanza.name)


# -- asking dune ----------------------------------------------------------------------


def _runs(form: Sexp, cwd: str = "") -> Iterator[tuple[str, list[str]]]:
    """Every ``(run prog args...)`` in a rule, with the folder its ``chdir`` gives it."""
    if not isinstance(form, list) or not form:
        return
    if form[0] == "chdir" and len(form) >= 3 and isinstance(form[1], str):
        for sub in form[2:]:
            yield from _runs(sub, form[1])
        return
    if form[0] == "run" and all(isinstance(x, str) for x in form[1:]):
        yield cwd, _atoms(form[1:])
        return
    for sub in form:
        yield from _runs(sub, cwd)


def _without_native(flags: list[str]) -> list[str]:
    """dune's native-code options (``-native-compiler on``, ``-nI dir``, ...) replaced by
    :data:`NO_NATIVE`."""
    kept: list[str] = []
    native = False
    i = 0
    while i < len(flags):
        word = flags[i]
        option = word in ("-native-compiler", "-native-output-dir", "-nI")
        warning = word == "-w" and "native-compiler" in (flags[i + 1 : i + 2] or [""])[0]
        if (option or warning) and i + 1 < len(flags):
            native = True
            i += 2
        else:
            kept.append(word)
            i += 1
    if not native:
        return kept
    at = next((j for j, w in enumerate(kept) if w in ("-R", "-Q", "-I", "-boot")), len(kept))
    return [*kept[:at], *NO_NATIVE, *kept[at:]]


def _from_rule(
    cwd: str, argv: list[str], root: Path, build: Path
) -> tuple[Path, tuple[str, ...]] | None:
    """The source a ``coqc`` run compiles and its flags, its folders as they are in the
    project (None when one of them is only in dune's build folder)."""
    if not argv or Path(argv[0]).name != "coqc" or not argv[-1].endswith(".v"):
        return None
    here = Path(cwd) if cwd else build / "default"
    context = build / "default"

    def in_project(word: str) -> Path | None:
        place = Path(os.path.normpath(here / word))
        if place.is_relative_to(build):
            return root / place.relative_to(context) if place.is_relative_to(context) else None
        return place

    args = argv[1:-1]
    flags: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        width = {"-R": 3, "-Q": 3, "-I": 2}.get(word, 0)
        if width and i + width <= len(args):
            folder = in_project(args[i + 1])
            if folder is None:
                return None
            flags += [word, str(folder), *args[i + 2 : i + width]]
            i += width
        else:
            flags.append(word)
            i += 1
    source = in_project(argv[-1])
    if source is None:
        return None
    return source.resolve(), tuple(_without_native(flags))


def _ask_dune(root: Path, targets: Sequence[tuple[str, Path]]) -> dict[str, tuple[str, ...]]:
    """The flags dune gives each theory (by name), from ``dune rules`` on the file named
    with it; empty when dune is not on the ``PATH`` or cannot tell."""
    dune = shutil.which("dune")
    first = dict(targets)
    if dune is None or not first:
        return {}
    with tempfile.TemporaryDirectory(prefix="orch-dune-") as scratch:
        build = Path(scratch).resolve() / "_build"
        wanted = [str(f.with_suffix(".vo").relative_to(root)) for f in first.values()]
        try:
            run = run_sync(
                [dune, "rules", "--root", str(root), "--build-dir", str(build), *wanted],
                cwd=root,
                timeout=_ASK_TIMEOUT,
                # dune's shared cache left alone; run from a dune rule, not as one
                env={
                    **{k: v for k, v in os.environ.items() if k != "INSIDE_DUNE"},
                    "DUNE_CACHE": "disabled",
                },
            )
        except (OSError, ProverHung):
            return {}
        if run.returncode != 0:
            return {}
        found: dict[Path, tuple[str, ...]] = {}
        for form in read_sexps(run.stdout):
            for cwd, argv in _runs(form):
                rule = _from_rule(cwd, argv, root, build)
                if rule is not None:
                    found[rule[0]] = rule[1]
    return {name: found[path] for name, path in first.items() if path in found}


def _stamp(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


@functools.lru_cache(maxsize=32)
def _asked(
    root: Path, targets: tuple[tuple[str, Path], ...], stamps: tuple[tuple[str, int], ...]
) -> dict[str, tuple[str, ...]]:
    """:func:`_ask_dune`, once per state of the project's dune files and set of sources."""
    del stamps  # only the cache's key
    return _ask_dune(root, targets)


def dune_theories(dune_project: Path, *, ask: bool = True) -> tuple[DuneTheory, ...]:
    """The theories of the dune project whose ``dune-project`` is ``dune_project``, each
    with its flags (dune's answer when ``ask`` and dune can tell, else the rules above),
    in the order of their ``dune`` files."""
    dune_project = dune_project.resolve()
    root = dune_project.parent
    stanzas = _stanzas(root)
    by_name = {s.name: s for s in stanzas}
    version = coq_lang(dune_project)
    asked: dict[str, tuple[str, ...]] = {}
    if ask and version is not None:  # without it, dune would append one to dune-project
        targets = tuple((s.name, s.files[0]) for s in stanzas if s.files)
        # what dune's answer depends on: its files and which sources there are (not
        # what they say: a proof written into one does not change the flags)
        stamps = [(str(p), _stamp(p)) for p in (dune_project, *_dune_files(root))]
        stamps += [(str(f), 0) for t in stanzas for f in t.files]
        asked = _asked(root, targets, tuple(stamps))
    declared = ".".join(map(str, version)) if version else "missing"
    return tuple(
        DuneTheory(
            name=s.name,
            folder=s.folder,
            files=tuple(s.files),
            flags=asked.get(s.name) or _table_flags(s, by_name),
            needs=tuple(s.needs),
            origin="dune rules" if s.name in asked else f"the rules of (using coq {declared})",
        )
        for s in stanzas
    )
