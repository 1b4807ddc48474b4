"""A Lake project read as Lake reads it, and what is said when its imports are not built.

Lean is not installed here: the model is read from the files, and the message
for an import without ``.olean`` is checked against Lean's own wording. No
recorded REPL transcript (``shared/lean-repl-transcripts``) has that error,
which the first test checks, so the wording is taken from Lean's output as
quoted in its issue tracker (``error: object file './build/lib/SciLean/
Mechanics.olean' of module SciLean.Mechanics does not exist``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from proof_orchestrator.backends import project_builders
from proof_orchestrator.lean.project import LakeBuilder, missing_olean, read_imports
from proof_orchestrator.provers.build import FileBuild

from .transcripts import transcripts

LEAN_MISSING = (
    "examples/HarmonicOscilator.lean:1:0: error: object file "
    "'./build/lib/SciLean/Mechanics.olean' of module SciLean.Mechanics does not exist"
)


def _lake_project(root: Path, lakefile: str, name: str) -> Path:
    (root / name).write_text(lakefile, encoding="utf-8")
    src = root / "Foo"
    src.mkdir(parents=True)
    (root / "Foo.lean").write_text("import Foo.B\nimport Foo.A\n", encoding="utf-8")
    (src / "A.lean").write_text("-- the base\ndef a : Nat := 1\n", encoding="utf-8")
    (src / "B.lean").write_text(
        "/- needs A -/\nimport Foo.A\n\ntheorem b : a = 1 := by\n  sorry\n", encoding="utf-8"
    )
    return root


def test_no_recorded_transcript_has_a_missing_olean_error() -> None:
    replies = [p.read_text(encoding="utf-8") for p in transcripts().rglob("*.expected.out")]
    assert replies
    assert not [r for r in replies if missing_olean(r) is not None]


def test_lakefile_toml_model_in_import_order(tmp_path: Path) -> None:
    root = _lake_project(tmp_path, 'name = "foo"\n[[lean_lib]]\nname = "Foo"\n', "lakefile.toml")
    (builder,) = project_builders(root)
    model = builder.model()
    assert model.kind == "lakefile.toml"
    assert [f.logical for f in model.files] == ["Foo.A", "Foo.B", "Foo"]
    assert {f.state for f in model.files} == {FileBuild.MISSING}
    olean = root / ".lake" / "build" / "lib" / "lean" / "Foo" / "A.olean"
    olean.parent.mkdir(parents=True)
    olean.write_bytes(b"")
    assert next(f.state for f in builder.model().files) is FileBuild.BUILT


def test_lakefile_lean_roots_and_src_dir(tmp_path: Path) -> None:
    lakefile = (
        "import Lake\nopen Lake DSL\n\npackage «foo» where\n  -- settings\n\n"
        "@[default_target]\nlean_lib «Foo» where\n  roots := #[`Foo.A, `Foo.B]\n"
    )
    root = _lake_project(tmp_path, lakefile, "lakefile.lean")
    builder = LakeBuilder(root / "lakefile.lean")
    assert builder.package == "foo"
    assert [lib.roots for lib in builder.libraries] == [("Foo.A", "Foo.B")]
    assert [f.logical for f in builder.model().files] == ["Foo.A", "Foo.B"]


async def test_without_lake_an_unbuilt_import_is_one_line_with_the_olean_and_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no lake
    root = _lake_project(tmp_path, 'name = "foo"\n[[lean_lib]]\nname = "Foo"\n', "lakefile.toml")
    builder = LakeBuilder(root / "lakefile.toml")
    target = root / "Foo" / "B.lean"
    result = await builder.build([target])
    (failure,) = result.failed
    line = failure.one_line(root)
    assert line == (
        "Foo/A.lean: no up-to-date .lake/build/lib/lean/Foo/A.olean for module Foo.A: "
        "run `lake build Foo.A`"
    )
    assert result.failure_for(target) == failure


def test_lean_missing_olean_message_becomes_one_line(tmp_path: Path) -> None:
    root = _lake_project(tmp_path, 'name = "foo"\n', "lakefile.toml")
    builder = LakeBuilder(root / "lakefile.toml")
    assert missing_olean(LEAN_MISSING) == (
        "SciLean.Mechanics",
        "./build/lib/SciLean/Mechanics.olean",
    )
    line = builder.explain(root / "Foo" / "B.lean", LEAN_MISSING + "\nmore errors\n")
    assert line.startswith("Foo/B.lean:1: error: object file ./build/lib/SciLean/Mechanics.olean")
    assert line.endswith(f"run `lake build SciLean.Mechanics` in {root}")
    assert "\n" not in line


def test_imports_stop_at_the_first_command() -> None:
    text = "/- doc -/\nmodule\npublic import A.B C\nimport «D»\n-- x\ndef x := 1\nimport E\n"
    assert read_imports(text) == ["A.B", "C", "D"]
