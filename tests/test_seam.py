"""The language seam: the registry's rules that no single backend owns."""

from __future__ import annotations

from pathlib import Path

import pytest

from proof_orchestrator.backends import check_imports, project_root
from proof_orchestrator.config import ConfigError


def test_a_folder_s_root_is_the_nearest_project_any_language_describes(tmp_path: Path) -> None:
    """A Lean package inside a Coq project's folder is its own project: the registry asks
    every backend, not the first one registered."""
    (tmp_path / "_CoqProject").write_text("-R . Top\n", encoding="utf-8")
    lean = tmp_path / "lean"
    (lean / "src").mkdir(parents=True)
    (lean / "lakefile.toml").write_text('name = "p"\n', encoding="utf-8")
    assert project_root(tmp_path) == tmp_path.resolve()
    assert project_root(lean / "src") == lean.resolve()
    assert project_root(lean / "src" / "A.lean") == lean.resolve()
    assert project_root(tmp_path / "A.v") == tmp_path.resolve()


def test_a_folder_no_language_describes_is_its_own_root(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    assert project_root(tmp_path / "x") == (tmp_path / "x").resolve()


def test_the_importable_names_are_the_backends_own() -> None:
    """``allow_import`` names what a backend knows (Coq's ``lia``, ``hammer-tactics``);
    the settings do not copy the list."""
    check_imports({"lia", "hammer-tactics"})
    with pytest.raises(
        ConfigError, match=r"unknown import\(s\) mathcomp; known: hammer-tactics, lia"
    ):
        check_imports({"lia", "mathcomp"})
