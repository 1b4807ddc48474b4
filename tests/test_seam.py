"""The language seam: the registry's rules that no single backend owns."""

from __future__ import annotations

from pathlib import Path

import pytest

from proof_orchestrator.backends import backend_named, check_imports, project_root
from proof_orchestrator.config import ConfigError
from proof_orchestrator.workflows.evaluate import EvalError, evaluate


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


def test_an_ability_a_language_lacks_is_none_not_a_string_lookup() -> None:
    """The optional abilities are typed methods: Lean has no golf and no eval peers, Coq
    reads no blueprint declarations; both have an agent side and a repair side."""
    coq, lean = backend_named("coq"), backend_named("lean")
    assert lean.golf() is None
    assert lean.evaluation() is None
    assert coq.declarations([]) is None
    assert coq.golf() is not None
    evaluation = coq.evaluation()
    assert evaluation is not None
    assert "hammer" in evaluation.baselines
    assert lean.declarations([]) == {}
    for backend in (coq, lean):
        assert backend.agent() is not None
        assert backend.repair() is not None


async def test_orch_eval_names_the_language_it_cannot_evaluate(tmp_path: Path) -> None:
    path = tmp_path / "A.lean"
    path.write_text("theorem t : True := by trivial\n", encoding="utf-8")
    with pytest.raises(EvalError, match="no peers to run for lean files"):
        await evaluate([path], budget=1)
