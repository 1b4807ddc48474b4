"""The rows of ``orch eval``: one goal, each arm's result, and the journal they are
written to as goals finish (``*-eval.partial.jsonl``), which ``--resume`` reads back."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import OrchError

__all__ = ["ArmResult", "GoalRow", "read_journal", "row_json"]


@dataclass(slots=True)
class ArmResult:
    solved: bool
    cpu_seconds: float
    wall_seconds: float
    strategy: str = ""
    script: tuple[str, ...] = ()
    note: str = ""


@dataclass(slots=True)
class GoalRow:
    file: str
    name: str
    order: list[str]
    arms: dict[str, ArmResult] = field(default_factory=dict)
    #: mining this goal's proof for the k-NN model once the arms are done
    training_cpu_seconds: float = 0.0
    #: why the file does not load up to this goal in the evaluation's session
    #: (such goals are reported apart and count for no arm)
    unloadable: str = ""


def row_json(row: GoalRow) -> dict[str, Any]:
    return {
        "file": row.file,
        "name": row.name,
        "order": row.order,
        "training_cpu_seconds": round(row.training_cpu_seconds, 3),
        "unloadable": row.unloadable,
        "arms": {
            a: {
                "solved": v.solved,
                "cpu_seconds": round(v.cpu_seconds, 3),
                "wall_seconds": round(v.wall_seconds, 3),
                "strategy": v.strategy,
                "script": " ".join(v.script),
                "note": v.note,
            }
            for a, v in row.arms.items()
        },
    }


def _row(data: dict[str, Any]) -> GoalRow:
    arms = {
        arm: ArmResult(
            bool(v["solved"]),
            float(v["cpu_seconds"]),
            float(v["wall_seconds"]),
            str(v.get("strategy", "")),
            (str(v["script"]),) if v.get("script") else (),
            str(v.get("note", "")),
        )
        for arm, v in data["arms"].items()
    }
    return GoalRow(
        str(data["file"]),
        str(data["name"]),
        [str(a) for a in data["order"]],
        arms,
        float(data.get("training_cpu_seconds", 0.0)),
        str(data.get("unloadable", "")),
    )


def read_journal(path: Path) -> dict[tuple[str, str, int], GoalRow]:
    """The rows an earlier run journalled, by (file, lemma, which occurrence of that name
    in the file: 1, 2, ...); a line cut by a crash at the end is ignored."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise OrchError(f"cannot read the journal to resume: {exc}") from exc
    rows: dict[tuple[str, str, int], GoalRow] = {}
    seen: Counter[tuple[str, str]] = Counter()
    for number, line in enumerate(lines, 1):
        try:
            row = _row(json.loads(line))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            if number == len(lines):
                break  # the line being written when the run stopped
            raise OrchError(f"{path}:{number}: not a journal row ({exc})") from exc
        seen[(row.file, row.name)] += 1
        rows[(row.file, row.name, seen[(row.file, row.name)])] = row
    return rows
