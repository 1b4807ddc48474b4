"""Splicing and atomic writes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.errors import FileChangedError
from proof_orchestrator.project.patch import Patch, apply_patches, write_atomic

TEXT = (
    "(* header *)\nLemma a : True.\nProof.\n  admit.\nAdmitted.\n\n"
    "  Lemma b : True.\n  Admitted. (* tail *)\n"
)


def test_only_the_proof_spans_change() -> None:
    a, b = scan_coq_text(Path("P.v"), TEXT)
    patched = apply_patches(TEXT, [Patch(a, ("exact I.",)), Patch(b, ("trivial.",))])
    assert patched == (
        "(* header *)\nLemma a : True.\nProof.\n  exact I.\nQed.\n\n"
        "  Lemma b : True.\n  Proof.\n    trivial.\n  Qed. (* tail *)\n"
    )


def test_write_refuses_when_the_file_changed(write_v: Callable[[str, str], Path]) -> None:
    path = write_v("P.v", TEXT)
    path.write_text(TEXT + "(* edited by the user *)\n")
    with pytest.raises(FileChangedError):
        write_atomic(path, "new", TEXT)
    assert path.read_text().endswith("(* edited by the user *)\n")


def test_write_replaces_atomically_and_keeps_mode(write_v: Callable[[str, str], Path]) -> None:
    path = write_v("P.v", TEXT)
    os.chmod(path, 0o640)
    write_atomic(path, "Check 1.\n", TEXT)
    assert path.read_text() == "Check 1.\n"
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in path.parent.iterdir() if "orch-tmp" in p.name] == []
