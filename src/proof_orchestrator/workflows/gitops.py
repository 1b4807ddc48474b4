"""``orch fill --git``: hand verified proofs over as branches, never touching the user's tree.

For each verified proof (or once per run with ``--git-per run``) a branch
``auto/lem/<namespace>/<decl>`` is made from the current ``HEAD`` in a
separate ``git worktree``, with one commit whose message carries the facts::

    auto: prove nat_add_comm in theories/Nat.v

    [status] verified
    [metrics] cpu_s=0.41 tactics=12 strategy=induction
    [prover] 8.16.1

and a pull-request body is written from a template (verification status,
proof length, compute used, cache hits). The user's working tree, index and
current branch are never changed: the proof is applied to the file as it is
at ``HEAD`` inside the worktree, which is removed afterwards (the branch
stays). With ``--push`` the branch is pushed and, when the GitHub CLI is
installed, a pull request is opened.

``orch repair --git`` (:func:`publish_repairs`) does the same with repairs of
broken proofs: a branch per file (``auto/repair/file/<namespace>``), per
proof or per run, whose commit message and pull-request body list every
repair: the lemma, the cause (the kind of break, the sentence where the
prover stopped, its error) and the diff of the proof, old script against
new; the proofs that stay broken are listed too.
"""

from __future__ import annotations

import difflib
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import OrchError
from ..goals import Outcome
from ..project.patch import Patch, apply_patches
from ..project.statedir import make_state_dir
from ..provers.process import FinishedRun, run_sync
from ..run.reports import LEDGER_REPLAY, FillReport, GoalReport

if TYPE_CHECKING:
    from .repair import BrokenGoalReport, FileRepairs, RepairReport

__all__ = [
    "GitError",
    "GitRepo",
    "ProofBranch",
    "branch_name",
    "commit_message",
    "pr_body",
    "proof_diff",
    "publish",
    "publish_repairs",
    "repair_commit_message",
    "repair_pr_body",
]

PR_TEMPLATE = """\
## {title}

Proof found and checked by `orch` ({prover}).

| | |
|---|---|
| verification | {status}: the whole file recompiles and the axiom audit found nothing new |
| lemmas | {lemmas} |
| proof length | {sentences} sentences, {characters} characters |
| compute | {cpu:.2f} CPU s, {tactics} tactics tried |
| strategies | {strategies} |
| cache hits | {cache_hits} (proofs replayed from the ledger, not searched) |

{details}
"""


REPAIR_PR_TEMPLATE = """\
## {title}

Broken proofs repaired by `orch repair` ({prover}). No statement was changed.

| | |
|---|---|
| verification | {status}: the whole file recompiles and the axiom audit found nothing new |
| repaired | {repaired} proof(s) |
| still broken | {still} proof(s) |
| compute | {cpu:.2f} CPU s |
| strategies | {strategies} |

{details}
"""


class GitError(OrchError):
    """The repository is not in a state where branches can be made safely."""


@dataclass(frozen=True, slots=True)
class ProofBranch:
    branch: str
    commit: str
    pr_body: Path
    goals: tuple[str, ...]
    pushed: bool = False
    pr_url: str = ""


def _ref_part(text: str) -> str:
    """A piece of a branch name: letters, digits, ``_ - .``; nothing git refuses."""
    cleaned = re.sub(r"[^A-Za-z0-9_.\-]+", "-", text).strip("-.") or "x"
    return cleaned.replace("..", ".")


def branch_name(report: GoalReport) -> str:
    """``auto/lem/<namespace>/<decl>``: the namespace is the file's stem and its modules."""
    goal = report.goal
    modules = [name for kind, name in goal.scope if kind == "module"]
    namespace = ".".join([goal.file.stem, *modules])
    return f"auto/lem/{_ref_part(namespace)}/{_ref_part(goal.name)}"


