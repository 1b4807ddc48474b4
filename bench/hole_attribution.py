"""Which open hole each checked proof uses: the check's answer against ``Print Assumptions``.

For each Coq file given, a copy gets every ``--every``-th finished proof
replaced by ``Admitted.`` (as ``bench/check_cost.py`` makes it); the check
``orch fill`` runs (:class:`CoqVerifier`) then verifies two batches that put
half of those proofs back each. Its ``holes_used`` (read from printed terms,
``coq/attribution.py``) is compared with one ``Print Assumptions`` per proof of
the batch, asked in a separate compile of the same text. A hole the check did
not report is a soundness bug; one too many only makes it cautious.

    python bench/hole_attribution.py FILE.v [...] [--every 3] [-R FOLDER NAME] [--out F]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

from check_cost import admitted_copy, put_back

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.verify import CoqVerifier


async def one_batch(file: Path, every: int, half: int, flags: list[str]) -> dict[str, object]:
    text = file.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="hole-attribution-") as scratch:
        copy = Path(scratch) / file.name
        original, taken = admitted_copy(text, every, copy)
        copy.write_text(original, encoding="utf-8")
        batch = {name for name, _ in taken[half::2]}
        patched = put_back(original, copy, taken, batch)
        holes = scan_coq_text(copy, original)
        goals = [h.goal for h in holes if h.goal.qualified_name in batch]
        others = {h.goal.qualified_name for h in holes} - batch
        verifier = CoqVerifier(flags, cwd=scratch)
        try:
            result = await verifier.verify(copy, original, patched, goals)
            check_cpu, runs = verifier.cpu_seconds, verifier.compilations
            reported = {
                name: {use.label for use in found} for name, found in result.holes_used.items()
            }
            truth_audit = await verifier._audit(copy, patched, each=sorted(batch))
        finally:
            await verifier.aclose()
        stem = f"{copy.stem}."
        accepted = result.verdict.name == "ACCEPTED"
        asked = [truth_audit.answers.each.get(name, frozenset({"<missing>"})) for name in batch]
        unanswered = not truth_audit.compiled or any(k.startswith("<") for a in asked for k in a)
        if accepted and unanswered:
            raise SystemExit(f"{file}: the per-proof Print Assumptions went unanswered")
        truth = {
            name: {
                key.removeprefix(stem)
                for key in truth_audit.answers.each.get(name, frozenset())
                if key.removeprefix(stem) in others
            }
            for name in batch
        }
        missed = {n: sorted(truth[n] - reported.get(n, set())) for n in batch if accepted}
        extra = {n: sorted(reported.get(n, set()) - truth[n]) for n in batch}
        return {
            "file": str(file),
            "batch": half,
            "proofs": len(batch),
            "verdict": result.verdict.name,
            "check_cpu_seconds": round(check_cpu, 2),
            "coqc_runs": runs,
            "proofs_using_holes": sum(1 for found in truth.values() if found),
            "missed": {n: m for n, m in missed.items() if m},
            "extra": {n: e for n, e in extra.items() if e},
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--every", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("-R", nargs=2, action="append", default=[], metavar=("FOLDER", "NAME"))
    args = parser.parse_args()
    flags = [part for folder, name in args.R for part in ("-R", folder, name)]
    rows = []
    for file in args.files:
        for half in (0, 1):
            row = asyncio.run(one_batch(file, args.every, half, flags))
            print(json.dumps(row), flush=True)
            rows.append(row)
    missed = sum(len(row["missed"]) for row in rows)  # type: ignore[arg-type]
    print(f"{len(rows)} batches, {missed} proofs with a hole missed", file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps({"batches": rows}, indent=1) + "\n", encoding="utf-8")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
