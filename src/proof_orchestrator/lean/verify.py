"""Whole-file verification for Lean: ``lake env lean --json`` and ``#print axioms``.

The patched file is compiled as a whole (the REPL is known to accept some
incorrect proofs in tactic mode, leanprover-community/repl issue 44), with
``#print axioms`` appended for the proved declarations; a proof is accepted
when its axioms are Lean's standard ones or those the file declares itself.

A finished proof that uses a ``theorem``/``lemma`` of the file still holding
a ``sorry`` (a hole) depends on ``sorryAx`` too. ``#print axioms`` does not
say through what, so a second copy is compiled in which every such hole is
restated as an ``axiom`` (:func:`holes_as_axioms`): there the proof's axioms
name the holes it uses instead. ``sorryAx`` is accepted only when it is gone
from that answer (it came through those holes alone); the proof is then
closed modulo them (``VerificationResult.holes_used``). A ``sorry`` reached
any other way (a ``def`` with a ``sorry``, a hole of an imported file,
whose module would have to be rebuilt to restate it) is still refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProverNotFound
from ..goals import Goal, HoleUse
from ..project.statedir import scratch_dir
from ..provers.base import Verdict, VerificationResult
from ..provers.process import run_command
from ..provers.settings import LeanSettings
from .holes import LeanHole, command_spans, scan_lean_text
from .holes import declared_axioms as lean_declared_axioms
from .session import STANDARD_AXIOMS, LeanProject

__all__ = ["LeanVerifier", "holes_as_axioms", "parse_lean_json"]

_AXIOMS_LINE = re.compile(r"'(?P<name>.+?)' depends on axioms: \[(?P<axioms>.*?)\]", re.S)
_NO_AXIOMS = re.compile(r"'(?P<name>.+?)' does not depend on any axioms")


@dataclass(frozen=True, slots=True)
class _Check:
    ok: bool
    output: str
    errors: tuple[tuple[int, str], ...]
    #: declaration name -> axioms it depends on
    axioms: dict[str, frozenset[str]]
    #: lines of ``declaration uses 'sorry'`` warnings
    sorry_lines: frozenset[int]
    cpu_seconds: float


def parse_lean_json(output: str) -> list[dict[str, object]]:
    """The messages of ``lean --json`` (one JSON object per line; other lines are ignored)."""
    messages = []
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(line)
                if isinstance(value, dict):
                    messages.append(value)
    return messages


def _axioms_in(data: str) -> tuple[str, frozenset[str]] | None:
    if m := _AXIOMS_LINE.search(data):
        names = frozenset(a.strip() for a in m.group("axioms").split(",") if a.strip())
        return m.group("name"), names
    if m := _NO_AXIOMS.search(data):
        return m.group("name"), frozenset()
    return None


class LeanVerifier:
    """Checks whole ``.lean`` files with ``lake env lean --json`` (or ``lean --json``)."""

    def __init__(self, project: LeanProject, settings: LeanSettings | None = None) -> None:
        self.project = project
        self.settings = settings or LeanSettings()
        self.cpu_seconds = 0.0
        self.compilations = 0
        self._cache: dict[str, _Check] = {}

    def argv(self, file: Path) -> list[str]:
        if self.project.lake:
            if shutil.which("lake") is None:
                raise ProverNotFound("`lake` is not on PATH; install elan or add the toolchain")
            return ["lake", "env", "lean", "--json", str(file)]
        if shutil.which("lean") is None:
            raise ProverNotFound("`lean` is not on PATH; install elan (it provides lean and lake)")
        return ["lean", "--json", str(file)]

    async def _check(self, text: str, audit: Sequence[str]) -> _Check:
        """Compile ``text`` with ``#print axioms`` for ``audit`` appended."""
        probe = text.rstrip("\n") + "\n\n" + "".join(f"#print axioms {n}\n" for n in audit)
        key = hashlib.sha256(probe.encode()).hexdigest()
        if key in self._cache:
            return self._cache[key]
        with scratch_dir(self.project.root) as folder:
            file = Path(folder) / "OrchCheck.lean"
            file.write_text(probe, encoding="utf-8")
            run = await run_command(
                self.argv(file), cwd=str(self.project.root), timeout=self.settings.verify_timeout
            )
        self.cpu_seconds += run.cpu_seconds
        self.compilations += 1
        errors: list[tuple[int, str]] = []
        axioms: dict[str, frozenset[str]] = {}
        sorry_lines: set[int] = set()
        for message in parse_lean_json(run.output):
            data = str(message.get("data", ""))
            pos = message.get("pos")
            line = int(pos.get("line", 0)) if isinstance(pos, dict) else 0
            severity = message.get("severity")
            if severity == "error":
                errors.append((line, data))
            elif found := _axioms_in(data):
                axioms[found[0]] = found[1]
            elif "declaration uses 'sorry'" in data or "declaration uses `sorry`" in data:
                sorry_lines.add(line)
        ok = run.returncode == 0 and not errors
        check = _Check(
            ok, run.output, tuple(errors), axioms, frozenset(sorry_lines), run.cpu_seconds
        )
        self._cache[key] = check
        return check

    async def compiles(self, path: Path, text: str) -> tuple[bool, str]:
        names = sorted({h.decl_name for h in scan_lean_text(path, text) if h.decl_name})
        check = await self._check(text, names)
        return check.ok, "\n".join(f"line {n}: {d}" for n, d in check.errors) or check.output

    async def verify(
        self,
        path: Path,
        original: str,
        patched: str,
        goals: Sequence[Goal],
        declared_axioms: frozenset[str] = frozenset(),
    ) -> VerificationResult:
        holes = {h.goal.fingerprint: h for h in scan_lean_text(path, original)}
        chosen = [holes[g.fingerprint] for g in goals if g.fingerprint in holes]
        names = sorted({h.decl_name for h in chosen if h.decl_name})
        before = await self._check(original, names)
        after = await self._check(patched, names)
        if not after.ok:
            line, _ = after.errors[0] if after.errors else (None, "")
            detail = "\n".join(f"line {n}: {d}" for n, d in after.errors) or after.output
            return VerificationResult(
                Verdict.DOES_NOT_COMPILE,
                detail[-3000:],
                cpu_seconds=after.cpu_seconds,
                error_line=line,
            )
        allowed = set(STANDARD_AXIOMS) | declared_axioms | lean_declared_axioms(original)
        filled: dict[int, int] = {}
        for hole in chosen:
            filled[hole.decl_start] = filled.get(hole.decl_start, 0) + 1
        offending: list[str] = []
        new: set[str] = set()
        spans_before = [a for a, _ in command_spans(original)]
        lines_after = _declaration_lines(patched)
        #: finished proofs whose only new axiom is sorryAx: through a hole, maybe
        through: list[LeanHole] = []
        for hole in chosen:
            finished = filled[hole.decl_start] >= hole.sorries_in_decl
            first, last = lines_after[spans_before.index(hole.decl_start)]
            own_sorry = finished and any(first <= n <= last for n in after.sorry_lines)
            if own_sorry:
                offending.append(hole.goal.qualified_name)
                new.add("sorryAx")
            if not hole.decl_name:
                continue
            old = before.axioms.get(hole.decl_name, frozenset()) - {"sorryAx"}
            now = after.axioms.get(hole.decl_name)
            if now is None:
                offending.append(hole.goal.qualified_name)
                new.add(f"(no `#print axioms` answer for {hole.decl_name})")
                continue
            extra = {a for a in now - old - allowed if not (a == "sorryAx" and not finished)}
            if extra == {"sorryAx"} and not own_sorry:
                through.append(hole)
            elif extra:
                offending.append(hole.goal.qualified_name)
                new |= extra
        holes_used: dict[str, tuple[HoleUse, ...]] = {}
        if through:
            probe, stated = holes_as_axioms(path, patched)
            check = await self._check(probe, sorted({h.decl_name for h in through}))
            for hole in through:
                found = check.axioms.get(hole.decl_name) if check.ok else None
                old = before.axioms.get(hole.decl_name, frozenset()) - {"sorryAx"}
                rest = {"sorryAx"} if found is None else found - old - allowed - set(stated)
                if found is None or rest:
                    # sorryAx reached some other way, or the restated copy did not compile
                    offending.append(hole.goal.qualified_name)
                    new |= rest
                    continue
                holes_used[hole.goal.qualified_name] = tuple(
                    HoleUse(str(path), name, stated[name], name)
                    for name in sorted(found & set(stated))
                )
        if offending:
            return VerificationResult(
                Verdict.NEW_ASSUMPTIONS,
                "new assumptions: " + ", ".join(sorted(new)),
                tuple(sorted(new)),
                cpu_seconds=after.cpu_seconds,
                offending=tuple(dict.fromkeys(offending)),
            )
        return VerificationResult(
            Verdict.ACCEPTED, cpu_seconds=after.cpu_seconds, holes_used=holes_used
        )

    async def aclose(self) -> None:
        self._cache.clear()


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _declaration_lines(text: str) -> list[tuple[int, int]]:
    """(first line, last line) of every command of ``text``, in order."""
    return [(_line(text, a), _line(text, b)) for a, b in command_spans(text)]


def holes_as_axioms(path: Path, text: str) -> tuple[str, dict[str, str]]:
    """``text`` with every ``theorem``/``lemma`` that still holds a ``sorry`` restated as
    an ``axiom`` of the same statement, and those declarations (name -> fingerprint).

    ``#print axioms`` on the copy names the holes a proof uses where the file
    itself says ``sorryAx``. Attributes and modifiers stay; a ``def`` keeps its
    ``sorry`` (its body may be computed with).
    """
    first: dict[int, LeanHole] = {}
    for hole in scan_lean_text(path, text):
        if hole.decl_name:
            first.setdefault(hole.decl_start, hole)
    stated: dict[str, str] = {}
    for start in sorted(first, reverse=True):
        hole = first[start]
        statement = hole.goal.statement
        keyword = statement.split(None, 1)[0] if statement else ""
        at = text.find(statement, hole.decl_start, hole.decl_end)
        if keyword not in ("theorem", "lemma") or at < 0:
            continue
        axiom = text[hole.decl_start : at] + "axiom" + statement[len(keyword) :]
        text = text[: hole.decl_start] + axiom + text[hole.decl_end :]
        stated[hole.decl_name] = hole.goal.fingerprint
    return text, stated