def commit_message(reports: Sequence[GoalReport], prover: str, relative: Path) -> str:
    names = ", ".join(r.goal.name for r in reports)
    title = f"auto: prove {names} in {relative}"
    cpu = sum(r.cpu_seconds for r in reports)
    tactics = sum(r.tactics_tried for r in reports)
    strategies = ",".join(sorted({r.strategy for r in reports}))
    return (
        f"{title}\n\n[status] verified\n"
        f"[metrics] cpu_s={cpu:.2f} tactics={tactics} strategy={strategies}\n"
        f"[prover] {prover}\n"
    )


def pr_body(reports: Sequence[GoalReport], prover: str, title: str) -> str:
    sentences = sum(len(r.sentences) for r in reports)
    characters = sum(len(" ".join(r.sentences)) for r in reports)
    details = "\n".join(
        f"- `{r.goal.name}` ({r.goal.file.name}:{r.goal.line}), {r.strategy}:\n"
        f"  ```\n  {' '.join(r.sentences)}\n  ```"
        for r in reports
    )
    return PR_TEMPLATE.format(
        title=title,
        prover=prover,
        status="verified",
        lemmas=len(reports),
        sentences=sentences,
        characters=characters,
        cpu=sum(r.cpu_seconds for r in reports),
        tactics=sum(r.tactics_tried for r in reports),
        strategies=", ".join(sorted({r.strategy for r in reports})),
        cache_hits=sum(1 for r in reports if r.strategy == LEDGER_REPLAY),
        details=details,
    )


class GitRepo:
    """A git repository, driven through the ``git`` command."""

    def __init__(self, path: Path) -> None:
        if shutil.which("git") is None:
            raise GitError("`git` is not on PATH")
        start = path if path.is_dir() else path.parent
        top = self._git(["rev-parse", "--show-toplevel"], cwd=start, check=False)
        if top.returncode != 0:
            raise GitError(f"{path} is not inside a git repository (--git needs one)")
        self.root = Path(top.stdout.strip()).resolve()
        self.git_dir = Path(
            self._git(["rev-parse", "--absolute-git-dir"], cwd=self.root).stdout.strip()
        )

    @staticmethod
    def _git(
        args: Sequence[str], *, cwd: Path, check: bool = True, input_text: str | None = None
    ) -> FinishedRun:
        done = run_sync(["git", *args], cwd=cwd, input_text=input_text, timeout=None)
        if check and done.returncode != 0:
            raise GitError(f"git {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
        return done

    def git(self, *args: str, check: bool = True) -> str:
        return self._git(args, cwd=self.root, check=check).stdout

    def operation_in_progress(self) -> str | None:
        """The name of a merge, rebase, cherry-pick, revert or bisect in progress, if any."""
        markers = {
            "MERGE_HEAD": "a merge",
            "rebase-merge": "a rebase",
            "rebase-apply": "a rebase",
            "CHERRY_PICK_HEAD": "a cherry-pick",
            "REVERT_HEAD": "a revert",
            "BISECT_LOG": "a bisect",
        }
        for marker, what in markers.items():
            if (self.git_dir / marker).exists():
                return what
        return None

    def dirty(self) -> list[str]:
        """Tracked files with changes, staged or not (untracked files do not count)."""
        status = self.git("status", "--porcelain", "--untracked-files=no")
        return [line[3:] for line in status.splitlines() if line.strip()]

    def check_ready(self, allow_dirty: bool) -> None:
        operation = self.operation_in_progress()
        if operation is not None:
            raise GitError(f"{self.root} is in the middle of {operation}; finish or abort it first")
        if self.git("rev-parse", "--verify", "--quiet", "HEAD", check=False).strip() == "":
            raise GitError(f"{self.root} has no commit yet: --git makes branches from HEAD")
        changed = self.dirty()
        if changed and not allow_dirty:
            raise GitError(
                f"the working tree of {self.root} has uncommitted changes "
                f"({', '.join(changed[:5])}); commit or stash them, or pass --allow-dirty"
            )

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def file_at_head(self, relative: Path) -> str | None:
        done = self._git(["show", f"HEAD:{relative.as_posix()}"], cwd=self.root, check=False)
        return done.stdout if done.returncode == 0 else None

    def commit_in_worktree(self, branch: str, changes: dict[Path, str], message: str) -> str:
        """Make ``branch`` from HEAD with one commit writing ``changes``; return its hash."""
        if self.git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False):
            raise GitError(f"branch {branch} already exists; delete it or rename it first")
        folder = Path(tempfile.mkdtemp(prefix="orch-worktree-"))
        worktree = folder / "tree"
        self.git("worktree", "add", "--quiet", "-b", branch, str(worktree), "HEAD")
        try:
            for relative, text in changes.items():
                target = worktree / relative
                target.write_text(text, encoding="utf-8")
                self._git(["add", "--", relative.as_posix()], cwd=worktree)
            self._git(
                [
                    "-c",
                    "user.name=orch",
                    "-c",
                    "user.email=orch@localhost",
                    "commit",
                    "--quiet",
                    "--no-verify",
                    "-F",
                    "-",
                ],
                cwd=worktree,
                input_text=message,
            )
            return self._git(["rev-parse", "HEAD"], cwd=worktree).stdout.strip()
        finally:
            self.git("worktree", "remove", "--force", str(worktree), check=False)
            shutil.rmtree(folder, ignore_errors=True)
            self.git("worktree", "prune", check=False)

    def push(self, branch: str) -> tuple[bool, str]:
        remotes = self.git("remote").split()
        if not remotes:
            return False, "no git remote: the branch stays local (add one with `git remote add`)"
        remote = "origin" if "origin" in remotes else remotes[0]
        done = self._git(["push", "--quiet", "-u", remote, branch], cwd=self.root, check=False)
        if done.returncode != 0:
            return False, f"git push to {remote} failed: {done.stderr.strip()[-300:]}"
        return True, f"pushed to {remote}"


