"""`orch fill --git` with real git in a temporary repository and real Coq."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proof_orchestrator.cli import app

runner = CliRunner()

SOURCE = """\
Module Arith.
Lemma plus_zero : forall n : nat, n + 0 = n.
Proof.
Admitted.

Lemma zero_plus : forall n : nat, 0 + n = n.
Admitted.
End Arith.

Lemma hopeless : forall n : nat, n = S n.
Admitted.
"""


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
    (root / "Nat.v").write_text(SOURCE, encoding="utf-8")
    git(root, "add", ".")
    git(root, "commit", "--quiet", "-m", "start")
    return root


def _state(repo: Path) -> tuple[str, str, str, str, str]:
    return (
        git(repo, "rev-parse", "HEAD"),
        git(repo, "symbolic-ref", "HEAD"),
        git(repo, "status", "--porcelain"),
        git(repo, "diff", "--cached"),
        (repo / "Nat.v").read_text(encoding="utf-8"),
    )


def _fill(repo: Path, *extra: str) -> tuple[int, str, str]:
    """(exit code, stdout, everything printed)."""
    result = runner.invoke(
        app,
        ["fill", str(repo / "Nat.v"), "--git", "--json", "--budget", "3", "--profile", "0", *extra],
        catch_exceptions=False,
    )
    return result.exit_code, result.stdout, result.output


def test_each_proof_gets_a_branch_and_the_users_tree_is_untouched(repo: Path) -> None:
    before = _state(repo)
    code, stdout, output = _fill(repo)
    assert code == 0, output
    assert _state(repo) == before  # HEAD, branch, status, index, file: all unchanged
    # the ledger and PR bodies live in .orch/, which ignores itself (the repo has no .gitignore)
    assert (repo / ".orch" / "ledger.sqlite").exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    report = json.loads(stdout)
    branches = {b["branch"]: b for b in report["branches"]}
    assert set(branches) == {"auto/lem/Nat.Arith/plus_zero", "auto/lem/Nat.Arith/zero_plus"}
    for name, branch in branches.items():
        message = git(repo, "log", "-1", "--format=%B", name)
        lemma = name.rsplit("/", 1)[1]
        assert message.startswith(f"auto: prove {lemma} in Nat.v\n")
        assert "[status] verified" in message
        assert "[metrics] cpu_s=" in message
        assert " tactics=" in message
        assert " strategy=" in message
        # one commit on top of the user's HEAD, touching only Nat.v
        assert git(repo, "rev-parse", f"{name}~1").strip() == before[0].strip()
        assert git(repo, "diff", "--name-only", f"{name}~1", name).split() == ["Nat.v"]
        patched = git(repo, "show", f"{name}:Nat.v")
        assert patched.count("Admitted.") == 2  # only this lemma was filled
        assert "Qed." in patched
        body = Path(branch["pr_body"]).read_text(encoding="utf-8")
        assert "| verification | verified" in body
        assert "proof length" in body
        assert "CPU s" in body
        assert "cache hits | 0" in body
    assert "auto/lem/Nat/hopeless" not in git(repo, "branch", "--list")
    assert git(repo, "worktree", "list").count("\n") == 1  # the temporary worktrees are gone


def test_one_branch_per_run(repo: Path) -> None:
    code, stdout, output = _fill(repo, "--git-per", "run")
    assert code == 0, output
    report = json.loads(stdout)
    (branch,) = report["branches"]
    assert branch["branch"].startswith("auto/run/")
    patched = git(repo, "show", f"{branch['branch']}:Nat.v")
    assert patched.count("Admitted.") == 1  # both provable lemmas, one commit


def test_a_dirty_tree_is_refused_unless_allowed(repo: Path) -> None:
    (repo / "Nat.v").write_text(SOURCE + "\n(* edit *)\n", encoding="utf-8")
    code, _, output = _fill(repo)
    assert code == 2
    assert "uncommitted changes" in " ".join(output.split())
    assert git(repo, "branch", "--list", "auto/*") == ""
    code, stdout, output = _fill(repo, "--allow-dirty")
    assert code == 0, output
    # the proofs were found for the edited text, which is not HEAD's: no branch from it
    assert json.loads(stdout)["branches"] == []
    assert "differs from HEAD" in " ".join(output.split())
    assert (repo / "Nat.v").read_text(encoding="utf-8").endswith("(* edit *)\n")


def test_a_merge_in_progress_is_refused(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    (Path(git(repo, "rev-parse", "--absolute-git-dir").strip()) / "MERGE_HEAD").write_text(head)
    code, _, output = _fill(repo)
    assert code == 2
    assert "in the middle of a merge" in " ".join(output.split())


def test_push_without_a_remote_says_so(repo: Path) -> None:
    code, _, output = _fill(repo, "--push")
    assert code == 0, output
    assert "no git remote" in " ".join(output.split())
