"""Issue 32 acceptance: a copy in which one library file has a syntax error.

usage: python bench/projects/syntax_error.py LIB DEST FILE [--budget 10] [--out FILE]

Makes a copy with ``make_copies.py`` (seed 0), puts ``Definition broken := (1 + .``
after the imports of ``theories/FILE`` (a line of its own, committed), runs
``orch fill .`` with a fresh ledger and records the exit status, the lines of the
output that name ``FILE`` and which goals were proved in which files.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ORCH = str(ROOT / ".venv/bin/orch")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("dest", type=Path)
    ap.add_argument("file")
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    subprocess.run(
        [sys.executable, str(ROOT / "bench/projects/make_copies.py"), a.lib, str(a.dest)],
        check=True,
        capture_output=True,
    )
    target = a.dest / "theories" / a.file
    lines = target.read_text().splitlines(keepends=True)
    last_import = max(i for i, line in enumerate(lines) if line.startswith(("Require", "From ")))
    lines.insert(last_import + 1, "Definition broken := (1 + .\n")
    target.write_text("".join(lines))
    broken_line = last_import + 2
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b.invalid",
            "commit",
            "-qam",
            "syntax error",
        ],
        cwd=a.dest,
        check=True,
    )
    t0 = time.monotonic()
    run = subprocess.run(
        [
            "nice",
            "-n",
            "10",
            ORCH,
            "fill",
            ".",
            "--budget",
            str(a.budget),
            "--db",
            str(a.dest / ".orch-ledger.sqlite"),
        ],
        cwd=a.dest,
        capture_output=True,
        text=True,
    )
    text = run.stdout + run.stderr
    result = {
        "lib": a.lib,
        "broken_file": f"theories/{a.file}",
        "broken_line": broken_line,
        "exit_status": run.returncode,
        "wall_s": round(time.monotonic() - t0, 1),
        "lines_naming_file": [ln for ln in text.splitlines() if a.file in ln],
        "output_tail": text.splitlines()[-40:],
        "git_diff_stat": subprocess.run(
            ["git", "diff", "--stat"], cwd=a.dest, capture_output=True, text=True
        ).stdout,
    }
    out = a.out or a.dest / "syntax_error.json"
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
