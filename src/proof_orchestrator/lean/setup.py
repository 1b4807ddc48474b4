"""``orch lean setup``: build the Lean REPL that matches a project's toolchain.

The REPL (leanprover-community/repl) must be built with the same Lean version
as the project, or it cannot read the project's ``.olean`` files. Its
repository tags releases by Lean version (``v4.9.0``, ...), so setup clones
the tag named in the project's ``lean-toolchain`` into a cache folder, pins the
clone to exactly that toolchain, runs ``lake build``, and records the binary
for the toolchain in :func:`~proof_orchestrator.lean.session.registry_path`.
``ORCH_LEAN_REPL`` still overrides whatever is recorded.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import OrchError, ProverHung
from ..provers.process import FinishedRun, run_sync
from .session import LeanProject, registry_path

__all__ = ["REPL_URL", "LeanSetupError", "SetupResult", "setup_repl"]

REPL_URL = "https://github.com/leanprover-community/repl"


class LeanSetupError(OrchError):
    """The REPL could not be prepared; the message says what to do."""


@dataclass(frozen=True, slots=True)
class SetupResult:
    toolchain: str
    binary: Path
    built: bool


def _tag(toolchain: str) -> str:
    """``leanprover/lean4:v4.9.0`` -> ``v4.9.0``."""
    return toolchain.rsplit(":", 1)[-1].strip()


def _run(argv: list[str], cwd: Path, timeout: float) -> FinishedRun:
    try:
        return run_sync(argv, cwd=cwd, timeout=timeout)
    except ProverHung as exc:
        raise LeanSetupError(f"`{' '.join(argv)}` did not finish within {timeout:.0f}s") from exc


def setup_repl(
    project_dir: Path,
    *,
    cache: Path | None = None,
    url: str = REPL_URL,
    force: bool = False,
    build_timeout: float = 3600.0,
) -> SetupResult:
    """Clone and build the REPL for ``project_dir``'s toolchain; record its path."""
    if not project_dir.exists():
        raise LeanSetupError(f"{project_dir} does not exist")
    folder = project_dir if project_dir.is_dir() else project_dir.parent
    project = LeanProject.for_file(folder / "_")
    if not project.toolchain:
        raise LeanSetupError(
            f"no lean-toolchain file in {folder} or above: run `orch lean setup` inside a "
            "Lean project (the folder with lakefile.lean / lakefile.toml and lean-toolchain)"
        )
    for tool, hint in (
        ("git", "install git"),
        ("lake", "install elan (https://github.com/leanprover/elan); it provides lake and lean"),
    ):
        if shutil.which(tool) is None:
            raise LeanSetupError(f"`{tool}` is not on PATH: {hint}")
    tag = _tag(project.toolchain)
    cache = cache or registry_path().parent
    checkout = cache / tag
    binary = checkout / ".lake" / "build" / "bin" / "repl"
    built = False
    if force or not binary.exists():
        if force and checkout.exists():
            shutil.rmtree(checkout)
        if not checkout.exists():
            cache.mkdir(parents=True, exist_ok=True)
            clone = _run(
                ["git", "clone", "--depth", "1", "--branch", tag, url, str(checkout)],
                cache,
                600,
            )
            if clone.returncode != 0:
                raise LeanSetupError(
                    f"could not clone {url} at tag {tag}: {clone.stderr.strip()[-400:]}\n"
                    "Either there is no network, or the REPL has no tag for this toolchain. "
                    "Clone and build the REPL yourself (`lake build` in its folder) and set "
                    "ORCH_LEAN_REPL to the `repl` binary."
                )
        # the REPL must run on exactly the project's Lean
        (checkout / "lean-toolchain").write_text(project.toolchain + "\n", encoding="utf-8")
        build = _run(["lake", "build"], checkout, build_timeout)
        if build.returncode != 0 or not binary.exists():
            raise LeanSetupError(
                f"`lake build` of the REPL failed in {checkout}:\n"
                f"{(build.stdout + build.stderr).strip()[-1500:]}\n"
                f"Check that elan can install {project.toolchain} (it downloads it once)."
            )
        built = True
    registry = registry_path()
    try:
        recorded = json.loads(registry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = {}
    recorded[project.toolchain] = str(binary)
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text(json.dumps(recorded, indent=2) + "\n", encoding="utf-8")
    return SetupResult(project.toolchain, binary, built)
