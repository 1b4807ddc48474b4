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
* ``Print Libraries``: what the file loaded;
* with a :class:`Trace`, what :mod:`.attribution` reads to tell which proof
  rests on which hole still open: the file's constants (``Print Namespace``)
  right before the first open hole and at the end, and the printed term of
  each constant declared after that hole, right after its declaration (where
  its name as written names it), on the same line.

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

from .attribution import Declaration, namespace_entries
from .audit import (
    LOGICAL_ROOT,
    from_outside,
    located_constant,
    parse_assumptions,
    without_section_variables,
)
from .holes import functor_parameters, lemma_ends
from .project import loaded_modules

__all__ = ["AuditAnswers", "AuditPlan", "Trace", "plan_audit"]

#: output files of the questions are named after this, in the folder coqc runs in
_OUTPUT = "orch-audit"
#: the definition whose assumptions are the union's (a name no file uses)
_UNION = "orch_audit_union__"
_TRUE = "Coq.Init.Logic.True"
#: printed terms are never cut short (``Printing Depth`` is 50 boxes by default, and
#: is set back to that after each term)
_DEPTH = 1_000_000_000
_DEFAULT_DEPTH = 50
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
    #: with a :class:`Trace`: the file's constants before its first open hole, and at
    #: the end (None when not asked or not answered)
    namespace_before: frozenset[str] | None = None
    namespace: frozenset[str] | None = None
    #: with a :class:`Trace`: ``Print`` output per constant printed (a section's: both
    #: prints, in the section and at the end)
    printed: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Trace:
    """What a compile prints for :mod:`.attribution`."""

    #: offset of the first open hole's statement in the text: the file's constants are
    #: listed right before it
    before: int
    #: the constants whose terms are printed, each right after its declaration
    terms: Sequence[Declaration] = ()


@dataclass(frozen=True, slots=True)
class TracedCommand:
    """A command of the trace inserted in the text: its line, its bytes in the line, and
    the constant it prints ("" for the listing before the first open hole)."""

    line: int
    start: int
    end: int
    prints: str


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
    #: where the trace's commands sit in :attr:`text`
    traced: tuple[TracedCommand, ...] = ()

    def traced_at(self, line: int | None, start: int | None) -> TracedCommand | None:
        """The trace's command an error at ``line`` (byte ``start`` in it) falls in."""
        for command in self.traced:
            if command.line == line and start is not None and command.start <= start < command.end:
                return command
        return None

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
        namespaces: dict[str, frozenset[str]] = {}
        printed_parts: dict[str, dict[str, str | None]] = {}
        for output, (kind, name, *rest) in self.questions.items():
            file = folder / f"{output}.out"
            text = file.read_text(encoding="utf-8") if complete and file.exists() else None
            if text is not None and not text.strip():
                text = None
            if kind == "libraries":
                libraries = tuple(loaded_modules(text or ""))
                continue
            if kind in ("namespace", "namespace-before"):
                if text is not None:
                    namespaces[kind] = namespace_entries(text)
                continue
            if kind in ("term", "term-end"):
                parts = printed_parts.setdefault(name, {})
                parts[kind] = text
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
        # a section's constant counts as printed only with both of its prints
        printed = {
            name: "\n".join(text for text in parts.values() if text is not None)
            for name, parts in printed_parts.items()
            if all(text is not None for text in parts.values())
        }
        return AuditAnswers(
            frozenset(union),
            each,
            located,
            libraries,
            namespaces.get("namespace-before"),
            namespaces.get("namespace"),
            printed,
        )

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
    trace: Trace | None = None,
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
    # on the lines where they go: no line of the text moves. Each inserted command is
    # kept with what it asks for the trace (None: a question of the audit itself)
    pieces: dict[int, list[tuple[str, str | None]]] = {
        end: [(f" {command}", None) for command in asked] for end, asked in inserts.items()
    }
    if trace is not None:
        output = f"{_OUTPUT}-namespace-before"
        listed = f'Redirect "{output}" Print Namespace {module}. '
        pieces.setdefault(trace.before, []).insert(0, (listed, ""))
        questions[output] = ("namespace-before", "")
        for number, term in enumerate(trace.terms):
            output = f"{_OUTPUT}-term-{number}"
            printed = (
                f' Set Printing All. Set Printing Depth {_DEPTH}. Redirect "{output}" '
                f"Print {term.name}. Unset Printing All. Set Printing Depth {_DEFAULT_DEPTH}."
            )
            pieces.setdefault(term.end, []).append((printed, term.qualified))
            questions[output] = ("term", term.qualified)
    audited, traced = _insert(text, pieces)
    output = f"{_OUTPUT}-libraries"
    tail.append(f'Redirect "{output}" Print Libraries.')
    questions[output] = ("libraries", "")
    if trace is not None:
        output = f"{_OUTPUT}-namespace"
        tail.append(f'Redirect "{output}" Print Namespace {module}.')
        questions[output] = ("namespace", "")
        closed = [term for term in trace.terms if term.in_section]
        if closed:
            # last: the printing options change how everything after them is printed
            tail += ["Set Printing All.", f"Set Printing Depth {_DEPTH}."]
        for number, term in enumerate(closed):
            output = f"{_OUTPUT}-term-end-{number}"
            tail.append(f'Redirect "{output}" Print {module}.{term.qualified}.')
            questions[output] = ("term-end", term.qualified)
    audited = audited + "\n" + "\n".join(tail) + "\n"
    return AuditPlan(path, audited, text.count("\n") + 1, questions, lemmas, traced)


def _insert(
    text: str, pieces: Mapping[int, Sequence[tuple[str, str | None]]]
) -> tuple[str, tuple[TracedCommand, ...]]:
    """``text`` with each piece's commands inserted at its offset, and where the trace's
    commands ended up (line, and bytes in the line, as coqc reports an error)."""
    parts: list[str] = []
    traced: list[TracedCommand] = []
    done = 0
    line, line_start = 1, ""  # the current line's text so far, for byte columns
    for offset in sorted(pieces):
        chunk = text[done:offset]
        parts.append(chunk)
        if "\n" in chunk:
            line += chunk.count("\n")
            line_start = chunk.rsplit("\n", 1)[1]
        else:
            line_start += chunk
        done = offset
        for command, asks in pieces[offset]:
            start = len(line_start.encode())
            parts.append(command)
            line_start += command
            if asks is not None:
                traced.append(TracedCommand(line, start, len(line_start.encode()), asks))
    parts.append(text[done:])
    return "".join(parts), tuple(traced)
