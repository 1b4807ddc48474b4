"""Dune projects read as dune reads them (real coqc, coqdep, and dune where it is).

Each project is made as its authors keep it: ``dune-project``, ``dune`` files
with ``coq.theory`` stanzas, nothing compiled, in a git repository. ``orch
fill`` on it must build what the hole needs and prove it; with dune on the
``PATH``, a copy built by ``dune build`` must come out the same.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.coq.build import CoqBuilder
from proof_orchestrator.coq.dune import NO_NATIVE, dune_theories
from proof_orchestrator.coq.project import project_for

runner = CliRunner()

DUNE = shutil.which("dune")
#: why a comparison with dune's own build or answer is skipped (what comes before it ran)
NO_DUNE = "dune is not on PATH (scripts/install-provers.sh installs it): no dune result to compare"

#: a library file: a lemma proved by induction, given to ``auto`` as a hint
DOUBLE = """Fixpoint double (n : nat) : nat := match n with 0 => 0 | S k => S (S (double k)) end.
Lemma double_plus : forall n, double n = n + n.
Proof. induction n; simpl; auto. rewrite IHn, <- plus_n_Sm. reflexivity. Qed.
#[export] Hint Resolve double_plus : core.
"""
#: a file with one hole that only the imported hint closes, inside a section
USE = """{require}
Section Uses.
Variable m : nat.
Lemma use_double : double m = m + m.
Proof.
Admitted.
End Uses.
"""
#: a functor over a module type, as a plain-Coq library keeps them
FUNCTOR = """Module Type T. Parameter t : nat. End T.
Module Make (X : T). Definition twice := X.t + X.t. End Make.
"""
SHORT = "Require Import Double.\nRequire Import Functor."


def _git(root: Path, *args: str) -> str:
    run = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return run.stdout


def _make(root: Path, files: dict[str, str]) -> Path:
    """A committed project of ``files`` (paths relative to ``root``)."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "as published")
    return root


def _fill(root: Path) -> tuple[int, str]:
    result = runner.invoke(
        app, ["fill", str(root), "--profile", "0", "--budget", "5", "--budget-cap", "5"]
    )
    return result.exit_code, result.output


