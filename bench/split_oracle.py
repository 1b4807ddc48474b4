"""The long run of the splitter/scanner property tests (issue 18).

Coq: generated sources are split by ``coq.syntax.split_sentences`` and by coqc
itself (``coqc -time`` prints each sentence's span; tests/coq_oracle.py); the
spans must be equal. Lean: the lexer and sorry scanner against the recorded
REPL ``sorries`` positions (with comments appended at line ends), and the
invariants on generated sources (tests/test_lean_properties.py).

    nice -n 19 .venv/bin/python bench/split_oracle.py --coq 1000 --lean 5000

Writes ``bench/results/<timestamp>-split-oracle.json``: examples run, failures
(with the shrunk counter-example), seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as seed_of
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import test_lean_properties as lean  # noqa: E402
from tests.coq_oracle import OracleError, coq_sentence_spans, coq_sources  # noqa: E402

from proof_orchestrator.coq.syntax import split_sentences  # noqa: E402


def run(
    name: str, examples: int, seed: int, body: Callable[..., None], *strategies: Any
) -> dict[str, Any]:
    """Run ``body`` on ``examples`` generated inputs; count them; keep the failure if any."""
    count = 0

    def counted(drawn: tuple[Any, ...]) -> None:
        nonlocal count
        count += 1
        body(*drawn)

    test = seed_of(seed)(
        settings(
            max_examples=examples,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )(given(st.tuples(*strategies))(counted))
    )
    started = time.monotonic()
    cpu = time.process_time()
    failure = ""
    try:
        test()
    except (AssertionError, OracleError, ExceptionGroup):  # falsified: keep the shrunk example
        failure = traceback.format_exc(limit=3)[-4000:]
    return {
        "property": name,
        "examples_requested": examples,
        "examples_run": count,
        "seed": seed,
        "failed": bool(failure),
        "failure": failure,
        "wall_seconds": round(time.monotonic() - started, 1),
        "own_cpu_seconds": round(time.process_time() - cpu, 1),
    }


def coq_property(text: str) -> None:
    ours = [(s.start, s.end) for s in split_sentences(text)]
    assert ours == coq_sentence_spans(text), text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--coq", type=int, default=1000, help="generated Coq sources")
    parser.add_argument("--lean", type=int, default=5000, help="examples per Lean property")
    parser.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "big"))
    args = parser.parse_args()
    results = []
    if args.lean:
        results.append(
            run(
                "lean: recorded REPL sorries under line-end comments",
                args.lean,
                args.seed,
                lean.test_comments_at_line_ends_keep_the_repl_sorry_positions.hypothesis.inner_test,
                st.data(),
            )
        )
        results.append(
            run(
                "lean: generated holes found exactly",
                args.lean,
                args.seed,
                lean.test_generated_holes_are_found_exactly.hypothesis.inner_test,
                lean.lean_sources(),
            )
        )
        results.append(
            run(
                "lean: splicing one hole changes only its sorry",
                args.lean,
                args.seed,
                lean.test_splicing_one_hole_changes_only_its_sorry.hypothesis.inner_test,
                lean.lean_sources(),
                st.data(),
            )
        )
    if args.coq:
        results.append(
            run(
                "coq: sentence spans equal coqc's", args.coq, args.seed, coq_property, coq_sources()
            )
        )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = ROOT / "bench" / "results" / f"{stamp}-split-oracle.json"
    out.write_text(json.dumps({"generated": stamp, "results": results}, indent=2) + "\n")
    for r in results:
        print(
            f"{r['property']}: {r['examples_run']} examples, "
            f"{'FAILED' if r['failed'] else 'no counter-example'}, {r['wall_seconds']} s"
        )
    print(out)
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
