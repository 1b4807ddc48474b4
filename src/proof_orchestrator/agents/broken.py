"""The MCP tools on broken proofs: ``broken_proofs``, and ``submit_proof`` on one of them.

A broken proof (one that no longer checks) is found as ``orch repair`` finds
it (the backend's ``repair`` feature: compile, locate, admit, go on); its id
is a hole id. A proof submitted for it is verified in the file with the
other broken proofs admitted and written into the file as it is
(:func:`~..run.repairing.verify_and_write_repairs`), under the file's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..backends import backend_for
from ..errors import ScriptRejected
from ..goals import GoalStatus, Outcome
from ..ledger import Ledger
from ..project.locks import file_lock
from ..run.pipeline import collect_files
from ..run.repairing import verify_and_write_repairs
from ..run.reports import Candidate, FileReport, FileStatus, GoalReport
from ..run.toolbox import Toolbox
from ..scheduler.governor import CpuGovernor
from .results import BrokenInfo, SubmitResult, SubmitStatus

__all__ = ["Located", "broken_proofs", "submit_repair"]


@dataclass(slots=True)
class Located:
    """A goal found in a file: its path, the text it was found in, its hole, its ledger id."""

    path: Path
    text: str
    hole: Any
    goal_id: int


class _Service(Protocol):
    """What these tools use of :class:`~.service.AgentService`."""

    root: Path
    tools: Toolbox
    ledger: Ledger
    governor: CpuGovernor

    @property
    def run_id(self) -> int: ...

    def resolve(self, path: str) -> Path: ...

    def _relative(self, path: Path) -> str: ...

    def _sentences(self, located: Located, script: str) -> tuple[str, ...]: ...

    def _record(
        self,
        located: Located,
        client: str,
        outcome: Outcome,
        script: Sequence[str] | str,
        *,
        message: str = "",
    ) -> None: ...


async def _detect(service: _Service, path: Path) -> tuple[str, Any]:
    """``path``'s text and its broken proofs (the backend's ``repair`` feature)."""
    text = path.read_text(encoding="utf-8")
    tools = service.tools.for_path(path)
    if tools.builder is not None:
        await tools.builder.build([path])

    async def compile_text(candidate: str) -> tuple[bool, str]:
        ok, output = await tools.verifier.compiles(path, candidate)
        return bool(ok), str(output)

    repair = backend_for(path).repair()
    return text, await repair.find_broken(path, text, compile_text)


async def broken_proofs(service: _Service, path: str | None = None) -> list[BrokenInfo]:
    target = service.resolve(path) if path else service.root
    found: list[BrokenInfo] = []
    for file in collect_files([target]):
        if file.suffix != ".v":
            continue  # Lean: not yet
        _, detection = await _detect(service, file)
        for broken in detection.broken:
            goal = broken.hole.goal
            goal_id = service.ledger.upsert_goal(goal)
            service.ledger.set_goal_status(goal_id, GoalStatus.BROKEN)
            found.append(
                BrokenInfo(
                    goal_id,
                    service._relative(file),
                    goal.line,
                    goal.name,
                    goal.statement,
                    broken.kind.value,
                    broken.failing,
                    broken.error,
                    backend_for(file).join_script(broken.script),
                )
            )
    return found


async def submit_repair(service: _Service, hole_id: int, script: str, client: str) -> SubmitResult:
    """``submit_proof`` on a broken proof: verified in the file with its broken proofs
    admitted, written into the file as it is (:mod:`..run.repairing`)."""
    row = service.ledger.goal_row(hole_id)
    if row is None:
        return SubmitResult(SubmitStatus.REJECTED, f"no hole has id {hole_id}")
    path = service.resolve(row.file)
    async with file_lock(path):
        text, detection = await _detect(service, path)
        broken = next((b for b in detection.broken if b.hole.goal.name == row.name), None)
        if broken is None:
            return SubmitResult(
                SubmitStatus.REJECTED, f"{row.name} is no longer broken; nothing to do"
            )
        located = Located(path, detection.standin, broken.hole, hole_id)
        try:
            sentences = service._sentences(located, script)
        except ScriptRejected as exc:
            service._record(located, client, Outcome.REJECTED, script, message=f"gate: {exc}")
            return SubmitResult(SubmitStatus.REJECTED, f"gate: {exc}")
        tools = service.tools.for_path(path)
        goal_report = GoalReport(
            broken.hole.goal, Outcome.CANDIDATE, f"mcp:{client}", sentences, hole=broken.hole
        )
        file_report = FileReport(path, FileStatus.PENDING)
        candidate = Candidate.of(broken.hole, goal_report, hole_id)
        async with service.governor.slot():
            done = await verify_and_write_repairs(
                path,
                text,
                detection,
                [candidate],
                tools,
                service.ledger,
                service.run_id,
                file_report,
            )
        if not done.accepted:
            reason = file_report.message or goal_report.message
            return SubmitResult(SubmitStatus.REJECTED, reason, script=list(sentences))
        service._record(located, client, Outcome.PROVED, sentences, message="repaired")
        written = service._relative(path) if done.written else ""
        return SubmitResult(SubmitStatus.VERIFIED, "", written, "", list(sentences))