def _dune_build(root: Path) -> None:
    assert DUNE is not None
    run = subprocess.run([DUNE, "build"], cwd=root, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr


def _filled_the_same_as_a_dune_built_copy(root: Path, tmp_path: Path, hole: str) -> None:
    """``orch fill`` on the unbuilt project proves the hole in ``hole`` and writes only
    that file; on a copy built by ``dune build`` first, it proves the same."""
    copy = tmp_path / "built"
    shutil.copytree(root, copy)
    code, output = _fill(root)
    assert code == 0, output
    assert "1/1 holes proved and verified" in output
    filled = (root / hole).read_text(encoding="utf-8")
    assert "Qed." in filled
    assert "Admitted." not in filled
    # nothing but the proof: no .vo beside the sources, no _build, dune-project as it was
    assert _git(root, "status", "--porcelain", "--untracked-files=all") == f" M {hole}\n"
    if DUNE is None:
        pytest.skip(NO_DUNE)
    _dune_build(copy)
    code, output = _fill(copy)
    assert code == 0, output
    assert "1/1 holes proved and verified" in output
    assert (copy / hole).read_text(encoding="utf-8") == filled


def test_files_that_require_each_other_by_short_names(tmp_path: Path) -> None:
    root = _make(
        tmp_path / "short",
        {
            "dune-project": "(lang dune 2.9)\n(using coq 0.3)\n",
            "src/dune": "(coq.theory\n (name Lib)\n (flags :standard -w -notation-overridden))\n",
            "src/Double.v": DOUBLE,
            "src/Functor.v": FUNCTOR,
            "src/Use.v": USE.format(require=SHORT),
        },
    )
    _filled_the_same_as_a_dune_built_copy(root, tmp_path, "src/Use.v")


def test_files_that_require_each_other_by_full_names(tmp_path: Path) -> None:
    root = _make(
        tmp_path / "full",
        {
            "dune-project": "(lang dune 2.9)\n(using coq 0.3)\n",
            "theories/dune": "(coq.theory (name Lib))\n",
            "theories/Double.v": DOUBLE,
            "theories/Use.v": USE.format(require="From Lib Require Import Double."),
        },
    )
    _filled_the_same_as_a_dune_built_copy(root, tmp_path, "theories/Use.v")


def test_a_theory_that_needs_another_by_its_theories_field(tmp_path: Path) -> None:
    # both theories have a Util.v: Top's short name means Top's own (Base's is -Q)
    root = _make(
        tmp_path / "two",
        {
            "dune-project": "(lang dune 2.9)\n(using coq 0.3)\n",
            "base/dune": "(coq.theory (name Base))\n",
            "base/Double.v": DOUBLE,
            "base/Util.v": "Definition util := true.\n",
            "top/dune": "(coq.theory (name Top) (theories Base))\n",
            "top/Util.v": "Definition util := 0.\n",
            "top/Use.v": USE.format(
                require="From Base Require Import Double.\nRequire Import Util.\n"
                "Lemma util_nat : util = 0. Proof. reflexivity. Qed."
            ),
        },
    )
    project = project_for(root / "top" / "Use.v")
    base, top = (root / "base").resolve(), (root / "top").resolve()
    assert project.flags_for(top / "Use.v")[-6:] == ("-Q", str(base), "Base", "-R", str(top), "Top")
    assert project.flags_for(base / "Util.v")[-3:] == ("-R", str(base), "Base")
    _filled_the_same_as_a_dune_built_copy(root, tmp_path, "top/Use.v")


def test_qualified_subfolders_and_a_dotted_theory_name(tmp_path: Path) -> None:
    root = _make(
        tmp_path / "qualified",
        {
            "dune-project": "(lang dune 2.9)\n(using coq 0.3)\n",
            "src/dune": "(include_subdirs qualified)\n(coq.theory (name My.Lib))\n",
            "src/arith/Double.v": DOUBLE,
            "src/Use.v": USE.format(require="Require Import arith.Double."),
        },
    )
    model = CoqBuilder(project_for(root)).model()
    assert sorted(f.logical for f in model.files) == ["My.Lib.Use", "My.Lib.arith.Double"]
    _filled_the_same_as_a_dune_built_copy(root, tmp_path, "src/Use.v")


def test_the_flags_of_each_theory_are_dunes_own(tmp_path: Path) -> None:
    """The rules orch falls back on give what dune answers, theory by theory: the stanza's
    flags (``:standard`` is ``-q``), no native code, ``-Q`` for what a theory needs (also
    what that needs), ``-R`` for itself; ``(modules ...)`` leaves files out."""
    root = _make(
        tmp_path / "three",
        {
            "dune-project": "(lang dune 2.9)\n(using coq 0.3)\n",
            "a/dune": "(coq.theory (name A) (flags -w -notation-overridden) (modules One))\n",
            "a/One.v": "Definition one := 1.\n",
            "a/Left.v": "Definition left := 1.\n",
            "b/dune": "(coq.theory (name B) (theories A))\n",
            "b/Two.v": "From A Require Import One.\nDefinition two := one + one.\n",
            "c/dune": "(coq.theory (name C) (theories B) (flags :standard -w -deprecated))\n",
            "c/Three.v": "From B Require Import Two.\nDefinition three := two + 1.\n",
        },
    )
    a, b, c = ((root / x).resolve() for x in "abc")
    table = {t.name: t for t in dune_theories(root / "dune-project", ask=False)}
    assert table["A"].flags == ("-w", "-notation-overridden", *NO_NATIVE, "-R", str(a), "A")
    assert table["A"].files == (a / "One.v",)
    assert table["B"].flags == ("-q", *NO_NATIVE, "-Q", str(a), "A", "-R", str(b), "B")
    assert table["C"].flags == (
        *("-q", "-w", "-deprecated", *NO_NATIVE),
        *("-Q", str(a), "A", "-Q", str(b), "B", "-R", str(c), "C"),
    )
    if DUNE is None:
        pytest.skip(NO_DUNE)
    asked = dune_theories(root / "dune-project")
    assert [t.origin for t in asked] == ["dune rules"] * 3
    assert {t.name: t.flags for t in asked} == {n: t.flags for n, t in table.items()}
    # asking dune wrote nothing into the project
    assert _git(root, "status", "--porcelain", "--untracked-files=all", "--ignored") == ""


def test_a_dune_project_without_its_coq_version_is_read_without_asking_dune(
    tmp_path: Path,
) -> None:
    # dune would append (using coq X) to the dune-project: orch does not run it there
    root = _make(
        tmp_path / "unversioned",
        {
            "dune-project": "(lang dune 2.9)\n",
            "src/dune": "(coq.theory (name Lib))\n",
            "src/Double.v": DOUBLE,
        },
    )
    (theory,) = dune_theories(root / "dune-project")
    assert theory.origin == "the rules of (using coq missing)"
    assert theory.flags[-3:] == ("-R", str((root / "src").resolve()), "Lib")
    assert (root / "dune-project").read_text(encoding="utf-8") == "(lang dune 2.9)\n"


def test_info_shows_each_theorys_flags(tmp_path: Path) -> None:
    root = _make(
        tmp_path / "info",
        {
            "dune-project": "(lang dune 2.9)\n(using coq 0.3)\n",
            "src/dune": "(coq.theory (name Lib))\n",
            "src/Double.v": DOUBLE,
        },
    )
    result = runner.invoke(app, ["info", str(root), "--json"])
    assert result.exit_code == 0, result.output
    assert '"for": "theory Lib (' in result.output
    assert '"-R"' in result.output
