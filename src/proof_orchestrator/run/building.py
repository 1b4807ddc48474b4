"""Before a search: build what the files with holes need, project by project.

Each project's builder (:attr:`~..provers.backend.ProjectTools.builder`)
compiles the library files its files with holes import, in dependency
order. A file with holes whose dependency could not be built is not checked
(:attr:`~.reports.FileStatus.NOT_BUILT`); the others go on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..provers.backend import ProjectTools
from ..provers.build import BuildFailure, StepCallback
from .reports import FillReport
from .toolbox import Toolbox

__all__ = ["build_needed", "explain_failure"]


async def build_needed(
    targets: Sequence[Path],
    tools: Toolbox,
    report: FillReport,
    on_step: StepCallback | None = None,
) -> dict[Path, BuildFailure]:
    """Build what ``targets`` (files with holes) need; the targets that cannot be checked,
    with the failure of the file they need. What was built and what failed goes in
    ``report`` (its ``build`` figures and ``next_steps``)."""
    by_project: dict[int, tuple[ProjectTools, list[Path]]] = {}
    for path in targets:
        project_tools = tools.for_path(path)
        if project_tools.builder is None:
            continue
        by_project.setdefault(id(project_tools), (project_tools, []))[1].append(path)
    blocked: dict[Path, BuildFailure] = {}
    for project_tools, paths in by_project.values():
        builder = project_tools.builder
        if builder is None:
            continue
        result = await builder.build(paths, on_step)
        report.build["built"] = report.build.get("built", 0) + len(result.built)
        report.build["reused"] = report.build.get("reused", 0) + len(result.reused)
        report.build["failed"] = report.build.get("failed", 0) + len(result.failed)
        report.build["cpu_seconds"] = report.build.get("cpu_seconds", 0.0) + result.cpu_seconds
        report.build["wall_seconds"] = report.build.get("wall_seconds", 0.0) + result.wall_seconds
        report.build_failures += [f.one_line(result.root) for f in result.failed]
        if result.failed:
            report.next_steps.append(builder.next_step(result.failed))
        for path in paths:
            failure = result.failure_for(path)
            if failure is not None:
                blocked[path] = failure
    return blocked


def explain_failure(project_tools: ProjectTools, path: Path, output: str) -> str:
    """One line for a file that does not compile: ``file:line: error: ...`` (the raw
    output's end when the project has no builder to read it)."""
    builder = project_tools.builder
    if builder is None:
        return output.strip()[-1500:]
    return builder.explain(path, output)
