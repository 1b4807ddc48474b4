"""The peers' result for ``bench/dominance.py`` from an interrupted ``orch eval`` journal.

usage: python bench/partial_peers.py WORK/peers/<time>-eval.partial.jsonl WORK/peers.json

Only the goals the eval finished (in its file order) are in it, and it says so
(``partial``); ``bench/dominance.py WORK`` then skips its peers stage and scores
fill and the solo runs on those goals.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def main(journal: Path, out: Path) -> int:
    rows = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    unloadable = [r for r in rows if r["unloadable"]]
    rows = [r for r in rows if not r["unloadable"]]
    seen: Counter[tuple[str, str]] = Counter()
    for r in rows:
        seen[(r["file"], r["name"])] += 1
        r["key"] = f"{r['file']}::{r['name']}::{seen[(r['file'], r['name'])]}"
    arms: dict[str, Any] = {}
    for arm in ("hammer", "tactics"):
        solved = [r for r in rows if r["arms"][arm]["solved"]]
        arms[arm] = {
            "solved": len(solved),
            "cpu_seconds": round(sum(r["arms"][arm]["cpu_seconds"] for r in rows), 2),
            "per_strategy": dict(Counter(r["arms"][arm]["strategy"] for r in solved)),
        }
    result = {
        "kind": "orch-eval",
        "partial": f"interrupted after {len(rows) + len(unloadable)} goals ({journal.name})",
        "files_reached": sorted({r["file"] for r in [*rows, *unloadable]}),
        "goals": len(rows),
        "arms": arms,
        "baselines_union": sum(1 for r in rows if any(r["arms"][a]["solved"] for a in arms)),
        "unloadable": [
            {"file": r["file"], "name": r["name"], "reason": r["unloadable"][:400]}
            for r in unloadable
        ],
        "rows": rows,
    }
    out.write_text(json.dumps(result, indent=1))
    print(
        len(rows),
        "scored,",
        len(unloadable),
        "unloadable,",
        {a: v["solved"] for a, v in arms.items()},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]), Path(sys.argv[2])))
