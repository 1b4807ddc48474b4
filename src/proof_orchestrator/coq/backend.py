"""Coq behind the language seam (:class:`~..provers.backend.Backend`)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Hashable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from ..errors import OrchError
from ..project.statedir import ScratchFolder
from ..provers.abilities import AgentSide, Evaluation, Golf, Repair
from ..provers.backend import CompiledFile, LineupInputs, ToolSettings
from ..provers.base import ProofSession
from ..provers.process import run_command
from ..strategies.base import Strategy
from . import holes
from .build import CoqBuilder
from .display import COQ
from .project import (
    CoqProject,
    load_coqproject,
    loads_hammer,
    project_for,
    working_folder_flags,
)
from .prover import CoqProver
from .script import check_script
from .strategies.analogy import AnalogyStrategy
from .strategies.hammer import TACTICS_IMPORT, HammerStrategy, SautoStrategy, hammer_environment
from .strategies.knn import FileModels
from .strategies.micro import LIA_IMPORT, CachedStrategy, InductionStrategy, MicroStrategy
from .strategies.rewriting import RewriteStrategy
from .strategies.search import SearchStrategy
from .syntax import sentence_keyword, split_sentences
from .verify import CoqVerifier

__all__ = ["ALLOWED_IMPORTS", "CoqBackend", "CoqTools"]

#: the only imports a proof may bring into a file, by the name ``--allow-import`` gives them
ALLOWED_IMPORTS = {
    "hammer-tactics": TACTICS_IMPORT,
    "lia": LIA_IMPORT,
}


class CoqTools:
    """One builder and one verifier per Coq project; one prover per set of flags (a
    ``_CoqProject`` has one, a dune project one per theory)."""

    language = "coq"

    def __init__(self, project: CoqProject, settings: ToolSettings, throttle: Any = None) -> None:
        coq = dataclasses.replace(
            settings.coq,
            max_idle=max(settings.coq.max_idle, settings.sessions),
            memory_mb=settings.coq.memory_mb or settings.memory_mb,
        )
        hammer_environment()  # the provers started here find CoqHammer's ATP helpers
        self.project = project
        self._coq = coq
        self._throttle = throttle
        #: builds what the files need into .orch/build (or runs the user's build command)
        self.builder = CoqBuilder(
            project, coqc=coq.coqc, command=settings.build_command, jobs=settings.build_jobs
        )
        #: the provers, by their flags (made on first use)
        self._provers: dict[tuple[str, ...], CoqProver] = {}
        #: the prover with the project's flags (a dune project's: every theory's folder)
        self.prover = self._prover(self.builder.flags)
        builder = self.builder
        self.verifier = CoqVerifier(
            builder.flags,
            cwd=str(project.root),
            coqc=coq.coqc,
            load_path_generation=lambda: builder.generation,
            trust_library_axioms=not settings.strict_axioms,
            flags_for=builder.flags_for if project.theories else None,
        )

    def _prover(self, flags: tuple[str, ...]) -> CoqProver:
        """The prover whose sessions load ``flags``: the project's load path, then its
        .orch/build mirror (which wins where both have a .vo). coqtop runs in a scratch
        folder, with the project's root in the load path as if it ran there."""
        prover = self._provers.get(flags)
        if prover is None:
            root = self.project.root
            prover = self._provers[flags] = CoqProver(
                (*working_folder_flags(root, flags, self._coq.coqc), *flags),
                cwd=str(root),
                workdir=ScratchFolder(root, "session"),
                settings=self._coq,
                throttle=self._throttle,
                generation=lambda: self.builder.generation,
            )
        return prover

    def prover_for(self, path: Path) -> CoqProver:
        """The prover of ``path``'s sessions: with its dune theory's flags when it has one."""
        if not self.project.theories:
            return self.prover
        return self._prover(self.builder.flags_for(path))

    def stand_in(self, path: Path, text: str) -> None:
        self.builder.override(path, text)

    def open_session(self, hole: Any, text: str) -> AbstractAsyncContextManager[ProofSession]:
        if not isinstance(hole, holes.CoqHole):
            raise TypeError("a Coq project got a hole of another language")
        return self._session(hole, text)

    @contextlib.asynccontextmanager
    async def _session(self, hole: holes.CoqHole, text: str) -> AsyncIterator[ProofSession]:
        async with contextlib.AsyncExitStack() as stack:
            # what the file requires is up to date, and no rebuild replaces it while it loads
            async with self.builder.loading(hole.goal.file):
                prover = self.prover_for(hole.goal.file)
                session = await stack.enter_async_context(
                    prover.session(hole.goal, text, hole.prefix_end, hole.statement_start)
                )
            yield session

    @staticmethod
    def gate(sentences: Sequence[str]) -> tuple[str, ...]:
        return check_script(sentences)

    @staticmethod
    def declared_axioms(text: str) -> set[str]:
        return set(holes.declared_axioms(text))

    @staticmethod
    def join_script(sentences: Sequence[str]) -> str:
        """Sentences as the one string the ledger records."""
        return " ".join(sentences)

    @staticmethod
    def split_script(text: str) -> tuple[str, ...]:
        """A script recorded as one string (see :meth:`join_script`), as sentences."""
        return tuple(s.code for s in split_sentences(text))

    @staticmethod
    def parse_script(text: str) -> tuple[str, ...]:
        try:
            return tuple(s.code for s in split_sentences(text))
        except OrchError as exc:
            from ..errors import ScriptRejected

            raise ScriptRejected(f"the script cannot be split into sentences: {exc}") from exc

    async def aclose(self) -> None:
        provers, self._provers = list(self._provers.values()), {}
        for prover in provers:
            await prover.aclose()
        await self.verifier.aclose()