def _pull_request(repo: GitRepo, branch: str, title: str, body: Path) -> str:
    if shutil.which("gh") is None:
        return "the GitHub CLI (`gh`) is not installed: open the pull request by hand"
    done = run_sync(
        ["gh", "pr", "create", "--head", branch, "--title", title, "--body-file", str(body)],
        cwd=repo.root,
        timeout=None,
    )
    if done.returncode != 0:
        return f"gh pr create failed: {done.stderr.strip()[-300:]}"
    return done.stdout.strip()


def _hand_over(
    repo: GitRepo, branch: str, title: str, body: Path, push: bool, notes: list[str]
) -> tuple[bool, str]:
    """With ``push``: push ``branch`` and open its pull request; (pushed, PR url or note)."""
    if not push:
        return False, ""
    pushed, note = repo.push(branch)
    notes.append(f"{branch}: {note}")
    if not pushed:
        return False, ""
    pr_url = _pull_request(repo, branch, title, body)
    notes.append(f"{branch}: {pr_url}")
    return True, pr_url


def _body_path(body_dir: Path, branch: str) -> Path:
    return body_dir / f"{branch.replace('/', '__')}.md"


def publish(
    repo: GitRepo,
    report: FillReport,
    *,
    per: str = "proof",
    push: bool = False,
    body_dir: Path | None = None,
) -> tuple[list[ProofBranch], list[str]]:
    """Branches for the verified proofs of ``report``; returns them and notes for the user.

    A proof is published only if its file is unchanged from ``HEAD`` (the
    proof was found for the committed text).
    """
    if per not in ("proof", "run"):
        raise GitError(f"--git-per must be 'proof' or 'run', got {per!r}")
    body_dir = body_dir or (repo.root / ".orch" / "pr")
    make_state_dir(body_dir)
    notes: list[str] = []
    groups: list[tuple[str, list[tuple[Path, str, GoalReport]]]] = []
    chosen: list[tuple[Path, str, GoalReport]] = []
    for file_report in report.files:
        proved = [
            g for g in file_report.goals if g.hole is not None and g.outcome is Outcome.PROVED
        ]
        if not proved:
            continue
        relative = file_report.path.resolve().relative_to(repo.root)
        at_head = repo.file_at_head(relative)
        if at_head is None or at_head != file_report.original_text:
            notes.append(f"{relative}: differs from HEAD, its proofs get no branch")
            continue
        chosen.extend((relative, at_head, g) for g in proved)
    if per == "proof":
        groups = [(branch_name(g), [(rel, text, g)]) for rel, text, g in chosen]
    elif chosen:
        groups = [(f"auto/run/{report.run_id or 0}", chosen)]
    branches: list[ProofBranch] = []
    for branch, items in groups:
        changes: dict[Path, str] = {}
        by_file: dict[Path, tuple[str, list[GoalReport]]] = {}
        for relative, text, goal_report in items:
            by_file.setdefault(relative, (text, []))[1].append(goal_report)
        for relative, (text, reports) in by_file.items():
            changes[relative] = apply_patches(
                text,
                [
                    Patch(r.hole, r.sentences, r.helpers, r.imports)
                    for r in reports
                    if r.hole is not None
                ],
            )
        reports_all = [g for _, _, g in items]
        where = items[0][0] if len(by_file) == 1 else Path(f"{len(by_file)} files")
        message = commit_message(reports_all, report.prover_version, where)
        commit = repo.commit_in_worktree(branch, changes, message)
        body = _body_path(body_dir, branch)
        title = message.splitlines()[0]
        body.write_text(pr_body(reports_all, report.prover_version, title), encoding="utf-8")
        pushed, pr_url = _hand_over(repo, branch, title, body, push, notes)
        branches.append(
            ProofBranch(
                branch, commit, body, tuple(g.goal.name for g in reports_all), pushed, pr_url
            )
        )
    return branches, notes


