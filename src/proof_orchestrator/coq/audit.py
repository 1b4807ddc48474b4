"""The Coq axiom audit, written once: what ``Print Assumptions`` says and what it may say.

Every check of a Coq proof goes through here: the whole-file verifier
(:mod:`.verify`), ``orch eval``'s position-faithful check (:mod:`.evaluation`)
and the helper-lemma tickets an agent completes (:mod:`.agent`).

A proof is accepted when everything ``Print Assumptions`` lists for it is

* an axiom the file declares itself (``Axiom``, ``Parameter``, ...: the
  user's own trust, :func:`~.holes.declared_axioms`);
* in the file's *trust base*: a library axiom that the file's finished
  (``Qed``) proofs already rest on (:class:`TrustBase` in a session,
  :meth:`.verify.CoqVerifier.trust_base` for a compiled file);
* an axiom that an installed library the file loads declares (``Axiom``,
  ``Parameter``, ``Conjecture`` in its source, :func:`library_axiom`): the
  Reals' ``ClassicalDedekindReals.sig_forall_dec``, ``Classical_Prop.classic``.
  Loading the library is the user's trust in it, as Lean's tools accept the
  axioms its core declares; a file with every proof admitted has no finished
  proof to show that trust, and a Reals lemma rests on those axioms whatever
  its proof. An ``Admitted`` lemma of a library is still refused;
* a parameter of a functor the lemma is in (``O.lt_trans`` inside ``Module
  Make (O : OrderedType)``: :func:`is_parameter`, with the names from
  :func:`~.holes.functor_parameters`); or
* a variable of a section the lemma is in (hypotheses of the section, not
  axioms: :func:`without_section_variables`).

An assumption that is a *hole of the project* (an ``Admitted`` lemma-like
declaration that is itself a goal, in the same file or in a project file it
requires, found by :class:`ProjectHoles` from its full name) does not refuse
the proof: the proof is accepted closed modulo that hole, and the hole is
named (``--strict-holes`` refuses such proofs again). Anything else (an
``Admitted`` definition, a new library axiom, disabled guard checking) is a
new assumption, and the proof is refused with it named.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..goals import HoleUse
from .holes import CoqHole, declared_axioms, functor_parameters, module_axioms, scan_coq_text
from .project import coq_library_roots, flag_roots, under_prefix

__all__ = [
    "LOGICAL_ROOT",
    "ProjectHoles",
    "TrustBase",
    "as_parameter",
    "declared_axioms",
    "from_outside",
    "functor_parameters",
    "is_parameter",
    "library_axiom",
    "library_axiom_named",
    "listed_axioms",
    "located_constant",
    "new_axioms",
    "parse_assumptions",
    "source_of",
    "unexplained",
    "without_section_variables",
]

#: the logical name the verifier's compiled copies are loaded under
LOGICAL_ROOT = "OrchCheck"
_HEADER = re.compile(r"^[A-Z][^:]*:$")
#: coqtop -emacs wraps notes ("Fetching opaque proofs from disk ...") in these tags
_MESSAGE_TAGS = re.compile(r"<(infomsg|warning)>.*?</\1>", re.S)


def parse_assumptions(output: str) -> frozenset[str]:
    """The assumptions listed by ``Print Assumptions``, one key each.

    ``name : type`` entries give ``name``; other entries (``X is assumed to be
    guarded.``) are kept whole, prefixed by their header when it is not
    ``Axioms:``.
    """
    keys: set[str] = set()
    header = ""
    output = _MESSAGE_TAGS.sub("", output)
    for line in output.splitlines():
        if not line.strip() or line.startswith((" ", "\t")):
            continue
        if line.strip() == "Closed under the global context":
            continue
        if _HEADER.match(line):
            header = line
            continue
        if " : " in line and header in ("Axioms:", "Section Variables:", ""):
            keys.add(line.split(" : ", 1)[0].strip())
        elif header in ("Axioms:", ""):
            keys.add(line.strip())
        else:
            keys.add(f"{header} {line.strip()}")
    return frozenset(key.removeprefix(f"{LOGICAL_ROOT}.") for key in keys)


def without_section_variables(output: str) -> str:
    """``Print Assumptions`` output without its ``Section Variables:`` block."""
    kept: list[str] = []
    skipping = False
    for line in output.splitlines():
        if _HEADER.match(line):
            skipping = line.strip() == "Section Variables:"
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def from_outside(key: str, name: str, lemmas: Mapping[str, tuple[str, int]], stem: str) -> str:
    """An in-place key as the outside audit names it: ``bar`` in ``Make`` is ``stem.Make.bar``.

    Inside the functor, a lemma of the same functor is printed by its short
    name; the holes it stands for are known by their qualified names.
    """
    scope = name.rsplit(".", 1)[0] if "." in name else ""
    qualified = f"{scope}.{key}" if scope else key
    return f"{stem}.{qualified}" if qualified in lemmas else key


def is_parameter(key: str, parameters: frozenset[str]) -> bool:
    """Whether an assumption (``O.lt_trans``) belongs to one of the module parameters."""
    return "." in key and " " not in key and key.split(".", 1)[0] in parameters


_LOCATED = re.compile(r"^Constant (\S+)(?: \(alias of (\S+)\))?", re.M)


def located_constant(output: str) -> str | None:
    """The constant a ``Locate name.`` output names first (an alias: what it stands for).

    Inside ``Module Make (O : OrderedType). Import O.`` a parameter's member is
    printed unqualified (``lt_irrefl``) by ``Print Assumptions``; ``Locate``
    gives its path (``O.lt_irrefl``), which :func:`is_parameter` recognises.
    """
    match = _LOCATED.search(output)
    if match is None:
        return None
    return match.group(2) or match.group(1)


def as_parameter(key: str, located: str | None, parameters: frozenset[str]) -> str:
    """``key`` as the parameter member ``located`` says it is, else ``key`` unchanged."""
    if located is not None and is_parameter(located, parameters):
        return located
    return key


def listed_axioms(output: str) -> list[str]:
    """The axioms a ``Print Assumptions`` output lists (the ``Axioms:`` part only:
    section variables are not axioms)."""
    if "Closed under the global context" in output or "Axioms:" not in output:
        return []
    part = output.split("Axioms:", 1)[1]
    part = re.split(r"\n(?:Section Variables|Opaque constants|Transparent constants)", part)[0]
    return re.findall(r"^([\w'.]+)\s*:", part, re.M)


def new_axioms(output: str, allowed: frozenset[str]) -> list[str]:
    """Axioms in a ``Print Assumptions`` output that the file does not declare itself
    (``allowed``: short names)."""
    return [n for n in listed_axioms(output) if n.rsplit(".", 1)[-1] not in allowed]


def unexplained(output: str, declared: frozenset[str], parameters: frozenset[str]) -> list[str]:
    """The axioms of a ``Print Assumptions`` output that neither the file's own
    declarations nor the functor parameters in scope explain (the trust base
    is asked apart, only when this is not empty: it costs prover queries)."""
    return [n for n in new_axioms(output, declared) if not is_parameter(n, parameters)]


class TrustBase:
    """The axioms the ``Qed`` proofs before a goal rest on, filled in as the goals advance.

    The same rule as the verifier's trust base (:class:`~.verify.CoqVerifier`), position-faithful:
    at goal ``k`` of a file, the axioms listed by ``Print Assumptions`` for the
    file's finished proofs ``0 .. k-1``, asked once each in the goal's session
    (where all of them are defined). The goal's own name never counts.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self._names = list(names)
        self._asked = 0
        self._axioms: set[str] = set()

    async def before(self, session: Any, index: int) -> frozenset[str]:
        """The trust base at the file's ``index``-th ``Qed`` proof; ``session`` is at it."""
        while self._asked < min(index, len(self._names)):
            name = self._names[self._asked]
            self._asked += 1
            self._axioms.update(listed_axioms(await session.query(f"Print Assumptions {name}.")))
        return frozenset(self._axioms)


