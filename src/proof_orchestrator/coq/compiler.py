"""Compiling one Coq file into ``.orch/build`` with ``coqc``, never leaving half a ``.vo``."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..project.statedir import make_state_dir
from ..provers.build import BuildFailure
from ..provers.process import run_command
from .build_output import first_error

__all__ = ["Compiled", "compile_file", "failure_in"]


@dataclass(frozen=True, slots=True)
class Compiled:
    """What one ``coqc`` did: None or the first error, and the CPU seconds it took."""

    failure: BuildFailure | None
    cpu_seconds: float


def failure_in(output: str, source: Path, root: Path) -> BuildFailure:
    """The first error of a failed compilation of ``source``, where coqc placed it
    (a file named relative to ``root``, or ``source``)."""
    error = first_error(output)
    where = source
    if error.file is not None:
        where = Path(error.file) if Path(error.file).is_absolute() else root / error.file
    return BuildFailure(where.resolve(), error.line, f"error: {error.message}")


async def compile_file(
    coqc: str,
    flags: Sequence[str],
    source: Path,
    *,
    logical: str,
    output: Path,
    build_dir: Path,
    root: Path,
    text: str | None = None,
    timeout: float,
) -> Compiled:
    """``coqc`` ``source`` (or ``text`` in its place) into ``output``.

    It compiles into a scratch folder and moves the outputs into place at once:
    a prover loading the old ``.vo`` meanwhile never reads half a file. ``coqc``
    names the library by where its output is on the load path, so the scratch
    folder is mapped to the module's logical folder (``logical`` is the module's
    full name); the output keeps the source's name, as ``coqc`` wants. It runs
    in ``build_dir``: what coqc leaves in its folder (``.lia.cache``) stays out
    of the user's tree.
    """
    make_state_dir(output.parent)
    scratch = Path(tempfile.mkdtemp(prefix=".coqc-", dir=build_dir))
    prefix = logical.rpartition(".")[0]
    compiled = source
    if text is not None:
        compiled = scratch / source.name
        compiled.write_text(text, encoding="utf-8")
    try:
        run = await run_command(
            [
                coqc,
                *flags,
                *("-Q", str(scratch), prefix),
                *("-o", str(scratch / output.name)),
                str(compiled),
            ],
            cwd=str(build_dir),
            timeout=timeout,
        )
        if run.returncode != 0:
            return Compiled(failure_in(run.output, source, root), run.cpu_seconds)
        for suffix in (".vok", ".vos", ".glob", ".vo"):
            with contextlib.suppress(FileNotFoundError):
                os.replace(scratch / output.with_suffix(suffix).name, output.with_suffix(suffix))
        return Compiled(None, run.cpu_seconds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