def proof_diff(row: BrokenGoalReport) -> str:
    """The old proof against the new one, a sentence a line (a unified diff, whole)."""
    old, new = list(row.old), list(row.new)
    lines = difflib.unified_diff(
        old, new, "old proof", "new proof", lineterm="", n=max(len(old), len(new))
    )
    return "\n".join(lines)


def _cause(row: BrokenGoalReport) -> str:
    return f"{row.kind} at `{row.failing}`"


def _namespace(row: BrokenGoalReport, relative: Path) -> str:
    modules = [name for kind, name in row.goal.scope if kind == "module"] if row.goal else []
    return ".".join([*relative.with_suffix("").parts, *modules])


def repair_commit_message(
    fixed: Sequence[BrokenGoalReport],
    still: Sequence[BrokenGoalReport],
    prover: str,
    relative: Path,
) -> str:
    """The commit of a repair branch: a title, the facts, then each repair with its cause
    and the diff of its proof, and the proofs still broken."""
    if fixed:
        title = f"auto: repair {', '.join(r.name for r in fixed)} in {relative}"
    else:
        title = f"auto: admit {len(still)} broken proof(s) in {relative}"
    strategies = ",".join(sorted({r.strategy for r in fixed})) or "-"
    cpu = sum(r.cpu_seconds for r in [*fixed, *still])
    lines = [
        title,
        "",
        "[status] verified",
        f"[metrics] cpu_s={cpu:.2f} repaired={len(fixed)} still_broken={len(still)} "
        f"strategy={strategies}",
        f"[prover] {prover}",
    ]
    for row in fixed:
        lines += ["", f"{row.name} ({row.file.name}:{row.line}): {_cause(row)}"]
        lines.append(f"  error: {' '.join(row.error.split())}")
        lines += [f"  {line}" for line in proof_diff(row).splitlines()]
    for row in still:
        lines += ["", f"still broken: {row.name} ({row.file.name}:{row.line}): {_cause(row)}"]
        lines.append(f"  error: {' '.join(row.error.split())}")
    return "\n".join(lines) + "\n"


