"""Whole-file verification for Coq: recompile, then audit the axioms.

The patched text is written to a scratch directory under the same file name
and compiled with ``coqc`` and the project's flags, plus ``-Q SCRATCH
OrchCheck`` so that the result can be loaded as ``OrchCheck.<stem>``. Then a
fresh ``coqtop`` requires that module and runs ``Print Assumptions`` on every
proved lemma. The same is done once for the original text; a lemma is
accepted only if its assumptions are a subset of

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
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProverError
from ..goals import Goal, HoleUse
from ..project.statedir import ScratchFolder
from ..provers.base import Verdict, VerificationResult
from ..provers.process import run_command
from .audit import (
    LOGICAL_ROOT,
    ProjectHoles,
    from_outside,
    is_parameter,
    library_axiom,
    located_constant,
    parse_assumptions,
    source_of,
    without_section_variables,
)
from .build_output import first_error
from .coqtop import CoqTop
from .holes import CoqHole, functor_parameters, qed_proofs, scan_coq_text
from .project import working_folder_flags

__all__ = ["CoqVerifier", "parse_assumptions"]


def _admitted(path: Path, text: str) -> list[tuple[CoqHole, tuple[str, ...]]]:
    return [(hole, ()) for hole in scan_coq_text(path, text)]


@dataclass(slots=True)
class _Build:
    ok: bool
    output: str
    directory: Path
    cpu_seconds: float


class StaleBuild(ProverError):
    """A build made earlier cannot be loaded: a library it was compiled against changed."""


class CoqVerifier:
    """Compiles candidate files and audits their axioms. Call :meth:`aclose` when done."""

    def __init__(
        self,
        flags: Sequence[str] = (),
        *,
        cwd: str | None = None,
        coqc: str = "coqc",
        coqtop: str = "coqtop",
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
        #: compiled again, or loading it fails with "inconsistent assumptions"
        self.load_path_generation = load_path_generation or (lambda: 0)
        self.cwd = cwd
        self.coqc = coqc
        self.coqtop = coqtop
        self.compile_timeout = compile_timeout
        #: builds and audits work in here (``.orch/tmp/verify-<pid>-…``), removed by :meth:`aclose`
        self._scratch = ScratchFolder(Path(cwd) if cwd else None)
        self._builds: dict[str, _Build] = {}
        #: the trust base of an original text, by its build directory
        self._trust: dict[Path, frozenset[str]] = {}
        #: ``Print Assumptions`` of an original text's lemmas, by its build directory
        self._original: dict[Path, dict[str, frozenset[str]]] = {}
        #: CPU seconds spent by coqc and coqtop in this verifier
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

    async def _build(self, path: Path, text: str) -> _Build:
        generation = self.load_path_generation()
        key = hashlib.sha256(f"{generation}\x00{path.name}\x00{text}".encode()).hexdigest()
        cached = self._builds.get(key)
        if cached is not None:
            return cached
        directory = self._scratch.subfolder("build-", path.parent)
        target = directory / path.name
        target.write_text(text, encoding="utf-8")
        run = await run_command(
            [self.coqc, *self._flags(path), "-Q", str(directory), LOGICAL_ROOT, str(target)],
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

    async def _assumptions(
        self, path: Path, build: _Build, names: Sequence[str]
    ) -> dict[str, frozenset[str]]:
        module = f"{LOGICAL_ROOT}.{path.stem}"
        flags = [*self._flags(path), "-Q", str(build.directory), LOGICAL_ROOT]
        result: dict[str, frozenset[str]] = {}
        async with CoqTop(flags, cwd=str(build.directory), executable=self.coqtop) as top:
            before = top.current
            reply = await top.send(f"Require {module}.", self.compile_timeout)
            if reply.state == before:
                error = StaleBuild if "inconsistent assumptions" in reply.output else ProverError
                raise error(f"cannot load the compiled {module}: {reply.output}")
            for name in names:
                before = top.current
                reply = await top.send(f"Print Assumptions {module}.{name}.", self.compile_timeout)
                if reply.state == before:
                    # the name does not exist in the compiled file: treat as unverifiable
                    result[name] = frozenset({f"<missing {name}: {reply.output.strip()[:200]}>"})
                else:
                    result[name] = parse_assumptions(reply.output)
            self.cpu_seconds += top.cpu_seconds()
        return result

    async def _assumptions_in_place(
        self, path: Path, text: str, names: Sequence[str]
    ) -> dict[str, frozenset[str]]:
        """``Print Assumptions`` run inside the file, right after each lemma's proof.

        For lemmas that cannot be named from outside: those in a functor's body
        (``Module Make (O : OrderedType)``) exist only for each application of
        the functor. A copy of ``text`` gets ``Redirect "…" Print Assumptions
        name.`` after each proof and is compiled; each output goes to its own
        file.
        """
        ends = {
            hole.goal.qualified_name: (hole.goal.name, hole.proof_end)
            for hole, _ in [*qed_proofs(path, text), *_admitted(path, text)]
        }
        result = {name: frozenset({f"<missing {name}: not in the file>"}) for name in names}
        folder = self._scratch.path(path.parent)
        with tempfile.TemporaryDirectory(prefix="audit-", dir=folder) as scratch:
            inserts = sorted(
                ((ends[name][1], index, name) for index, name in enumerate(names) if name in ends),
                reverse=True,
            )
            audited = text
            for end, index, name in inserts:
                out = Path(scratch) / f"audit-{index}"
                audited = (
                    f'{audited[:end]}\nRedirect "{out}" Print Assumptions {ends[name][0]}.\n'
                    f"{audited[end:]}"
                )
            build = await self._build(path, audited)
            for _, index, name in inserts:
                out = Path(scratch) / f"audit-{index}.out"
                if build.ok and out.exists():
                    # in place, inside a section, the section's variables are listed too:
                    # hypotheses of the section, not axioms (closing the section
                    # generalizes the lemma over those it uses, and the whole file
                    # must still compile with that)
                    keys = parse_assumptions(without_section_variables(out.read_text("utf-8")))
                    result[name] = frozenset(
                        from_outside(key, name, ends, path.stem) for key in keys
                    )
            result = await self._locate_unqualified(path, text, scratch, result, ends)
        return result

    async def _locate_unqualified(
        self,
        path: Path,
        text: str,
        scratch: str,
        found: dict[str, frozenset[str]],
        ends: dict[str, tuple[str, int]],
    ) -> dict[str, frozenset[str]]:
        """Names an in-place audit printed unqualified, resolved with ``Locate`` at the lemma.

        After ``Import O`` in a functor, ``Print Assumptions`` prints the parameter
        ``O``'s members unqualified; one more compilation of the copy, with a
        ``Locate`` after each such lemma, gives each name its path: ``O.x`` (a
        hypothesis of the functor), ``File.ax`` (an axiom the file declares), a
        library path (matched against the trust base). A name ``Locate`` does not
        resolve stays as it was (and is refused). Costs nothing when every name
        is qualified.
        """
        parameters = functor_parameters(text)

        def unresolved(key: str, name: str) -> bool:
            # unqualified, or qualified by a module that is no parameter (``E.eq`` after
            # ``Import M`` where ``M`` has ``E``): ``Locate`` says ``M.E.eq`` if it is
            head = key.split(".", 1)[0]
            return (
                " " not in key
                and "<" not in key
                and ("." not in key or head != path.stem)
                and not is_parameter(key, parameters.get(name, frozenset()))
            )

        wanted = {
            name: sorted(k for k in keys if unresolved(k, name))
            for name, keys in found.items()
            if name in ends
        }
        wanted = {name: keys for name, keys in wanted.items() if keys}
        if not wanted:
            return found
        # one output file per (lemma, name), numbered
        outputs = {
            (name, key): Path(scratch) / f"locate-{number}"
            for number, (name, key) in enumerate(
                (name, key) for name, keys in wanted.items() for key in keys
            )
        }
        located_text = text
        for end, name in sorted(((ends[name][1], name) for name in wanted), reverse=True):
            lines = "".join(
                f'Redirect "{outputs[name, key]}" Locate {key}.\n' for key in wanted[name]
            )
            located_text = f"{located_text[:end]}\n{lines}{located_text[end:]}"
        build = await self._build(path, located_text)
        if not build.ok:
            return found
        resolved = dict(found)
        for name, keys in wanted.items():
            mapping: dict[str, str] = {}
            for key in keys:
                out = outputs[name, key].with_suffix(".out")
                where = located_constant(out.read_text("utf-8")) if out.exists() else None
                mapping[key] = where.removeprefix(f"{LOGICAL_ROOT}.") if where else key
            resolved[name] = frozenset(mapping.get(key, key) for key in found[name])
        return resolved

    async def _original_assumptions(
        self, path: Path, original: str, base_build: _Build, names: Sequence[str]
    ) -> dict[str, frozenset[str]]:
        """``Print Assumptions`` of ``names`` in the original text: one ``coqtop`` for
        those not read yet (a file's later checks, the bisection's, need none)."""
        known = self._original.setdefault(base_build.directory, {})
        needed = [name for name in names if name not in known]
        if needed:
            known.update(await self._assumptions(path, base_build, needed))
        return {name: known[name] for name in names}

    async def trust_base(self, path: Path, original: str, base_build: _Build) -> frozenset[str]:
        """The library axioms the original file's finished proofs rest on (see the module)."""
        cached = self._trust.get(base_build.directory)
        if cached is not None:
            return cached
        finished = [hole.goal.qualified_name for hole, _ in qed_proofs(path, original)]
        holes = {hole.goal.qualified_name for hole in scan_coq_text(path, original)}
        local = {*holes, *(f"{path.stem}.{name}" for name in holes)}
        keys: set[str] = set()
        found_all = await self._original_assumptions(path, original, base_build, finished)
        for found in found_all.values():
            keys |= {
                key
                for key in found
                if key not in local and " " not in key and not key.startswith("<")
            }
        trusted = frozenset(keys)
        self._trust[base_build.directory] = trusted
        return trusted

    async def verify(
        self,
        path: Path,
        original: str,
        patched: str,
        goals: Sequence[Goal],
        declared_axioms: frozenset[str] = frozenset(),
    ) -> VerificationResult:
        try:
            return await self._verify(path, original, patched, goals, declared_axioms)
        except StaleBuild:
            # a file it requires was compiled again by another process (``orch bg``
            # beside ``orch mcp``): what was built before cannot be loaded; build again
            self._forget()
            return await self._verify(path, original, patched, goals, declared_axioms)

    def _forget(self) -> None:
        """Drop every build and what was read from them."""
        self._builds = {}
        self._original = {}
        self._trust = {}

    async def _verify(
        self,
        path: Path,
        original: str,
        patched: str,
        goals: Sequence[Goal],
        declared_axioms: frozenset[str],
    ) -> VerificationResult:
        build = await self._build(path, patched)
        if not build.ok:
            return VerificationResult(
                Verdict.DOES_NOT_COMPILE,
                build.output.strip()[-2000:],
                cpu_seconds=build.cpu_seconds,
                # the first error's line, not a warning's before it
                error_line=first_error(build.output).line,
            )
        base_build = await self._build(path, original)
        if not base_build.ok:
            return VerificationResult(
                Verdict.DOES_NOT_COMPILE,
                "the original file does not compile: " + base_build.output[-1000:],
            )
        names = [goal.qualified_name for goal in goals]
        after = await self._assumptions(path, build, names)
        before = await self._original_assumptions(path, original, base_build, names)
        hidden = [name for name in names if any(k.startswith("<missing") for k in after[name])]
        if hidden:  # inside functors: audit them in place
            after |= await self._assumptions_in_place(path, patched, hidden)
            before |= await self._assumptions_in_place(path, original, hidden)
        parameters = functor_parameters(patched)
        # the trust base (a session over every finished proof of the original) is read
        # only when a lemma has an assumption its statement did not already have
        needs_trust = any(
            key not in set(before[name]) | {f"{path.stem}.{name}", name}
            and not is_parameter(key, parameters.get(name, frozenset()))
            for name in names
            for key in after[name]
        )
        trusted = await self.trust_base(path, original, base_build) if needs_trust else frozenset()
        stem = path.stem
        holes = {hole.goal.qualified_name: hole for hole in scan_coq_text(path, original)}
        unexplained: dict[str, list[str]] = {}
        uses: dict[str, list[HoleUse]] = {}
        for name in names:
            own = f"{stem}.{name}"
            allowed = (set(before[name]) | trusted) - {own, name}
            for key in after[name]:
                if key in allowed or is_parameter(key, parameters.get(name, frozenset())):
                    continue
                local = key.startswith(f"{stem}.") and " " not in key
                if local and key.rsplit(".", 1)[-1] in declared_axioms and key != own:
                    continue
                hole = holes.get(key.removeprefix(f"{stem}.")) if local and key != own else None
                if hole is not None:  # another hole of this file, still Admitted
                    label = hole.goal.qualified_name
                    use = HoleUse(str(path), label, hole.goal.fingerprint, label)
                    uses.setdefault(name, []).append(use)
                    continue
                unexplained.setdefault(name, []).append(key)
        offending = await self._holes_elsewhere(path, build, unexplained, uses)
        if offending:
            return VerificationResult(
                Verdict.NEW_ASSUMPTIONS,
                "; ".join(offending),
                tuple(offending),
                build.cpu_seconds,
                offending=tuple(dict.fromkeys(entry.split(": ", 1)[0] for entry in offending)),
            )
        return VerificationResult(
            Verdict.ACCEPTED,
            cpu_seconds=build.cpu_seconds,
            holes_used={
                name: tuple(sorted(set(found), key=lambda use: use.label))
                for name, found in uses.items()
            },
        )

    async def _holes_elsewhere(
        self,
        path: Path,
        build: _Build,
        unexplained: dict[str, list[str]],
        uses: dict[str, list[HoleUse]],
    ) -> list[str]:
        """Of the ``unexplained`` assumptions (by lemma), those that are neither a hole
        of the project's other files nor an axiom an installed library declares, as
        ``"lemma: key"`` entries; the holes go to ``uses``.

        ``Print Assumptions`` prints a constant by its shortest unambiguous name
        (``B.b`` for ``Lib.B.b``, ``classic`` after ``Import Classical``);
        ``Locate`` in the same environment gives the full name, which
        :class:`~.audit.ProjectHoles` resolves to a file of the project and
        :func:`~.audit.library_axiom` to a library's axiom. One more ``coqtop``
        only when some assumption is left.
        """
        names = sorted(
            {
                key
                for keys in unexplained.values()
                for key in keys
                if " " not in key and not key.startswith("<")
            }
        )
        located = await self._locate(path, build, names) if names else {}
        offending: list[str] = []
        for name, keys in unexplained.items():
            for key in keys:
                full = located.get(key)
                hole = self.project_holes.hole(full, path) if full else None
                if hole is not None:
                    uses.setdefault(name, []).append(hole)
                elif full is None or not self._library_axiom(full):
                    offending.append(f"{name}: {key}")
        return offending

    def _library_axiom(self, full: str) -> bool:
        """An axiom an installed library declares, and no constant of the project."""
        inside = source_of(full, self.project_holes.flags, self.project_holes.cwd)
        return self.trust_library_axioms and inside is None and library_axiom(full)

    async def _locate(self, path: Path, build: _Build, keys: Sequence[str]) -> dict[str, str]:
        """The full name of each constant in ``keys``, as ``Locate`` gives it where the
        compiled file is loaded (names it does not resolve are left out)."""
        flags = [*self._flags(path), "-Q", str(build.directory), LOGICAL_ROOT]
        found: dict[str, str] = {}
        async with CoqTop(flags, cwd=str(build.directory), executable=self.coqtop) as top:
            before = top.current
            reply = await top.send(f"Require {LOGICAL_ROOT}.{path.stem}.", self.compile_timeout)
            if reply.state == before:
                raise ProverError(f"cannot load the compiled {path.stem}: {reply.output}")
            for key in keys:
                reply = await top.send(f"Locate {key}.", self.compile_timeout)
                where = located_constant(reply.output)
                if where is not None and not where.startswith(f"{LOGICAL_ROOT}."):
                    found[key] = where
            self.cpu_seconds += top.cpu_seconds()
        return found