def _is_require(code: str) -> bool:
    keyword = sentence_keyword(code)
    return keyword == "Require" or (keyword == "From" and "Require" in code.split())


class CoqBackend:
    """Coq files (``.v``): holes end in ``Admitted.``; ``coqtop`` sessions, ``coqc`` checks."""

    language = "coq"
    suffixes: tuple[str, ...] = (".v",)
    importable = ALLOWED_IMPORTS
    goal_syntax = COQ

    join_script = staticmethod(CoqTools.join_script)

    def scan(self, path: Path, text: str) -> list[holes.CoqHole]:
        return list(holes.scan_coq_text(path, text))

    def project_files(self, path: Path) -> list[Path] | None:
        return list(load_coqproject(path).files) if path.name == "_CoqProject" else None

    def project_key(self, path: Path) -> Hashable:
        project = project_for(path)
        # a described project is one root (its .orch/build); loose files share one set of tools
        root = str(project.root) if project.coqproject is not None else ""
        return ("coq", root, *project.flags)

    def project_root(self, path: Path) -> Path:
        return project_for(path).root

    def described_root(self, path: Path) -> Path | None:
        project = project_for(path)
        return project.root if project.coqproject is not None else None

    def tools(self, path: Path, settings: ToolSettings, throttle: Any = None) -> CoqTools:
        return CoqTools(project_for(path), settings, throttle)

    @staticmethod
    def builder(path: Path, command: str = "") -> CoqBuilder | None:
        """The builder of the project ``path`` is in (None outside a ``_CoqProject`` or dune
        project): ``orch info``'s model."""
        project = project_for(path)
        return CoqBuilder(project, command=command) if project.coqproject is not None else None

    def strategies(self, inputs: LineupInputs) -> list[Strategy]:
        """Profile 0: quick tactics. 1 (the default): best-first search with the k-NN
        model and premises, the ``sauto`` family and ``hammer``. 2: the helper-lemma
        market. The LLM strategies when asked for (or at 2) and a model is configured."""
        # a project that loads CoqHammer somewhere has its tactics already
        allow = "hammer-tactics" in inputs.allowed_imports or (
            inputs.root is not None and loads_hammer(inputs.root)
        )
        lineup: list[Strategy] = [
            MicroStrategy(allow_lia_import="lia" in inputs.allowed_imports),
            InductionStrategy(),
            CachedStrategy(inputs.popular, inputs.proved),
            AnalogyStrategy(),
            RewriteStrategy(),
        ]
        if inputs.profile >= 1:
            lineup += [
                # the file's own proofs only: with the visible proofs' first steps too, the
                # search made 3x the writes to coqtop on make bank's BankList for the same
                # proofs (19,905 against 6,692); cached, analogy and rewrite use them
                SearchStrategy(FileModels(inputs.proved)),
                SautoStrategy(allow),
                HammerStrategy(allow),
            ]
        if inputs.profile >= 2 and inputs.ledger is not None:
            from .strategies.market import MarketStrategy

            lineup.append(MarketStrategy(inputs.ledger))
        if (inputs.use_llm or inputs.profile >= 2) and inputs.ledger is not None:
            from .strategies.llm import llm_strategies

            lineup += llm_strategies(
                inputs.ledger, inputs.root, budget_usd=inputs.llm_budget_usd or 0.0
            )
        return lineup

    def import_insertion(self, text: str, patches: Sequence[Any]) -> tuple[int, str]:
        """Each import goes in once, on its own line after the last ``Require`` that
        comes before the first hole needing it (at the top of the file when there
        is none), unless the file has that exact sentence already."""
        needing = [p for p in patches if p.imports]
        if not needing:
            return 0, ""
        first = min(p.hole.statement_start for p in needing)
        sentences = split_sentences(text[:first])
        present = {s.code for s in sentences}
        wanted = [
            i for i in dict.fromkeys(i for p in needing for i in p.imports) if i not in present
        ]
        if any(i not in ALLOWED_IMPORTS.values() for i in wanted):
            raise ValueError(f"not an allowed import: {wanted!r}")
        if not wanted:
            return 0, ""
        requires = [s for s in sentences if _is_require(s.code)]
        if requires:
            return requires[-1].end, "".join(f"\n{i}" for i in wanted)
        return 0, "".join(f"{i}\n" for i in wanted)

    async def compile_alone(self, path: Path, *, timeout: float) -> CompiledFile:
        """``coqc`` with the flags of ``path``'s project, in the file's folder."""
        flags = project_for(path).flags
        run = await run_command(["coqc", *flags, str(path)], cwd=str(path.parent), timeout=timeout)
        return CompiledFile(run.returncode == 0, run.cpu_seconds, run.output)

    async def version(self, files: Sequence[Path], settings: ToolSettings) -> str:
        probe = CoqProver(settings=settings.coq)
        try:
            return await probe.version()
        finally:
            await probe.aclose()

    @staticmethod
    def agent() -> AgentSide:
        from .agent import CoqAgentSide

        return CoqAgentSide()

    @staticmethod
    def repair() -> Repair:
        from .repair import CoqRepair

        return CoqRepair()

    @staticmethod
    def golf() -> Golf:
        from .golf import CoqGolf

        return CoqGolf()

    @staticmethod
    def evaluation() -> Evaluation:
        from .evaluation import CoqEvaluation

        return CoqEvaluation()

    @staticmethod
    def declarations(paths: Sequence[Path]) -> None:
        """Coq files are not read for a blueprint."""
        return None