def repair_pr_body(
    fixed: Sequence[BrokenGoalReport],
    still: Sequence[BrokenGoalReport],
    prover: str,
    title: str,
) -> str:
    """The pull-request text of a repair branch (see :data:`REPAIR_PR_TEMPLATE`)."""
    blocks = []
    for row in fixed:
        blocks.append(
            f"### `{row.name}` ({row.file.name}:{row.line})\n\n"
            f"- cause: {_cause(row)}\n"
            f"- prover error: {' '.join(row.error.split())}\n"
            f"- repaired by: {row.strategy}, {row.cpu_seconds:.2f} CPU s\n\n"
            f"```diff\n{proof_diff(row)}\n```\n"
        )
    if still:
        blocks.append(
            "### Still broken\n\n"
            + "\n".join(
                f"- `{row.name}` ({row.file.name}:{row.line}): {_cause(row)}: "
                f"{' '.join(row.error.split())}"
                for row in still
            )
            + "\n"
        )
    return REPAIR_PR_TEMPLATE.format(
        title=title,
        prover=prover,
        status="verified",
        repaired=len(fixed),
        still=len(still),
        cpu=sum(r.cpu_seconds for r in [*fixed, *still]),
        strategies=", ".join(sorted({r.strategy for r in fixed})) or "none",
        details="\n".join(blocks),
    )


def publish_repairs(
    repo: GitRepo,
    report: RepairReport,
    *,
    per: str = "file",
    push: bool = False,
    body_dir: Path | None = None,
) -> tuple[list[ProofBranch], list[str]]:
    """Branches for the verified repairs of ``report`` (a run made without writing);
    returns them and notes for the user.

    ``per`` is ``file`` (a branch per file: ``auto/repair/file/<namespace>``),
    ``proof`` (``auto/repair/lem/<namespace>/<decl>``) or ``run``
    (``auto/repair/run/<run id>``). A file's repairs are published only if it
    is unchanged from ``HEAD`` (they were found for the committed text).
    """
    if per not in ("file", "proof", "run"):
        raise GitError(f"--git-per must be 'file', 'proof' or 'run' for repairs, got {per!r}")
    body_dir = body_dir or (repo.root / ".orch" / "pr")
    make_state_dir(body_dir)
    notes: list[str] = []
    #: (relative path, the file's repairs, the lemmas to write: None for all)
    Item = tuple[Path, "FileRepairs", frozenset[str] | None]
    chosen: list[Item] = []
    for repairs in report.repaired_files:
        if repairs.text() == repairs.original:
            continue  # nothing repaired (and nothing admitted)
        try:
            relative = repairs.path.resolve().relative_to(repo.root)
        except ValueError:
            notes.append(f"{repairs.path}: outside {repo.root}, its repairs get no branch")
            continue
        if repo.file_at_head(relative) != repairs.original:
            notes.append(f"{relative}: differs from HEAD, its repairs get no branch")
            continue
        chosen.append((relative, repairs, None))
    groups: list[tuple[str, list[Item]]] = []
    if per == "file":
        for relative, repairs, _ in chosen:
            namespace = _ref_part(".".join(relative.with_suffix("").parts))
            groups.append((f"auto/repair/file/{namespace}", [(relative, repairs, None)]))
    elif per == "proof":
        for relative, repairs, _ in chosen:
            for row in repairs.rows:
                if row.repaired:
                    branch = (
                        f"auto/repair/lem/{_ref_part(_namespace(row, relative))}/"
                        f"{_ref_part(row.name)}"
                    )
                    groups.append((branch, [(relative, repairs, frozenset({row.name}))]))
    elif chosen:
        groups = [(f"auto/repair/run/{report.run_id or 0}", chosen)]
    branches: list[ProofBranch] = []
    for branch, items in groups:
        changes = {relative: repairs.text(only) for relative, repairs, only in items}
        fixed = [
            row
            for _, repairs, only in items
            for row in repairs.rows
            if row.repaired and (only is None or row.name in only)
        ]
        still = [row for _, repairs, _ in items for row in repairs.rows if not row.repaired]
        where = items[0][0] if len(items) == 1 else Path(f"{len(items)} files")
        message = repair_commit_message(fixed, still, report.prover_version, where)
        commit = repo.commit_in_worktree(branch, changes, message)
        title = message.splitlines()[0]
        body = _body_path(body_dir, branch)
        body.write_text(
            repair_pr_body(fixed, still, report.prover_version, title), encoding="utf-8"
        )
        pushed, pr_url = _hand_over(repo, branch, title, body, push, notes)
        names = tuple(row.name for row in fixed)
        branches.append(ProofBranch(branch, commit, body, names, pushed, pr_url))
    return branches, notes
