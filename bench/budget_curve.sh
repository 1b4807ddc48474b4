#!/usr/bin/env bash
# Solved against budget: `orch eval` (the portfolio arm, i.e. the code `orch fill`
# runs on a goal) at 5, 10, 20 and 40 CPU s per goal on the same goals.
#   usage: bench/budget_curve.sh FILE.v... [-- more orch eval options]
# Writes one eval JSON per budget and bench/results/<time>-budget-curve.json.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
files=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do files+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#files[@]} -gt 0 ] || { echo "usage: bench/budget_curve.sh FILE.v... [-- orch eval options]" >&2; exit 2; }
out="$here/bench/results/curve-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
for budget in ${BUDGETS:-5 10 20 40}; do
    "$here/.venv/bin/orch" eval "${files[@]}" --budget "$budget" --out "$out/$budget" "$@" >/dev/null
done
"$here/.venv/bin/python" - "$out" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
points = []
for folder in sorted(out.iterdir(), key=lambda p: float(p.name)):
    result = json.loads(next(folder.glob("*-eval.json")).read_text())
    arm = result["arms"]["portfolio"]
    points.append({"budget": result["budget_cpu_seconds"], "goals": result["goals"],
                   "solved": arm["solved"], "cpu_seconds": arm["cpu_seconds"],
                   "per_strategy": arm["per_strategy"], "wall_seconds": result["wall_seconds"]})
summary = {"kind": "budget-curve", "files": result["files"], "points": points,
           "rising": all(b["solved"] > a["solved"] for a, b in zip(points, points[1:]))}
path = out.parent / f"{out.name.removeprefix('curve-')}-budget-curve.json"
path.write_text(json.dumps(summary, indent=2) + "\n")
for p in points:
    print(f"{p['budget']:>5g} CPU s/goal: {p['solved']}/{p['goals']} solved, {p['cpu_seconds']:.0f} CPU s")
print("rises at every doubling:", summary["rising"], "->", path)
PY
