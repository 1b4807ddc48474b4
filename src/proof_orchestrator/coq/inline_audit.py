"""The axiom audit written into the text the check compiles: no second process.

A whole-file check compiles the patched text with ``coqc``. Rather than load
the result again in ``coqtop`` to ask ``Print Assumptions`` (a second load of
every library the file requires: often longer than the compile), the
questions go at the end of the text itself, each answer to its own file with
``Redirect``:

* a **union**: one definition whose body mentions every lemma asked
  (``let _ := @a in let _ := @b in I``) and one ``Print Assumptions`` of it.
  Coq walks the shared dependencies once, so asking about every finished
  proof of a file costs about one lemma's walk (89 lemmas of std++'s
  ``fin_sets``: 0.1 s as a union, 7 s one by one);
* **each** lemma on its own, when the answers must be told apart;
* ``Locate`` of names an answer printed short (``classic`` after ``Import
  Classical``), for their full names;
* ``Print Libraries``: what the file loaded.

A lemma inside a functor (``Module Make (O : OrderedType)``) cannot be named
after its module ends; its question goes right after its proof, on the same
line, so that every line of the text keeps its number (a compile error still
names the candidate's line). When a question at the end cannot be asked (a
name that does not exist there), :func:`plan_audit` with ``in_place=True``
asks every question after its lemma's proof instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .audit import (
    LOGICAL_ROOT,
    from_outside,
    located_constant,
    parse_assumptions,
    without_section_variables,
)
from .holes import functor_parameters, lemma_ends
from .project import loaded_modules

__all__ = ["AuditAnswers", "AuditPlan", "plan_audit"]

#: output files of the questions are named after this, in the folder coqc runs in
_OUTPUT = "orch-audit"
#: the definition whose assumptions are the union's (a name no file uses)
_UNION = "orch_audit_union__"
_TRUE = "Coq.Init.Logic.True"
_I = "Coq.Init.Logic.I"


@dataclass(slots=True)
class AuditAnswers:
    """What the audited compile printed, with the file's own lemmas named ``stem.name``."""

    #: keys of the union's ``Print Assumptions`` (members asked after their proof are in
    #: :attr:`each`)
    union: frozenset[str] = frozenset()
    #: keys of each lemma asked on its own
    each: dict[str, frozenset[str]] = field(default_factory=dict)
    #: full name of each (lemma, key) located; absent when ``Locate`` found no constant
    located: dict[tuple[str, str], str] = field(default_factory=dict)
    #: the modules loaded at the end of the file (``Print Libraries``)
    libraries: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AuditPlan:
    """A text with its questions, and how to read the answers."""

    path: Path
    #: the text to compile: the checked text and the questions
    text: str
    #: the number of lines of the checked text: an error after it is the questions'
    text_lines: int
    #: output file (without ``.out``) -> what it answers: ("union", name),
    #: ("each", name) or ("locate", name, key)
    questions: Mapping[str, tuple[str, ...]]
    #: qualified name -> (name as written, offset after its proof): the file's lemmas
    lemmas: Mapping[str, tuple[str, int]]

    def answers(self, folder: Path, *, complete: bool = True) -> AuditAnswers:
        """The answers written into ``folder`` by a compile of :attr:`text` there.

        A question whose answer is missing or empty gets a ``<missing …>`` key,
        which no rule accepts (``Redirect`` opens its file before the command
        runs: a command that failed leaves an empty one). ``complete=False``
        (the compile stopped at a question): every answer counts as missing.
        """
        stem = self.path.stem
        union: set[str] = set()
        each: dict[str, frozenset[str]] = {}
        located: dict[tuple[str, str], str] = {}
        libraries: tuple[str, ...] = ()
        for output, (kind, name, *rest) in self.questions.items():
            file = folder / f"{output}.out"
            text = file.read_text(encoding="utf-8") if complete and file.exists() else None
            if text is not None and not text.strip():
                text = None
            if kind == "libraries":
                libraries = tuple(loaded_modules(text or ""))
                continue
            if kind == "locate":
                where = located_constant(text) if text is not None else None
                if where is not None:
                    located[name, rest[0]] = where
                continue
            if text is None:
                keys = frozenset({f"<missing {name}: no answer>"})
            else:
                # at the end a lemma is named from the top of the file; after its proof,
                # from inside its module (and a section's variables are listed too:
                # hypotheses of the section, not axioms)
                scope = name if self._in_place(output) else ""
                keys = frozenset(
                    from_outside(key, scope, self.lemmas, stem)
                    for key in parse_assumptions(without_section_variables(text))
                )
            if kind == "union":
                union |= keys
            else:
                each[name] = keys
        return AuditAnswers(frozenset(union), each, located, libraries)

    def _in_place(self, output: str) -> bool:
        return output.endswith("-here")


