"""Draw a held-out set of Coq library files for ``orch eval``, by a rule fixed in advance.

The rule (issue 14's acceptance): every ``.v`` file under ``theories/`` with at
least ``--min-qed`` ``Qed`` proofs, outside what ``From Hammer Require Import
Hammer.`` loads (evaluating those after such a load is not position-faithful),
and outside every file named by an earlier ``orch eval`` result in
``bench/results`` or listed with ``--exclude``; shuffled with ``--seed`` and
taken in that order until there are at least ``--files`` files and
``--goals`` goals. Prints one path per line (and the counts on stderr).

    python bench/draw_eval_files.py --seed 20261124 > files.txt
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
from pathlib import Path

THEORIES = Path("/usr/lib/ocaml/coq/theories")
RESULTS = Path(__file__).resolve().parent / "results"


def hammer_modules() -> set[str]:
    """Logical names of the modules loaded with CoqHammer."""
    script = "From Hammer Require Import Hammer.\nPrint Libraries.\n"
    out = subprocess.run(
        ["coqtop", "-q"], input=script, capture_output=True, text=True, timeout=120
    ).stdout
    return set(re.findall(r"\b(Coq(?:\.[\w']+)+)", out))


def logical_name(path: Path) -> str:
    return "Coq." + ".".join(path.relative_to(THEORIES).with_suffix("").parts)


def earlier_files() -> set[str]:
    """Every file an earlier ``orch eval`` or ``bench/dominance.py`` result names."""
    seen: set[str] = set()
    for found in [*RESULTS.glob("*eval*.json*"), *RESULTS.glob("*dominance*.json*")]:
        for result in [found] if found.is_file() else [p for p in found.rglob("*") if p.is_file()]:
            text = result.read_text(encoding="utf-8", errors="replace")
            seen.update(re.findall(r'"(/[^"]+\.v)"', text))
    return seen


def qed_count(path: Path) -> int:
    return len(re.findall(r"(?m)^\s*Qed\.", path.read_text(encoding="utf-8", errors="replace")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--min-qed", type=int, default=10)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--goals", type=int, default=300)
    parser.add_argument("--exclude", type=Path, help="a file of paths (one per line) to leave out")
    args = parser.parse_args()
    loaded = hammer_modules()
    if not loaded:
        print("could not list CoqHammer's modules (is coq-hammer installed?)", file=sys.stderr)
        return 2
    excluded = earlier_files()
    if args.exclude:
        excluded |= {line.strip() for line in args.exclude.read_text().splitlines() if line.strip()}
    pool = sorted(
        p
        for p in THEORIES.rglob("*.v")
        if logical_name(p) not in loaded and str(p) not in excluded and qed_count(p) >= args.min_qed
    )
    random.Random(args.seed).shuffle(pool)
    chosen: list[Path] = []
    goals = 0
    for path in pool:
        if len(chosen) >= args.files and goals >= args.goals:
            break
        chosen.append(path)
        goals += qed_count(path)
    print(
        json.dumps({"pool": len(pool), "files": len(chosen), "qed": goals, "seed": args.seed}),
        file=sys.stderr,
    )
    for path in chosen:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
