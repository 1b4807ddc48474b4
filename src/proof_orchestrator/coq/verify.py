"""Whole-file verification for Coq: recompile, with the axiom audit in the same compile.

The patched text is written to a scratch directory under the same file name
and compiled with ``coqc`` and the project's flags, plus ``-Q SCRATCH
OrchCheck`` (the file's own constants are then ``OrchCheck.<stem>.…``). The
``Print Assumptions`` questions are part of the compiled text
(:mod:`.inline_audit`): no second process loads the result. The original
text is compiled the same way when its answers are needed, once per text. A
lemma is accepted only if its assumptions are a subset of

* the assumptions its statement already had in the original file (minus the
  lemma itself, which ``Admitted`` made an axiom),
* the axioms the file declares itself (``Axiom``, ``Parameter``, ...), and
* the file's trust base: the library axioms that the original file's own
  finished (``Qed``) proofs already rest on. A file about
  ``Ensembles`` whose proofs use ``Extensionality_Ensembles`` may get one more
  proof that uses it;
* an axiom that an installed library the file loads declares in its source
  (:func:`~.audit.library_axiom`: ``sig_forall_dec`` under the Reals,
  ``classic`` once ``Classical`` is loaded): loading it is the user's trust.

A proof whose only other new assumptions are *holes* of the project (an
``Admitted`` lemma that is itself a goal, in this file or in a project file it
requires: :class:`~.audit.ProjectHoles`) is accepted closed modulo them, and
the result names them (``VerificationResult.holes_used``). A proof that leans
on a library axiom the file did not already use, on an ``Admitted``
definition that is no goal, or on disabled guard checking is rejected. (Guard
and universe entries name their lemma, and the file's holes are never part of
its trust base, so neither can enter through it: only plain axiom names
count.)
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..goals import Goal, HoleUse
from ..project.statedir import ScratchFolder
from ..provers.base import Verdict, VerificationResult
from ..provers.process import run_command
from .attribution import declarations, read_uses
from .audit import (
    LOGICAL_ROOT,
    ProjectHoles,
    is_parameter,
    library_axiom,
    library_axiom_named,
    parse_assumptions,
    source_of,
)
from .build_output import first_error
from .holes import functor_parameters, lemma_ends, qed_proofs, scan_coq_text
from .inline_audit import AuditAnswers, Trace, plan_audit
from .project import module_source, working_folder_flags
from .syntax import split_sentences

__all__ = ["CoqVerifier", "parse_assumptions"]


@dataclass(slots=True)
class _Build:
    ok: bool
    output: str
    directory: Path
    cpu_seconds: float


@dataclass(frozen=True, slots=True)
class _Audited:
    """A compile with the audit's questions in it."""

    #: whether the checked text compiled (the questions aside)
    compiled: bool
    build: _Build
    answers: AuditAnswers