def plan_audit(
    path: Path,
    text: str,
    *,
    union: Sequence[str] = (),
    each: Sequence[str] = (),
    locate: Mapping[str, Sequence[str]] | None = None,
    in_place: bool = False,
) -> AuditPlan:
    """``text`` with the questions of the module docstring for the lemmas named.

    ``union``: lemmas whose assumptions are asked together; ``each``: lemmas
    asked one by one; ``locate``: per lemma, the keys to ``Locate`` (where the
    lemma is named). ``in_place``: every question after its lemma's proof.
    Names that are not lemmas of ``text`` are asked at the end (and answered
    missing if they do not exist there).
    """
    lemmas = lemma_ends(path, text)
    in_functor = set(functor_parameters(text))

    def here(name: str) -> bool:
        return name in lemmas and (in_place or name in in_functor)

    questions: dict[str, tuple[str, ...]] = {}
    inserts: dict[int, list[str]] = {}
    tail: list[str] = []
    # at the end a lemma is named in full (``OrchCheck.File.M.lemma``, as the verifier
    # compiles it): an ``Import`` below it may have given its short name to another
    module = f"{LOGICAL_ROOT}.{path.stem}"

    def ask(name: str, kind: str, command: str, *rest: str) -> None:
        number = len(questions)
        if here(name):
            output = f"{_OUTPUT}-{number}-here"
            short, end = lemmas[name]
            inserts.setdefault(end, []).append(f'Redirect "{output}" {command.format(short)}')
        else:
            output = f"{_OUTPUT}-{number}"
            tail.append(f'Redirect "{output}" {command.format(f"{module}.{name}")}')
        questions[output] = (kind, name, *rest)

    together = [name for name in dict.fromkeys(union) if not here(name)]
    # a union member that must be asked after its proof is asked on its own: what it
    # may use of its functor's parameters is its own
    for name in dict.fromkeys([*(n for n in union if here(n)), *each]):
        ask(name, "each", "Print Assumptions {}.")
    for name, keys in (locate or {}).items():
        for key in keys:
            ask(name, "locate", f"Locate {key}.", key)
    if together:
        lets = "".join(f"let _ := @{module}.{name} in " for name in together)
        output = f"{_OUTPUT}-union"
        tail.insert(0, f"Definition {_UNION} : {_TRUE} := {lets}{_I}.")
        tail.insert(1, f'Redirect "{output}" Print Assumptions {_UNION}.')
        questions[output] = ("union", ",".join(together))
    audited = text
    for end in sorted(inserts, reverse=True):
        # on the proof's own line: no line of the text moves
        audited = f"{audited[:end]} {' '.join(inserts[end])}{audited[end:]}"
    output = f"{_OUTPUT}-libraries"
    tail.append(f'Redirect "{output}" Print Libraries.')
    questions[output] = ("libraries", "")
    audited = audited + "\n" + "\n".join(tail) + "\n"
    return AuditPlan(path, audited, text.count("\n") + 1, questions, lemmas)
