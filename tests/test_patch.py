"""Splicing and atomic writes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.errors import FileChangedError
from proof_orchestrator.project import patch as patch_module
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


def _save_after_the_last_look(
    monkeypatch: pytest.MonkeyPatch, path: Path, user: str, how: str
) -> None:
    """An editor's save that lands right after the writer's last look at ``path``."""
    looks = 0
    real_look = patch_module._look

    def look(at: Path, expected: str) -> object:
        nonlocal looks
        seen = real_look(at, expected)
        looks += 1
        if looks == 2:  # the last look before the exchange
            if how == "rename":
                side = path.with_name("editor.swp")
                side.write_text(user)
                os.replace(side, path)
            else:
                with open(path, "w") as handle:  # truncate and write, in place
                    handle.write(user)
        return seen

    monkeypatch.setattr(patch_module, "_look", look)


@pytest.mark.parametrize("how", ["rename", "inplace"])
def test_a_save_right_after_the_last_look_is_put_back(
    write_v: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    path = write_v("P.v", TEXT)
    user = TEXT + "(* saved by the user *)\n"
    _save_after_the_last_look(monkeypatch, path, user, how)
    with pytest.raises(FileChangedError):
        write_atomic(path, "new", TEXT)
    assert path.read_text() == user
    assert [p.name for p in path.parent.iterdir() if "orch-tmp" in p.name] == []


def test_an_in_place_save_that_straddles_the_exchange_lands_in_the_file(
    write_v: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor opened the file and truncated it after the writer's last look; it
    writes after the exchange. Its bytes go to the file that was swapped out, which
    is put back at its name: the save is in the file."""
    path = write_v("P.v", TEXT)
    with open(path, "r+", encoding="utf-8") as editor:
        real_look = patch_module._look
        looks = 0

        def look(at: Path, expected: str) -> object:
            nonlocal looks
            seen = real_look(at, expected)
            looks += 1
            if looks == 2:
                editor.truncate(0)  # the save has started
            return seen

        monkeypatch.setattr(patch_module, "_look", look)
        with pytest.raises(FileChangedError):
            write_atomic(path, "new", TEXT)
        editor.write(TEXT + "(* saved *)\n")  # ... and finishes
    assert path.read_text(encoding="utf-8") == TEXT + "(* saved *)\n"