class CoqVerifier:
    """Compiles candidate files and audits their axioms. Call :meth:`aclose` when done."""

    def __init__(
        self,
        flags: Sequence[str] = (),
        *,
        cwd: str | None = None,
        coqc: str = "coqc",
        compile_timeout: float = 900.0,
        load_path_generation: Callable[[], int] | None = None,
        trust_library_axioms: bool = True,
        flags_for: Callable[[Path], Sequence[str]] | None = None,
    ) -> None:
        self.flags = tuple(flags)
        #: the flags of one file, when they are not the same for every file (a dune
        #: theory's); ``flags`` otherwise
        self.flags_for = flags_for
        #: accept an axiom an installed library declares (:func:`~.audit.library_axiom`);
        #: off (``--strict-axioms``): only those the original file's proofs rest on
        self.trust_library_axioms = trust_library_axioms
        #: changes when the ``.vo`` files on the load path are rebuilt (a proof was
        #: written into a file this one requires): a text compiled before must be
        #: compiled again (its answers may have changed: a hole it used is proved)
        self.load_path_generation = load_path_generation or (lambda: 0)
        self.cwd = cwd
        self.coqc = coqc
        self.compile_timeout = compile_timeout
        #: builds and audits work in here (``.orch/tmp/verify-<pid>-…``), removed by :meth:`aclose`
        self._scratch = ScratchFolder(Path(cwd) if cwd else None)
        self._builds: dict[str, _Build] = {}
        #: CPU seconds spent by coqc in this verifier
        self.cpu_seconds = 0.0
        #: number of coqc runs
        self.compilations = 0
        #: the holes of the project's other files (an assumption may be one of them)
        self.project_holes = ProjectHoles(self.flags, Path(cwd) if cwd else Path.cwd())

    def _flags(self, path: Path) -> tuple[str, ...]:
        """The flags, with the folder coqc would have run in (the project's root, else
        ``path``'s folder) in the load path: the processes run in scratch folders."""
        root = Path(self.cwd) if self.cwd else path.parent
        flags = tuple(self.flags_for(path)) if self.flags_for is not None else self.flags
        return (*working_folder_flags(root, flags, self.coqc), *flags)

    async def aclose(self) -> None:
        self._builds = {}
        self._scratch.close()

    async def _build(self, path: Path, text: str, *, quick: bool = False) -> _Build:
        """``coqc`` on ``text`` as ``path``; ``quick``: with ``-vos``, which skips the
        proofs that end with ``Qed`` (what they assume is then not printed: only for
        questions about names)."""
        generation = self.load_path_generation()
        key = hashlib.sha256(
            f"{generation}\x00{quick}\x00{path.name}\x00{text}".encode()
        ).hexdigest()
        cached = self._builds.get(key)
        if cached is not None:
            return cached
        directory = self._scratch.subfolder("build-", path.parent)
        target = directory / path.name
        target.write_text(text, encoding="utf-8")
        run = await run_command(
            [
                self.coqc,
                *(("-vos",) if quick else ()),
                *self._flags(path),
                "-Q",
                str(directory),
                LOGICAL_ROOT,
                str(target),
            ],
            # in the scratch folder: what coqc writes where it runs (a failing ``lia``'s
            # ``.lia.cache``, an extracted file) goes with it, not into the project
            cwd=str(directory),
            timeout=self.compile_timeout,
        )
        self.compilations += 1
        self.cpu_seconds += run.cpu_seconds
        build = _Build(run.returncode == 0, run.output, directory, run.cpu_seconds)
        self._builds[key] = build
        return build

    async def compiles(self, path: Path, text: str) -> tuple[bool, str]:
        build = await self._build(path, text)
        return build.ok, build.output

    async def _audit(
        self,
        path: Path,
        text: str,
        *,
        union: Sequence[str] = (),
        each: Sequence[str] = (),
        locate: Mapping[str, Sequence[str]] | None = None,
        trace: Trace | None = None,
        quick: bool = False,
    ) -> _Audited:
        """One compile of ``text`` with the questions of :mod:`.inline_audit` in it.

        ``quick`` (only ``locate`` questions): the compile skips the ``Qed`` proofs
        (``-vos``); where that compile fails (a section's lemma then takes every
        section variable, and a later use may not fit), the full one answers.

        A compile with a ``trace`` that fails inside one of the trace's commands is done
        again without that command (a constant printed where it does not exist), or
        without the trace when the error is after the text or has no place; an error
        anywhere else in the text is the text's own.
        """
        plan = plan_audit(path, text, union=union, each=each, locate=locate, trace=trace)
        quick = quick and not union and not each and trace is None
        build = await self._build(path, plan.text, quick=quick)
        if build.ok:
            return _Audited(True, build, plan.answers(build.directory))
        if quick:
            return await self._audit(path, text, locate=locate)
        error = first_error(build.output)
        line = error.line
        if trace is not None:
            failed = plan.traced_at(line, error.start)
            if failed is not None and failed.prints:
                # that constant does not exist where it was printed (made later, or
                # not at all): the same without it
                kept = [term for term in trace.terms if term.qualified != failed.prints]
                lesser = Trace(trace.before, kept)
                return await self._audit(
                    path, text, union=union, each=each, locate=locate, trace=lesser
                )
            if failed is not None or line is None or line > plan.text_lines:
                return await self._audit(path, text, union=union, each=each, locate=locate)
        if line is None or line <= plan.text_lines:
            return _Audited(False, build, AuditAnswers())  # the text itself does not compile
        # the text compiled, but a name could not be asked at its end: ask each question
        # after its lemma's proof (an answer still missing refuses that lemma)
        plan = plan_audit(path, text, union=union, each=each, locate=locate, in_place=True)
        build = await self._build(path, plan.text)
        return _Audited(True, build, plan.answers(build.directory, complete=build.ok))

    async def trust_base(self, path: Path, original: str) -> _Audited:
        """The original text compiled with its questions: the union of what its finished
        proofs rest on (less the file's holes, the trust base: see the module), and what
        each hole's statement assumes. Once per text: the file's later checks reuse it.
        A functor's finished lemmas are left out of the union: asked one by one after
        their proofs they would cost a walk each, and leaving them out only trusts less."""
        in_functor = set(functor_parameters(original))
        finished = [
            hole.goal.qualified_name
            for hole, _ in qed_proofs(path, original)
            if hole.goal.qualified_name not in in_functor
        ]
        holes = sorted(hole.goal.qualified_name for hole in scan_coq_text(path, original))
        return await self._audit(path, original, union=finished, each=holes)

    def _trusted(self, path: Path, original: str, audited: _Audited) -> frozenset[str]:
        holes = {hole.goal.qualified_name for hole in scan_coq_text(path, original)}
        local = {*holes, *(f"{path.stem}.{name}" for name in holes)}
        return frozenset(
            key
            for key in audited.answers.union
            if key not in local and " " not in key and not key.startswith("<")
        )

    async def verify(
        self,
        path: Path,
        original: str,
        patched: str,
        goals: Sequence[Goal],
        declared_axioms: frozenset[str] = frozenset(),
    ) -> VerificationResult:
        """Compile ``patched`` with the audit in it; accept when nothing new is assumed.

        One compile asks for the union of what the goals' proofs assume (one walk
        of their dependencies, however many proofs). Each step after it only when
        the one before cannot decide: (1) the union is empty; (2) what it holds
        besides the file's open holes is a library's axiom or within the original's
        trust base (one compile of the original, kept for the file's later checks);
        then which proof uses which open hole is read from their printed terms
        (:mod:`.attribution`, printed by the same compile), and the proofs that
        cannot be read are asked one by one (one more compile); (3) otherwise lemma
        by lemma, against what each statement already assumed, with the names
        located (one or two more compiles).
        """
        names = [goal.qualified_name for goal in goals]
        parameters = functor_parameters(patched)
        others = {hole.goal.qualified_name for hole in scan_coq_text(path, original)} - set(names)
        trace = self._trace(path, patched, names, others)
        checked = await self._audit(path, patched, union=names, trace=trace)
        build = checked.build
        if not checked.compiled:
            return VerificationResult(
                Verdict.DOES_NOT_COMPILE,
                build.output.strip()[-2000:],
                cpu_seconds=build.cpu_seconds,
                # the first error's line, not a warning's before it
                error_line=first_error(build.output).line,
            )
        own_keys = {
            name: {
                key
                for key in checked.answers.each.get(name, frozenset())
                if not is_parameter(key, parameters.get(name, frozenset()))
            }
            for name in names
        }
        outstanding = set(checked.answers.union).union(*own_keys.values())
        if not outstanding:
            return VerificationResult(Verdict.ACCEPTED, cpu_seconds=build.cpu_seconds)
        stem = path.stem
        open_keys = {f"{stem}.{name}" for name in others}
        rest = outstanding - open_keys
        if rest and not rest & checked.answers.union:
            # only a functor's lemmas (asked after their proofs) left something: most
            # often its parameter's members printed short, which locating settles
            return await self._lemma_by_lemma(
                path, original, patched, names, declared_axioms, outstanding, checked
            )
        if rest and self._may_be_project_holes(rest, checked.answers.libraries):
            # a hole of a project file this one loads is a hole used even where the
            # original's finished proofs use it too: located, proof by proof
            return await self._lemma_by_lemma(
                path, original, patched, names, declared_axioms, outstanding, checked
            )
        if rest and not self._library_axioms(path, original, rest, checked.answers.libraries):
            base = await self.trust_base(path, original)
            if not base.compiled:
                return VerificationResult(
                    Verdict.DOES_NOT_COMPILE,
                    "the original file does not compile: " + base.build.output[-1000:],
                )
            trusted = self._trusted(path, original, base)
            if not rest <= trusted:
                return await self._lemma_by_lemma(
                    path, original, patched, names, declared_axioms, outstanding - trusted, checked
                )
        if not outstanding & open_keys:
            return VerificationResult(Verdict.ACCEPTED, cpu_seconds=build.cpu_seconds)
        uses = await self._hole_uses(path, patched, names, others, own_keys, checked, trace)
        if uses is None:  # a proof's own answer is missing: judged lemma by lemma
            return await self._lemma_by_lemma(
                path, original, patched, names, declared_axioms, outstanding, checked
            )
        holes = {hole.goal.qualified_name: hole for hole in scan_coq_text(path, original)}
        return VerificationResult(
            Verdict.ACCEPTED,
            cpu_seconds=build.cpu_seconds,
            holes_used={
                name: tuple(
                    HoleUse(str(path), used, holes[used].goal.fingerprint, used)
                    for used in sorted(found)
                )
                for name, found in uses.items()
                if found
            },
        )

    def _trace(
        self, path: Path, patched: str, goals: Sequence[str], others: set[str]
    ) -> Trace | None:
        """What the check prints for :mod:`.attribution` when holes stay open: the
        file's constants before the first of them, and the terms of the goals and of
        the constants declared after it."""
        open_holes = [h for h in scan_coq_text(path, patched) if h.goal.qualified_name in others]
        if not open_holes:
            return None
        first = min(hole.statement_start for hole in open_holes)
        terms = [
            declared
            for declared in declarations(split_sentences(patched))
            if declared.end > first or declared.qualified in goals
        ]
        return Trace(first, terms)

    async def _hole_uses(
        self,
        path: Path,
        patched: str,
        names: Sequence[str],
        others: set[str],
        own_keys: Mapping[str, set[str]],
        checked: _Audited,
        trace: Trace | None,
    ) -> dict[str, frozenset[str]] | None:
        """Per goal, the file's open holes its proof uses: read from the printed terms
        where they can be read (:func:`.attribution.read_uses`), else asked of each
        proof on its own (one compile). None when an answer is missing."""
        stem = path.stem
        parameters = functor_parameters(patched)

        def open_holes_in(keys: Iterable[str]) -> frozenset[str]:
            short = (key.removeprefix(f"{stem}.") for key in keys)
            return frozenset(name for name in short if name in others)

        # a functor's lemmas were asked on their own, after their proofs
        uses = {name: open_holes_in(own_keys.get(name, ())) for name in names if name in parameters}
        readable = [name for name in names if name not in parameters]
        answers = checked.answers
        listed = answers.namespace is not None and answers.namespace_before is not None
        if trace is not None and listed:
            ends = {name: end for name, (_, end) in lemma_ends(path, patched).items()}
            read = read_uses(
                patched,
                readable,
                ends,
                answers.printed,
                answers.namespace or frozenset(),
                answers.namespace_before or frozenset(),
                trace.before,
                frozenset(others),
                (LOGICAL_ROOT, stem),
            )
            # the union says which open holes the batch uses: a reading that does not
            # account for every one of them was wrong somewhere
            if open_holes_in(answers.union) <= set().union(*read.values()):
                uses.update(read)
        unreadable = sorted(name for name in readable if name not in uses)
        if unreadable:
            asked = await self._audit(path, patched, each=unreadable)
            for name in unreadable:
                keys = asked.answers.each.get(name)
                if not asked.compiled or keys is None or any(k.startswith("<") for k in keys):
                    return None
                uses[name] = open_holes_in(keys)
        return uses

    def _may_be_project_holes(self, keys: set[str], libraries: Sequence[str]) -> bool:
        """Whether a key may name a hole of a project file the file loads (by its last
        component: printed names may be short)."""
        last = {key.rsplit(".", 1)[-1] for key in keys if " " not in key}
        flags, cwd = self.project_holes.flags, self.project_holes.cwd
        for module in libraries:
            found = source_of(f"{module}._", flags, cwd)
            if found is None:
                continue
            names = self.project_holes.holes_of(found[0])
            if last & {name.rsplit(".", 1)[-1] for name in names}:
                return True
        return False

    def _library_axioms(
        self, path: Path, original: str, keys: set[str], libraries: Sequence[str]
    ) -> bool:
        """Whether every key is an installed library's axiom, known by its printed name
        (:meth:`_named_library_axioms`): accepted without the trust base."""
        if any(" " in key or key.startswith(("<", f"{path.stem}.")) for key in keys):
            return False
        named = self._named_library_axioms(original, keys, libraries)
        return len(named) == len(keys) and all(map(self._library_axiom, named.values()))

    def _named_library_axioms(
        self, original: str, keys: Iterable[str], libraries: Sequence[str]
    ) -> dict[str, str]:
        """The keys that are a loaded library's axiom printed short, with its full name
        (:func:`~.audit.library_axiom_named`; ``Locate lor.`` is a syntax error after
        ``Import Sint63``); none when library axioms are not trusted."""
        keys = list(keys)
        if not self.trust_library_axioms or not keys:
            return {}
        flags, cwd = self.project_holes.flags, self.project_holes.cwd
        sources = [(module, module_source(module, flags, cwd)) for module in libraries]
        texts = self._texts(original, libraries)
        found = {key: library_axiom_named(key, sources, texts) for key in keys}
        return {key: full for key, full in found.items() if full is not None}

    async def _lemma_by_lemma(
        self,
        path: Path,
        original: str,
        patched: str,
        names: Sequence[str],
        declared_axioms: frozenset[str],
        unknown: set[str],
        first: _Audited,
    ) -> VerificationResult:
        """Step (3) of :meth:`verify`: each goal's assumptions against its statement's.

        ``unknown``: what the first compile's answers hold that is not settled yet.
        What the printed names are is settled first (located, a library's axiom, a
        functor's parameter, a hole); the original's trust base and the statements'
        assumptions (a compile of the original, kept from step (2) when it ran) are
        asked only for what is left.
        """
        stem = path.stem
        parameters = functor_parameters(patched)
        libraries = first.answers.libraries
        names_of_constants = sorted(
            key
            for key in unknown
            if " " not in key and not key.startswith(("<", f"{stem}."))  # the file's own: known
        )
        # a library's axiom printed short is known by its name; the others are located
        by_name = self._named_library_axioms(original, names_of_constants, libraries)
        to_locate = [key for key in names_of_constants if key not in by_name]
        checked = first
        after = dict(first.answers.each)
        unasked = [name for name in names if name not in after]
        if to_locate or unasked:
            # located where each lemma is: at the end for most, after its proof in a functor
            locate = {"": to_locate, **{name: to_locate for name in names if name in parameters}}
            # names only (no lemma's assumptions to ask): a compile that skips the proofs
            checked = await self._audit(
                path, patched, each=unasked, locate=locate, quick=not unasked
            )
            after.update(checked.answers.each)
        holes = {hole.goal.qualified_name: hole for hole in scan_coq_text(path, original)}
        located = checked.answers.located
        unexplained: dict[str, list[str]] = {}
        uses: dict[str, list[HoleUse]] = {}
        base: _Audited | None = None
        trusted: frozenset[str] = frozenset()
        for name in names:
            own = f"{stem}.{name}"
            for printed in after.get(name, frozenset({f"<missing {name}>"})):
                if is_parameter(printed, parameters.get(name, frozenset())):
                    continue
                full = (
                    located.get((name, printed))
                    or located.get(("", printed))
                    or by_name.get(printed)
                )
                if full is not None and is_parameter(full, parameters.get(name, frozenset())):
                    continue  # ``lt_trans`` after ``Import O``: the parameter's member
                key = printed
                if full is not None and full.startswith(f"{LOGICAL_ROOT}.{stem}."):
                    key = full.removeprefix(f"{LOGICAL_ROOT}.")  # this file's own constant
                local = key.startswith(f"{stem}.") and " " not in key
                if local and key.rsplit(".", 1)[-1] in declared_axioms and key != own:
                    continue
                hole = holes.get(key.removeprefix(f"{stem}.")) if local and key != own else None
                if hole is not None:  # another hole of this file, still Admitted
                    label = hole.goal.qualified_name
                    uses.setdefault(name, []).append(
                        HoleUse(str(path), label, hole.goal.fingerprint, label)
                    )
                    continue
                project_hole = None
                if not (local or full is None or full.startswith(f"{LOGICAL_ROOT}.")):
                    project_hole = self.project_holes.hole(full, path)
                    if project_hole is not None:
                        uses.setdefault(name, []).append(project_hole)
                        continue
                    if self._library_axiom(full):
                        continue
                # what the statement already assumed, or the file's trust base
                if base is None:
                    base = await self.trust_base(path, original)  # kept from step (2)
                    if not base.compiled:
                        return VerificationResult(
                            Verdict.DOES_NOT_COMPILE,
                            "the original file does not compile: " + base.build.output[-1000:],
                        )
                    trusted = self._trusted(path, original, base)
                # a missing answer of the original explains nothing (it would match the
                # patched text's own missing answer)
                before = {
                    key
                    for key in base.answers.each.get(name, frozenset())
                    if not key.startswith("<")
                }
                if printed in (set(before) | trusted) - {own, name}:
                    continue
                # named in full when it was located outside the file
                outside = full is not None and not local and not full.startswith(LOGICAL_ROOT)
                unexplained.setdefault(name, []).append(full if outside and full else key)
        offending = [f"{name}: {key}" for name, keys in unexplained.items() for key in keys]
        if offending:
            return VerificationResult(
                Verdict.NEW_ASSUMPTIONS,
                "; ".join(offending),
                tuple(offending),
                checked.build.cpu_seconds,
                offending=tuple(unexplained),
            )
        return VerificationResult(
            Verdict.ACCEPTED,
            cpu_seconds=checked.build.cpu_seconds,
            holes_used={
                name: tuple(sorted(set(found), key=lambda use: use.label))
                for name, found in uses.items()
            },
        )

    def _texts(self, original: str, libraries: Sequence[str]) -> list[str]:
        """The file's text and the sources of the project files among ``libraries``."""
        texts = [original]
        for module in libraries:
            found = source_of(f"{module}._", self.project_holes.flags, self.project_holes.cwd)
            if found is not None:
                try:
                    texts.append(found[0].read_text(encoding="utf-8", errors="replace"))
                except OSError:
                    continue
        return texts

    def _library_axiom(self, full: str) -> bool:
        """An axiom an installed library declares, and no constant of the project."""
        inside = source_of(full, self.project_holes.flags, self.project_holes.cwd)
        return self.trust_library_axioms and inside is None and library_axiom(full)
