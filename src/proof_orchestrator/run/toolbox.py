"""The prover tools of the projects one process works on, made on first use.

One :class:`~..provers.backend.ProjectTools` per project (a Coq project is
one set of ``_CoqProject`` flags, a Lean project one root), from the backend
that owns the file's suffix.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from ..backends import backend_for
from ..provers.backend import Hole, ProjectTools, ToolSettings
from .reports import FillOptions

__all__ = ["Toolbox", "build_jobs", "tool_settings"]


def build_jobs(cpu_target: float, cores: int | None = None) -> int:
    """Files compiled at once by a build: the cores the CPU target allows, at least one
    (two at the target 1.0 on two cores; one at the default 0.5)."""
    return max(1, int((cores or os.cpu_count() or 1) * cpu_target + 1e-9))


def tool_settings(options: FillOptions) -> ToolSettings:
    """What the backends need from a run's options to make a project's tools."""
    return ToolSettings(
        sessions=options.orch.max_light + options.orch.max_heavy,
        memory_mb=options.orch.prover_memory_mb,
        build_command=options.orch.build,
        build_jobs=build_jobs(options.orch.cpu_target),
        strict_axioms=options.orch.strict_axioms,
        coq=options.coq,
        lean=options.lean,
    )


class Toolbox:
    """Tools per project; ``throttle`` (the governor's gate) holds back new prover processes."""

    def __init__(self, options: FillOptions, throttle: Any = None) -> None:
        self.settings = tool_settings(options)
        self.throttle = throttle
        self._tools: dict[Hashable, ProjectTools] = {}

    def for_path(self, path: Path) -> ProjectTools:
        backend = backend_for(path)
        key = backend.project_key(path)
        if key not in self._tools:
            self._tools[key] = backend.tools(path, self.settings, self.throttle)
        return self._tools[key]

    def for_hole(self, hole: Hole) -> ProjectTools:
        return self.for_path(hole.goal.file)

    def __len__(self) -> int:
        return len(self._tools)

    def rebuilds(self) -> tuple[int, float]:
        """Files compiled again during the run before a check, and their CPU seconds."""
        builders = [t.builder for t in self._tools.values() if t.builder is not None]
        return (
            sum(b.rebuilt_files for b in builders),
            sum(b.rebuild_cpu_seconds for b in builders),
        )

    async def aclose(self) -> None:
        tools, self._tools = list(self._tools.values()), {}
        for project_tools in tools:
            await project_tools.aclose()
