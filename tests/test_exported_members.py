"""The public surface: sorted, complete, importable."""

from __future__ import annotations

import proof_orchestrator


def test_all_is_sorted_and_every_name_exists() -> None:
    names = proof_orchestrator.__all__
    assert names == sorted(names, key=lambda n: (not n.isupper(), n.lower() if n.isupper() else n))
    for name in names:
        assert hasattr(proof_orchestrator, name), name


def test_every_error_derives_from_orch_error() -> None:
    errors = [n for n in proof_orchestrator.__all__ if n.endswith(("Error", "Rejected", "Closed"))]
    errors += ["ProverNotFound", "ProverHung", "ProverDesync", "ProverCrashed", "PathNotFound"]
    for name in errors:
        assert issubclass(getattr(proof_orchestrator, name), proof_orchestrator.OrchError), name
