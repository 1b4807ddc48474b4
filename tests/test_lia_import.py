"""``lia`` where the file does not load Lia: real coqtop and coqc, through ``orch fill``."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.coq.strategies.micro import LIA_IMPORT

from .conftest import coqc_ok

#: integers without Lia (as in OmegaLemmas): only ``lia`` among micro's tactics proves it
NO_LIA = """\
Require Import BinInt Znat.
Open Scope Z_scope.
Lemma linear : forall x y : Z, 3 * x + 2 * y = 7 -> x <= 1 -> y >= 2.
Admitted.
Lemma later : forall x : Z, x + 0 = x.
Proof. intros; apply Z.add_0_r. Qed.
"""


def _fill(path: Path, *extra: str) -> str:
    result = CliRunner().invoke(app, ["fill", str(path), "--profile", "0", "--json", *extra])
    assert result.exit_code in (0, 1), result.output
    return path.read_text(encoding="utf-8")


def test_lia_is_used_with_its_import_by_default(tmp_path: Path) -> None:
    path = tmp_path / "NoLia.v"
    path.write_text(NO_LIA, encoding="utf-8")
    written = _fill(path)
    assert "Admitted." not in written
    # the import goes once, right after the file's last Require, and the file compiles
    assert written.startswith(f"Require Import BinInt Znat.\n{LIA_IMPORT}\nOpen Scope Z_scope.")
    assert written.count(LIA_IMPORT) == 1
    assert "lia." in written
    assert coqc_ok(path)


def test_without_the_permission_no_import_is_added(tmp_path: Path) -> None:
    path = tmp_path / "NoLia.v"
    path.write_text(NO_LIA, encoding="utf-8")
    written = _fill(path, "--allow-import", "")
    assert written == NO_LIA


def test_a_file_that_loads_lia_gets_no_second_import(tmp_path: Path) -> None:
    path = tmp_path / "WithLia.v"
    text = NO_LIA.replace("Require Import BinInt Znat.", "Require Import BinInt Znat Lia.")
    path.write_text(text, encoding="utf-8")
    written = _fill(path)
    assert "Admitted." not in written
    assert LIA_IMPORT not in written
    assert coqc_ok(path)