@functools.cache
def _source_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


@functools.cache
def _library_file_axioms(file: Path) -> frozenset[str]:
    """:func:`~.holes.module_axioms` of an installed library file (read once)."""
    return module_axioms(_source_text(file))


def _module_file(directory: Path, parts: Sequence[str]) -> tuple[Path, str] | None:
    """The file of ``directory`` that the module path ``parts`` (a constant's full
    name less its root's prefix) points into, and the constant's name in it.

    The longest module path that is a file wins: ``A.B.c`` is ``A/B.v``'s ``c``
    before ``A.v``'s ``B.c``.
    """
    for cut in range(len(parts) - 1, 0, -1):
        file = directory.joinpath(*parts[: cut - 1], parts[cut - 1] + ".v")
        if file.is_file():
            return file, ".".join(parts[cut:])
    return None


def library_axiom(full: str, roots: Sequence[tuple[Path, str]] | None = None) -> bool:
    """Whether the constant ``full`` (its full name, as ``Locate`` gives it:
    ``Coq.Reals.ClassicalDedekindReals.sig_forall_dec``) is declared by an axiom
    sentence in the source of an installed library (``roots``: folders and the
    logical prefix each is loaded under; by default Coq's own,
    :func:`~.project.coq_library_roots`). False when no source is found: an
    ``Admitted`` lemma, or a library shipped without sources.
    """
    parts = full.split(".")
    for folder, prefix in roots if roots is not None else coq_library_roots():
        rest = under_prefix(prefix, parts)
        found = _module_file(folder, rest) if rest is not None else None
        if found is not None:
            file, name = found
            return name in _library_file_axioms(file)
    return False


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w'.]){re.escape(name)}(?![\w'])", text) is not None


