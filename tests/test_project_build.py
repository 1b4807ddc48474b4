"""A project as its build tool reads it, built before the search (real coqc and coqdep).

The projects here are made as their authors keep them: ``theories/`` and a
``_CoqProject`` (or dune files), nothing compiled, in a git repository.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.coq.backend import CoqBackend
from proof_orchestrator.coq.build import CoqBuilder
from proof_orchestrator.coq.build_output import first_error
from proof_orchestrator.coq.dune import NO_NATIVE
from proof_orchestrator.coq.holes import scan_coq_text
from proof_orchestrator.coq.project import project_for
from proof_orchestrator.coq.verify import CoqVerifier
from proof_orchestrator.errors import ProverError
from proof_orchestrator.provers.base import Verdict
from proof_orchestrator.provers.build import FileBuild
from proof_orchestrator.run.reports import FillOptions
from proof_orchestrator.run.toolbox import tool_settings

runner = CliRunner()

A = "Definition a := 1.\nLemma a1 : a = 1. Proof. reflexivity. Qed.\n"
B = "From Lib Require Import A.\nDefinition b := a + 1.\n"
C = "From Lib Require Import A B.\nLemma c1 : b = 2.\nProof.\nAdmitted.\n"

#: two lines; the second one draws a notation-overridden warning from coqc
NOISY = 'Notation "x ++ y" := (x + y).\nNotation "x ++ y" := (x * y).\n'

Project = Callable[[dict[str, str]], Path]


def _git(root: Path, *args: str) -> str:
    run = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return run.stdout


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """A committed project: ``-R theories Lib`` and the given ``theories/`` files."""

    def make(files: dict[str, str]) -> Path:
        root = tmp_path / "lib"
        (root / "theories").mkdir(parents=True)
        for name, text in files.items():
            (root / "theories" / name).write_text(text, encoding="utf-8")
        listing = "\n".join(f"theories/{name}" for name in files)
        (root / "_CoqProject").write_text(f"-R theories Lib\n{listing}\n", encoding="utf-8")
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "as published")
        return root

    return make


def _fill(root: Path, *extra: str) -> tuple[int, str]:
    result = runner.invoke(
        app, ["fill", str(root), "--profile", "0", "--budget", "5", "--budget-cap", "5", *extra]
    )
    return result.exit_code, result.output


def test_fill_builds_what_the_hole_needs_into_orch_build_and_writes_only_the_proof(
    project: Project,
) -> None:
    root = project({"A.v": A, "B.v": B, "C.v": C})
    code, output = _fill(root)
    assert code == 0, output
    assert "1/1 holes proved and verified" in output
    built = root / ".orch" / "build" / "theories"
    assert (built / "A.vo").is_file()
    assert (built / "B.vo").is_file()
    assert "Qed." in (root / "theories" / "C.v").read_text(encoding="utf-8")
    # the proof is the only change: no .vo, .glob or anything else beside the sources
    assert _git(root, "status", "--porcelain", "--untracked-files=all") == " M theories/C.v\n"
    assert sorted(p.name for p in (root / "theories").iterdir()) == ["A.v", "B.v", "C.v"]


def test_a_file_that_cannot_be_built_is_one_line_and_the_independent_file_is_filled(
    project: Project,
) -> None:
    noisy = NOISY + 'Notation "x ++ y" := (x - y).\n'  # warnings before the error
    broken = f"{noisy}Definition a := 1.\nLemma a1 : a = 1. Proof. exact eq_refl Qed.\n"
    alone = "Lemma d1 : 2 = 2.\nProof.\nAdmitted.\n"
    root = project({"A.v": broken, "B.v": B, "C.v": C, "D.v": alone})
    code, output = _fill(root)
    assert code == 3, output
    lines = [line for line in output.splitlines() if "theories/A.v:5:" in line]
    assert lines, output
    assert "Syntax error" in lines[0]
    assert "Warning" not in output
    assert "notation-overridden" not in output
    assert "Qed." in (root / "theories" / "D.v").read_text(encoding="utf-8")
    assert "Admitted." in (root / "theories" / "C.v").read_text(encoding="utf-8")
    assert output.rstrip().splitlines()[-1].startswith("next: 1 file(s) could not be built")
    assert "fix theories/A.v:5" in output


def test_the_goals_counted_are_those_searched(project: Project) -> None:
    """The bar's total leaves out the goals of files that could not be checked."""
    import asyncio

    from proof_orchestrator.ledger import Ledger
    from proof_orchestrator.run.pipeline import FillOptions, fill

    root = project({"A.v": "Definition a := .\n", "B.v": B, "C.v": C})
    (root / "theories" / "D.v").write_text("Lemma d1 : 2 = 2.\nProof.\nAdmitted.\n")
    seen: list[list[tuple[Path, int]]] = []
    ledger = Ledger(f"sqlite:///{root / 'ledger.sqlite'}")
    try:
        report = asyncio.run(
            fill(
                [root / "theories" / "C.v", root / "theories" / "D.v"],
                ledger,
                FillOptions(dry_run=True),
                on_files=seen.append,
            )
        )
    finally:
        ledger.close()
    assert seen == [[((root / "theories" / "D.v").resolve(), 1)]]
    assert [f.status.value for f in report.unchecked] == ["not_built"]
    assert report.build_failures[0].startswith("theories/A.v:1: ")


