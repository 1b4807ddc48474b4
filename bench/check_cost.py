"""What a whole-file check costs against one compile of the file (issue 54, part 4).

For each Coq file given, a copy in a scratch folder gets every ``--every``-th
finished proof replaced by ``Admitted.``: that is the "original" a fill run
would start from. The verifier the product uses (:class:`CoqVerifier`, the
one ``orch fill`` builds) then checks the batch that puts all those proofs
back, as a fill run's accepting check does, and its CPU seconds are set
against one plain ``coqc`` of the finished file. A second check of another
batch of the same original (a later pass's) is timed too.

    python bench/check_cost.py FILE.v [...] [--every 3] [-R FOLDER NAME] [--out results.json]

Files are read where they are; the copies load the same libraries (the
installed ones for a library file: the copy is a different module).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from proof_orchestrator.coq.holes import qed_proofs, scan_coq_text
from proof_orchestrator.coq.verify import CoqVerifier
from proof_orchestrator.provers.process import run_command


def admitted_copy(text: str, every: int, path: Path) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with every ``every``-th Qed proof admitted, and the (name, proof) pairs out."""
    holes = [hole for hole, _ in qed_proofs(path, text)]
    chosen = holes[every - 1 :: every]
    out = text
    taken: list[tuple[str, str]] = []
    for hole in sorted(chosen, key=lambda h: h.proof_start, reverse=True):
        proof = out[hole.proof_start : hole.proof_end]
        taken.append((hole.goal.qualified_name, proof))
        out = out[: hole.proof_start] + "Admitted." + out[hole.proof_end :]
    taken.reverse()
    return out, taken


def put_back(original: str, path: Path, taken: list[tuple[str, str]], names: set[str]) -> str:
    """``original`` with the proofs of ``names`` restored."""
    proofs = dict(taken)
    out = original
    for hole in sorted(scan_coq_text(path, original), key=lambda h: h.proof_start, reverse=True):
        name = hole.goal.qualified_name
        if name in names:
            out = out[: hole.proof_start] + proofs[name] + out[hole.proof_end :]
    return out


async def measure(file: Path, every: int, flags: list[str]) -> dict[str, object]:
    text = file.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="check-cost-") as scratch:
        copy = Path(scratch) / file.name
        original, taken = admitted_copy(text, every, copy)
        copy.write_text(original, encoding="utf-8")
        names = [name for name, _ in taken]
        first, second = set(names[::2]), set(names[1::2])
        # one compile of the finished file, as a user's build runs it
        finished = Path(scratch) / "plain"
        finished.mkdir()
        (finished / file.name).write_text(put_back(original, copy, taken, set(names)))
        run = await run_command(["coqc", *flags, file.name], cwd=str(finished), timeout=1800)
        if run.returncode != 0:
            return {"file": str(file), "error": run.output[-500:]}
        compile_cpu = run.cpu_seconds
        verifier = CoqVerifier(flags, cwd=scratch)
        rows = []
        try:
            for label, batch in (("first batch", first), ("second batch", second)):
                if not batch:
                    continue
                holes = scan_coq_text(copy, original)
                goals = [h.goal for h in holes if h.goal.qualified_name in batch]
                before_cpu, before_runs = verifier.cpu_seconds, verifier.compilations
                started = time.monotonic()
                result = await verifier.verify(
                    copy, original, put_back(original, copy, taken, batch), goals
                )
                rows.append(
                    {
                        "batch": label,
                        "proofs": len(batch),
                        "verdict": result.verdict.name,
                        "check_cpu_seconds": round(verifier.cpu_seconds - before_cpu, 2),
                        "coqc_runs": verifier.compilations - before_runs,
                        "wall_seconds": round(time.monotonic() - started, 2),
                    }
                )
        finally:
            await verifier.aclose()
        return {
            "file": str(file),
            "holes": len(names),
            "compile_cpu_seconds": round(compile_cpu, 2),
            "checks": rows,
            "first_check_over_compile": round(rows[0]["check_cpu_seconds"] / compile_cpu, 2)  # type: ignore[operator]
            if rows and compile_cpu
            else None,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--every", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "-R",
        nargs=2,
        action="append",
        default=[],
        metavar=("FOLDER", "NAME"),
        help="a library folder mapped as its project maps it (Bignums loads its own files)",
    )
    args = parser.parse_args()
    if shutil.which("coqc") is None:
        print("coqc is not on PATH", file=sys.stderr)
        return 2
    missing = [str(file) for file in args.files if not file.is_file()]
    if missing:
        print(f"no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    results = []
    for file in args.files:
        flags = [part for folder, name in args.R for part in ("-R", folder, name)]
        row = asyncio.run(measure(file, args.every, flags))
        print(json.dumps(row), flush=True)
        results.append(row)
    if args.out:
        args.out.write_text(json.dumps({"files": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
