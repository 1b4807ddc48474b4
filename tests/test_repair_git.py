"""`orch repair --git` with real git in a temporary repository and real Coq."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proof_orchestrator.cli import app

from .conftest import coqc_ok
from .test_repair import HOPELESS, RENAMED

#: ``twice`` broken by a rename (repairable), ``one_is_two`` false (stays broken)
SOURCE = RENAMED + HOPELESS[HOPELESS.index("Lemma one_is_two") :]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "--quiet", "-b", "main")
    git(root, "config", "user.name", "Someone")
    git(root, "config", "user.email", "someone@example.org")
    (root / "Renamed.v").write_text(SOURCE, encoding="utf-8")
    git(root, "add", ".")
    git(root, "commit", "--quiet", "-m", "start")
    return root


def _state(repo: Path) -> tuple[str, str, str, str, str]:
    return (
        git(repo, "rev-parse", "HEAD"),
        git(repo, "symbolic-ref", "HEAD"),
        git(repo, "status", "--porcelain", "--untracked-files=all"),
        git(repo, "diff", "--cached"),
        (repo / "Renamed.v").read_text(encoding="utf-8"),
    )


def _repair(repo: Path, *extra: str) -> tuple[int, dict, str]:
    """(exit code, the JSON summary, everything printed)."""
    result = CliRunner().invoke(
        app,
        [
            "repair",
            str(repo / "Renamed.v"),
            "--git",
            "--json",
            "--budget",
            "3",
            "--profile",
            "0",
            *extra,
        ],
        catch_exceptions=False,
    )
    summary = json.loads(result.stdout) if result.exit_code == 0 else {}
    return result.exit_code, summary, result.output


def test_a_files_repairs_go_on_a_branch_with_causes_and_diffs(repo: Path) -> None:
    before = _state(repo)
    code, summary, output = _repair(repo)
    assert code == 0, output
    assert _state(repo) == before  # HEAD, branch, status, index, file: all unchanged
    (branch,) = summary["branches"]
    name = branch["branch"]
    assert name == "auto/repair/file/Renamed"
    assert branch["repaired"] == ["twice"]
    # one commit on top of the user's HEAD, touching only Renamed.v
    assert git(repo, "rev-parse", f"{name}~1") == before[0]
    assert git(repo, "diff", "--name-only", f"{name}~1", name).split() == ["Renamed.v"]
    patched = git(repo, "show", f"{name}:Renamed.v")
    assert "plus_zero_r" not in patched
    assert "Proof. reflexivity. Qed.\nLemma after" in patched  # the hopeless one as it was
    assert patched.startswith(SOURCE[: SOURCE.index("Proof. intros k.")])
    checked = repo.parent / "check" / "Renamed.v"
    checked.parent.mkdir()
    # the branch compiles once the still-broken proof is admitted (it is false)
    checked.write_text(
        patched.replace("Proof. reflexivity. Qed.\nLemma after", "Admitted.\nLemma after")
    )
    assert coqc_ok(checked)
    message = git(repo, "log", "-1", "--format=%B", name)
    assert message.startswith("auto: repair twice in Renamed.v\n")
    assert "twice (Renamed.v:5): unknown_reference at `rewrite plus_zero_r.`" in message
    assert "-rewrite plus_zero_r." in message
    assert "still broken: one_is_two" in message
    body = Path(branch["pr_body"]).read_text(encoding="utf-8")
    assert "### `twice` (Renamed.v:5)" in body
    assert "- cause: unknown_reference at `rewrite plus_zero_r.`" in body
    assert "The reference plus_zero_r was not found" in body
    diff = body.split("```diff\n", 1)[1].split("```", 1)[0]
    assert " intros k.\n" in diff
    assert "-rewrite plus_zero_r.\n" in diff
    assert "+rewrite plus_n_zero." in diff or "plus_n_zero" in diff.split("+++", 1)[1]
    assert "### Still broken\n\n- `one_is_two` (Renamed.v:7)" in body
    assert git(repo, "worktree", "list").count("\n") == 1  # the temporary worktree is gone


def test_a_branch_per_proof(repo: Path) -> None:
    (repo / "Renamed.v").write_text(RENAMED, encoding="utf-8")  # the repairable proof alone
    git(repo, "commit", "--quiet", "-am", "only the rename")
    code, summary, output = _repair(repo, "--git-per", "proof")
    assert code == 0, output
    assert [b["branch"] for b in summary["branches"]] == ["auto/repair/lem/Renamed/twice"]


def test_a_dirty_tree_is_refused_unless_allowed(repo: Path) -> None:
    (repo / "Renamed.v").write_text(SOURCE + "\n(* edit *)\n", encoding="utf-8")
    code, _, output = _repair(repo)
    assert code == 2
    assert "uncommitted changes" in " ".join(output.split())
    assert git(repo, "branch", "--list", "auto/*") == ""