def test_info_lists_files_in_dependency_order_with_their_state(project: Project) -> None:
    root = project({"C.v": C, "B.v": B, "A.v": A})
    result = runner.invoke(app, ["info", str(root), "--json"])
    assert result.exit_code == 0, result.output
    import json

    (model,) = json.loads(result.output)
    assert [f["path"] for f in model["files"]] == ["theories/A.v", "theories/B.v", "theories/C.v"]
    assert {f["state"] for f in model["files"]} == {"not built"}
    assert [f["holes"] for f in model["files"]] == [0, 0, 1]
    assert model["names"] == [{"logical": "Lib", "folder": str(root / "theories")}]
    code, output = _fill(root, "--dry-run")
    assert code == 0, output
    assert output.index("theories/A.v") < output.index("theories/B.v") < output.index("C.v")
    states = runner.invoke(app, ["info", str(root), "--json"]).output
    assert [f["state"] for f in json.loads(states)[0]["files"]] == ["built", "built", "not built"]


async def test_an_up_to_date_build_is_reused_and_a_change_rebuilds_its_dependents(
    project: Project,
) -> None:
    root = project({"A.v": A, "B.v": B, "C.v": C})
    target = root / "theories" / "C.v"
    first = await CoqBuilder(project_for(root)).build([target])
    assert [p.name for p in first.built] == ["A.v", "B.v"]
    assert not first.failed
    builder = CoqBuilder(project_for(root))
    again = await builder.build([target])
    assert again.built == []
    assert [p.name for p in again.reused] == ["A.v", "B.v"]
    # a proof written into A (a new text): A is stale, and B, built against A, with it
    (root / "theories" / "A.v").write_text(A + "Lemma a2 : a = 1. Proof. reflexivity. Qed.\n")
    model = builder.model()
    assert [f.state for f in model.files] == [FileBuild.STALE, FileBuild.STALE, FileBuild.MISSING]
    async with builder.checking(target):
        pass
    assert [f.state for f in builder.model().files][:2] == [FileBuild.BUILT, FileBuild.BUILT]
    # C loads A and B as rebuilt: no "inconsistent assumptions"
    run = subprocess.run(
        ["coqc", *builder.flags, "-o", str(root / ".orch" / "C.vo"), str(target)],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


async def test_two_jobs_compile_independent_files_together_and_a_dependent_after_them(
    project: Project,
) -> None:
    """At two jobs (the CPU target 1.0 on two cores) A and B, which need nothing of each
    other, are compiled at once; D, which requires both, only once both are built, and a
    file that failed leaves its dependents unbuilt."""
    d = "From Lib Require Import A B2.\nLemma d1 : a + b = 3. Proof. reflexivity. Qed.\n"
    b2 = "Definition b := 2.\n"
    e = "From Lib Require Import D.\nLemma e1 : a = 1.\nProof.\nAdmitted.\n"
    root = project({"A.v": A, "B2.v": b2, "D.v": d, "E.v": e})
    steps: list[tuple[str, bool]] = []
    builder = CoqBuilder(project_for(root), jobs=2)
    result = await builder.build(
        [root / "theories" / "E.v"], lambda step: steps.append((step.path.name, step.done))
    )
    assert not result.failed
    assert sorted(p.name for p in result.built) == ["A.v", "B2.v", "D.v"]
    # both started before either ended; D started after both ended
    assert sorted(steps[:2]) == [("A.v", False), ("B2.v", False)]
    assert steps.index(("D.v", False)) > max(
        steps.index(("A.v", True)), steps.index(("B2.v", True))
    )
    assert tool_settings(FillOptions()).build_jobs >= 1
    broken = project_for(root)
    (root / "theories" / "A.v").write_text("Lemma oops : 1 = 2. Proof. reflexivity. Qed.\n")
    again = await CoqBuilder(broken, jobs=2).build([root / "theories" / "E.v"])
    assert [f.path.name for f in again.failed] == ["A.v"]
    assert again.built == []  # B2 is up to date; D is not compiled against a broken A
    assert {p.name for p in again.blocked} >= {"D.v", "E.v"}


async def test_the_users_own_up_to_date_vo_is_reused(project: Project) -> None:
    root = project({"A.v": A, "B.v": B, "C.v": C})
    for name in ("A.v", "B.v"):
        subprocess.run(["coqc", "-R", "theories", "Lib", f"theories/{name}"], cwd=root, check=True)
    result = await CoqBuilder(project_for(root)).build([root / "theories" / "C.v"])
    assert result.built == []
    assert len(result.reused) == 2
    assert not (root / ".orch" / "build" / "theories" / "A.vo").exists()


def test_a_users_build_command_builds_instead(project: Project) -> None:
    root = project({"A.v": A, "B.v": B, "C.v": C})
    command = "coqc -R theories Lib theories/A.v && coqc -R theories Lib theories/B.v"
    code, output = _fill(root, "--build", command)
    assert code == 0, output
    assert (root / "theories" / "B.vo").is_file()
    assert not (root / ".orch" / "build" / "theories" / "B.vo").exists()


def test_first_error_skips_warnings(tmp_path: Path) -> None:
    source = tmp_path / "w.v"
    source.write_text(NOISY + "Lemma z : 1 = 1.\nProof. exact. Qed.\n")
    run = subprocess.run(["coqc", str(source)], capture_output=True, text=True, cwd=tmp_path)
    output = run.stdout + run.stderr
    assert "Warning" in output
    error = first_error(output)
    assert (Path(error.file or "").name, error.line) == ("w.v", 4)
    assert "\n" not in error.message
    assert not error.message.startswith("Warning")


def test_dune_theories_are_read_as_their_flags(tmp_path: Path) -> None:
    (tmp_path / "dune-project").write_text("(lang dune 3.8)\n(using coq 0.8)\n")
    theories = tmp_path / "theories"
    (theories / "sub").mkdir(parents=True)
    (theories / "dune").write_text(
        "; the library\n(include_subdirs qualified)\n"
        "(coq.theory\n (name Foo)\n (package foo)\n (flags :standard -w -notation-overridden))\n"
    )
    (theories / "A.v").write_text(A)
    (theories / "sub" / "B.v").write_text("From Foo Require Import A.\nDefinition b := a.\n")
    project = project_for(theories / "A.v")
    assert project.kind == "dune"
    # dune 2.9.3 cannot read (lang dune 3.8): the rules of (using coq 0.8) stand in
    standard = ("-q", "-w", "-notation-overridden", *NO_NATIVE)
    assert project.flags == ("-R", str(theories), "Foo", *standard)
    assert project.flags_for(theories / "A.v") == (*standard, "-R", str(theories), "Foo")
    assert project.files == (theories / "A.v", theories / "sub" / "B.v")
    model = CoqBuilder(project).model()
    assert [f.logical for f in model.files] == ["Foo.A", "Foo.sub.B"]
    assert model.files[1].deps == (theories / "A.v",)


def test_a_check_that_fails_is_that_files_one_line_and_the_other_files_go_on(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the prover failing on a check (here on C.v: a compiled file it loads cannot be
    # read, say) stops that file only; the run reports it and exits 3
    real_verify = CoqVerifier.verify

    async def verify(self: CoqVerifier, path: Path, *args: Any, **kwargs: Any) -> Any:
        if path.name == "C.v":
            raise ProverError("cannot load the compiled OrchCheck.C: inconsistent assumptions")
        return await real_verify(self, path, *args, **kwargs)

    monkeypatch.setattr(CoqVerifier, "verify", verify)
    alone = "Lemma d1 : 2 = 2.\nProof.\nAdmitted.\n"
    root = project({"A.v": A, "B.v": B, "C.v": C, "D.v": alone})
    code, output = _fill(root)
    assert code == 3, output
    assert "Traceback" not in output
    assert "Qed." in (root / "theories" / "D.v").read_text(encoding="utf-8")
    assert "Admitted." in (root / "theories" / "C.v").read_text(encoding="utf-8")
    assert "the whole-file check failed: cannot load the compiled OrchCheck.C" in output
    assert output.rstrip().splitlines()[-1].startswith("next: 1 file(s) could not be checked")


async def test_a_file_checked_after_a_proof_was_written_into_a_file_it_requires(
    project: Project,
) -> None:
    # C.v is compiled (the run's first check) against Lib.A as published; once A.v
    # gets its proof and A.vo is rebuilt, C.v's check compiles C.v again rather than
    # load what was compiled then ("makes inconsistent assumptions over library Lib.A")
    a_hole = "Definition a := 1.\nLemma a1 : a = 1.\nProof.\nAdmitted.\n"
    root = project({"A.v": a_hole, "B.v": B, "C.v": C})
    a_path, c_path = root / "theories" / "A.v", root / "theories" / "C.v"
    tools = CoqBackend().tools(c_path, tool_settings(FillOptions()))
    try:
        await tools.builder.build([a_path, c_path])
        c_text = c_path.read_text(encoding="utf-8")
        compiles, output = await tools.verifier.compiles(c_path, c_text)
        assert compiles, output
        a_path.write_text(a_hole.replace("Admitted.", "reflexivity. Qed."), encoding="utf-8")
        (hole,) = scan_coq_text(c_path, c_text)
        patched = c_text.replace("Admitted.", "reflexivity. Qed.")
        async with tools.builder.checking(c_path):
            result = await tools.verifier.verify(c_path, c_text, patched, [hole.goal])
        assert result.verdict is Verdict.ACCEPTED, result.detail
        # A, and B between A and C, compiled again; counted for the run's report
        assert tools.builder.rebuilt_files == 2
        assert tools.builder.rebuild_cpu_seconds > 0
    finally:
        await tools.aclose()


async def test_a_session_loads_what_its_file_requires_as_rebuilt_after_a_write(
    project: Project,
) -> None:
    """A check of B after a proof was written into A rebuilds A only (B is the checked
    file): C.vo, compiled against the old A.vo, would then not load in D's session
    ("makes inconsistent assumptions over library Lib.A"). The session rebuilds what
    D requires first."""
    a_hole = "Definition a := 1.\nLemma a1 : a = 1.\nProof.\nAdmitted.\n"
    c_file = "From Lib Require Import A B.\nDefinition c := b + 1.\n"
    d_file = "From Lib Require Import A B C.\nLemma d1 : c = 3.\nProof.\nAdmitted.\n"
    root = project({"A.v": a_hole, "B.v": B, "C.v": c_file, "D.v": d_file})
    a_path, b_path, d_path = (root / "theories" / n for n in ("A.v", "B.v", "D.v"))
    tools = CoqBackend().tools(d_path, tool_settings(FillOptions()))
    try:
        await tools.builder.build([d_path])
        a_path.write_text(a_hole.replace("Admitted.", "reflexivity. Qed."), encoding="utf-8")
        async with tools.builder.checking(b_path):
            pass
        assert tools.builder.rebuilt_files == 1  # A only
        (hole,) = scan_coq_text(d_path, d_file)
        async with tools.open_session(hole, d_file) as session:
            step = await session.run_tactic("reflexivity.", session.root, timeout=5)
        assert step.ok, step.message
        assert tools.builder.rebuilt_files == 3  # then B and C, before D's session loaded
    finally:
        await tools.aclose()


def test_a_process_holding_libraries_of_an_older_build_is_not_given_a_new_require() -> None:
    """Coq keeps a library loaded past a ``BackTo``: a process that loaded Lib.A before
    A.vo was rebuilt cannot require a file compiled against the new A.vo."""
    from proof_orchestrator.coq.pool import _Loaded

    held = _Loaded(base=1, codes=["From Lib Require Import A B."], states=[2], generation=1)
    same_file = ["From Lib Require Import A B.", "Lemma x : True."]
    other_file = ["From Lib Require Import A B C.", "Lemma y : True."]
    assert not held.stale(other_file, 1)  # nothing was rebuilt since it loaded
    assert held.stale(other_file, 2)
    assert not held.stale(same_file, 2)  # it requires nothing new: BackTo and go on
    assert not _Loaded(base=1, codes=[], states=[]).stale(other_file, 2)  # no library held