@functools.cache
def _library_file_holes(file: Path) -> frozenset[str]:
    """The names of the ``Admitted`` declarations of an installed library file."""
    return frozenset(hole.goal.name for hole in scan_coq_text(file, _source_text(file)))


def library_axiom_named(
    printed: str, modules: Sequence[tuple[str, Path | None]], texts: Sequence[str]
) -> str | None:
    """The installed library's axiom a short name (``lor``, as ``Print Assumptions``
    prints it inside a file after ``Import``) stands for, when it can be no other
    constant; None otherwise (the name is then ``Locate``d, or refused).

    ``Locate lor.`` cannot even be parsed where ``lor`` is an infix keyword, as
    after ``Require Import Sint63``. The name is taken for a library's axiom when
    a module of ``modules`` (what the file loaded, with its source:
    :func:`~.project.module_source`) declares an axiom of that name
    whose full name ends with ``printed``, and nothing else could be meant: the
    name's last part appears nowhere in ``texts`` (the file and the project files
    it loads), and no loaded module has an ``Admitted`` declaration of that name
    (what ``Print Assumptions`` lists is an axiom or an admitted constant).
    """
    base = printed.split(".")[-1]
    if any(_mentions(text, base) for text in texts):
        return None
    found: list[str] = []
    for module, source in modules:
        if source is None:
            continue
        text = _source_text(source)
        if base not in text:
            continue
        if base in _library_file_holes(source):
            return None  # an admitted lemma of that name would be listed the same way
        found += [
            full
            for full in (f"{module}.{name}" for name in _library_file_axioms(source))
            if full == printed or full.endswith(f".{printed}")
        ]
    return found[0] if len(set(found)) == 1 else None


def source_of(logical: str, flags: Sequence[str], cwd: Path) -> tuple[Path, str] | None:
    """The project file a constant's full name (``Lib.B.b``) comes from, and its name there (``b``).

    Read from the ``-Q``/``-R`` pairs of ``flags`` (directories relative to
    ``cwd``); the current folder stands for the empty prefix, as for ``coqc``.
    None for a name outside the project (the standard library, a plugin).
    """
    parts = logical.split(".")
    for directory, prefix in flag_roots(flags, cwd):
        rest = under_prefix(prefix, parts)
        found = _module_file(directory, rest) if rest is not None else None
        if found is not None:
            return found
    return None


class ProjectHoles:
    """Which assumptions of a proof are holes of the project's other files.

    An assumption printed as ``Lib.B.b`` (its full name, after ``Locate``) is
    a hole when :func:`source_of` finds its file and that file's current text
    has ``b`` as a hole (an ``Admitted`` lemma-like declaration). Each file is
    scanned once per version (size and modification time).
    """

    def __init__(self, flags: Sequence[str], cwd: Path) -> None:
        self.flags = tuple(flags)
        self.cwd = cwd
        self._scanned: dict[Path, tuple[tuple[int, int], dict[str, CoqHole]]] = {}

    def holes_of(self, file: Path) -> dict[str, CoqHole]:
        """The holes of ``file`` by qualified name (empty when it cannot be read)."""
        try:
            stat = file.stat()
            version = (stat.st_size, stat.st_mtime_ns)
            cached = self._scanned.get(file)
            if cached is not None and cached[0] == version:
                return cached[1]
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return {}
        holes = {hole.goal.qualified_name: hole for hole in scan_coq_text(file, text)}
        self._scanned[file] = (version, holes)
        return holes

    def hole(self, logical: str, besides: Path) -> HoleUse | None:
        """The hole ``logical`` (a full name) stands for, if any; never one of ``besides``."""
        found = source_of(logical, self.flags, self.cwd)
        if found is None:
            return None
        file, name = found
        file = file.resolve()
        if file == besides.resolve():
            return None
        hole = self.holes_of(file).get(name)
        if hole is None:
            return None
        return HoleUse(str(file), name, hole.goal.fingerprint, logical)
