"""Where the recorded Lean REPL transcripts are, or why they are not here.

The transcripts are the real Lean REPL's own test traffic (leanprover-community/repl
at :data:`PINNED_COMMIT`): ``core/NAME.in`` / ``core/NAME.expected.out`` pairs, and
``mathlib/...`` for the ones recorded in a project importing Mathlib. They are looked
up, in order, at

1. ``$ORCH_LEAN_TRANSCRIPTS``;
2. ``../shared/lean-repl-transcripts`` beside the checkout (the developers' machines);
3. ``.cache/lean-repl-transcripts`` in the checkout, which ``make lean-transcripts``
   fills with a sparse clone of the REPL repository's tests.

Where none holds them, every test that needs them is skipped with :data:`MISSING`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["MISSING", "PINNED_COMMIT", "TRANSCRIPTS", "transcripts", "with_replies"]

REPO = Path(__file__).resolve().parent.parent
PINNED_COMMIT = "8948401ab4924499421c94b7facdfca5ff27d81d"
ENV = "ORCH_LEAN_TRANSCRIPTS"


def _candidates() -> list[tuple[str, Path]]:
    found = []
    if os.environ.get(ENV):
        found.append((f"${ENV}", Path(os.environ[ENV]).expanduser()))
    found.append(("../shared", REPO.parent / "shared" / "lean-repl-transcripts"))
    found.append(("make lean-transcripts", REPO / ".cache" / "lean-repl-transcripts"))
    return found


def _locate() -> tuple[Path | None, str]:
    for origin, path in _candidates():
        if (path / "core").is_dir():
            return path, ""
        if origin.startswith("$"):
            return None, f"{ENV}={path} has no core/ folder of transcripts"
    return None, (
        "Lean REPL transcripts not found: run `make lean-transcripts` (a sparse clone of "
        f"leanprover-community/repl at {PINNED_COMMIT[:7]}), or set {ENV} to a folder "
        "with core/ and mathlib/"
    )


TRANSCRIPTS, MISSING = _locate()


def transcripts() -> Path:
    """The transcript folder; skips the calling test, with the reason, when there is none."""
    if TRANSCRIPTS is None:
        pytest.skip(MISSING)
    return TRANSCRIPTS


def with_replies(folder: str) -> list[object]:
    """Parameters for a test over every transcript of ``folder`` that has recorded replies.

    Without a corpus this is one parameter skipped with the reason, never an empty set
    (an empty parametrization would silently turn the test into nothing).
    """
    if TRANSCRIPTS is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason=MISSING), id=f"{folder}-missing")]
    return [
        pytest.param(path, id=f"{folder}/{path.stem}")
        for path in sorted((TRANSCRIPTS / folder).glob("*.in"))
        if path.with_name(path.stem + ".expected.out").exists()
    ]
