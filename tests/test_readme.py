"""The README's shell commands run as written.

The README's fenced blocks whose info string is ``sh safe`` are run, each as
one bash script (``set -euo pipefail``), in a temporary folder that holds a
copy of ``examples/`` and a link ``.venv`` to the virtualenv running the tests:
exactly the commands a newcomer types at the repository root. The other ``sh``
blocks (the two long ``make`` commands, Lean, which cannot be installed here,
your own project) are not run; instead every ``orch`` command in them must name
a command that exists and only flags that command takes, every ``make`` target
must exist, and every file a ``cp`` copies must be in the repository.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from proof_orchestrator.cli import app

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
SAFE = "sh safe"


def blocks(info: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [body for tag, body in FENCE.findall(text) if tag.strip() == info]


def commands(block: str) -> list[list[str]]:
    """Each simple command of a block: lines without comments, split at && and |."""
    found = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word in ("&&", "|", "||", ";"):
                if command:
                    found.append(command)
                command = []
            else:
                command.append(word)
    return found


def orch_command(words: list[str]) -> tuple[str, Any, list[str]]:
    """The orch (sub)command that ``words`` (after ``orch``) names, and the rest."""
    command: Any = typer.main.get_command(app)
    path = []
    rest = list(words)
    while getattr(command, "commands", None) and rest and not rest[0].startswith("-"):
        name = rest.pop(0)
        assert name in command.commands, f"`orch {' '.join(path)}` has no command {name!r}"
        command = command.commands[name]
        path.append(name)
    return " ".join(path), command, rest


def test_the_readme_is_short_and_marks_runnable_blocks() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    assert blocks(SAFE), "no `sh safe` block in README.md: nothing of it would be run"


def test_readme_links_into_the_repository_exist() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert local
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_commands_of_the_blocks_not_run_exist_as_written() -> None:
    checked = 0
    for block in blocks("sh"):
        for words in commands(block):
            program = Path(words[0]).name
            if program == "orch":
                path, command, rest = orch_command(words[1:])
                assert getattr(command, "params", None) is not None, f"`orch {path}` is a group"
                flags = {
                    flag
                    for param in command.params
                    for flag in (*param.opts, *getattr(param, "secondary_opts", []))
                }
                for word in rest:
                    if word.startswith("--"):
                        flag = word.split("=", 1)[0]
                        assert flag in flags, f"`orch {path}` takes no {flag}"
                checked += 1
            elif program == "make":
                for target in (w for w in words[1:] if not w.startswith("-")):
                    done = subprocess.run(
                        ["make", "-n", "-C", str(REPO), target],
                        capture_output=True,
                        text=True,
                        check=False,
                    )
                    assert done.returncode == 0, f"make {target}: {done.stderr}"
                checked += 1
            elif program == "cp":
                sources = [w for w in words[1:-1] if not w.startswith("-")]
                for source in sources:
                    assert (REPO / source).exists(), f"README copies {source}, which is missing"
                checked += 1
    assert checked >= 5


@pytest.mark.slow
def test_the_safe_blocks_run_as_written(tmp_path: Path) -> None:
    venv = Path(sys.prefix)
    assert (venv / "bin" / "orch").exists(), f"no orch in {venv}: install the package first"
    (tmp_path / ".venv").symlink_to(venv, target_is_directory=True)
    shutil.copytree(
        REPO / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns(".lake", ".orch")
    )
    for number, block in enumerate(blocks(SAFE)):
        script = tmp_path / f"block{number}.sh"
        script.write_text("set -euo pipefail\n" + block, encoding="utf-8")
        done = subprocess.run(
            ["bash", str(script)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, f"README block {number} failed:\n{block}\n{done.stderr}"
    # the quick start's fill wrote verified proofs into the copy, not into examples/
    filled = (tmp_path / "demo" / "Demo.v").read_text(encoding="utf-8")
    example = (tmp_path / "examples" / "coq" / "Demo.v").read_text(encoding="utf-8")
    assert len(re.findall(r"^Admitted\.$", example, re.MULTILINE)) == 2
    assert re.findall(r"^Admitted\.$", filled, re.MULTILINE) == []
    assert len(re.findall(r"^Qed\.$", filled, re.MULTILINE)) == 2
