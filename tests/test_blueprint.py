"""Blueprint sync on a realistic leanblueprint content.tex and a small Lean project."""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.workflows.blueprint import (
    critical_path_weights,
    parse_blueprint,
    scan_declarations,
    sync,
)

runner = CliRunner()

CONTENT = r"""% Blueprint of the Demo project
\chapter{Basics}

\begin{definition}[Double]\label{def:double}\lean{Demo.double}\leanok
The double of $n$ is $n + n$.
\end{definition}

\begin{lemma}\label{lem:double-add}
  \lean{Demo.double_add}
  \uses{def:double}
  $\mathrm{double}(a+b) = \mathrm{double}(a) + \mathrm{double}(b)$.
\end{lemma}
\begin{proof}
  \uses{def:double}
  Unfold and rearrange. % \leanok in a comment is not a \leanok
\end{proof}

\begin{lemma}\label{lem:double-even}\lean{Demo.double_even}\leanok
  $\mathrm{double}(n)$ is even.
\end{lemma}
\begin{proof}\leanok
  By Lemma~\ref{lem:double-add}. \uses{lem:double-add}
\end{proof}

\chapter{Main results}

\begin{theorem}[Main]\label{thm:main}
  \lean{Demo.main, Demo.main'}
  \uses{lem:double-even, lem:missing}
  Everything is even.
\end{theorem}
\begin{proof}
  \leanok
  \uses{lem:double-even}
  Combine.
\end{proof}

\begin{lemma}\label{lem:missing}\lean{Demo.not_yet}\leanok
  Not formalised yet, but marked as if it were.
\end{lemma}

\begin{corollary}\label{cor:final}\uses{thm:main}
  No Lean name: nothing to sync.
\end{corollary}
"""

LEAN = """\
namespace Demo

def double (n : Nat) : Nat := n + n

theorem double_add (a b : Nat) : double (a + b) = double a + double b := by
  unfold double; omega

theorem double_even (n : Nat) : double n % 2 = 0 := by
  sorry

theorem main : True := trivial
theorem main' : True := by sorry

end Demo
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "lakefile.toml").write_text('name = "demo"\n', encoding="utf-8")
    (tmp_path / "Demo.lean").write_text(LEAN, encoding="utf-8")
    blueprint = tmp_path / "blueprint" / "src"
    blueprint.mkdir(parents=True)
    (blueprint / "content.tex").write_text(CONTENT, encoding="utf-8")
    return blueprint / "content.tex"


def test_parse_blueprint_pairs_statements_with_proofs() -> None:
    nodes = {n.label: n for n in parse_blueprint(CONTENT)}
    assert set(nodes) == {
        "def:double",
        "lem:double-add",
        "lem:double-even",
        "thm:main",
        "lem:missing",
        "cor:final",
    }
    assert nodes["thm:main"].lean == ("Demo.main", "Demo.main'")
    assert nodes["thm:main"].uses == ("lem:double-even", "lem:missing")
    main_proof = nodes["thm:main"].proof
    assert main_proof is not None
    assert main_proof.leanok
    add_proof = nodes["lem:double-add"].proof
    assert add_proof is not None
    assert not add_proof.leanok  # the one in a comment does not count
    assert nodes["lem:missing"].proof is None


def test_sync_adds_and_removes_only_leanok(tmp_path: Path) -> None:
    _project(tmp_path)
    declarations = scan_declarations([tmp_path / "Demo.lean"])
    assert declarations.proved("Demo.double_add")
    assert not declarations.proved("Demo.double_even")
    assert not declarations.exists("Demo.not_yet")
    new_text, coverage, changes = sync(CONTENT, declarations)
    assert changes == [
        "lem:double-add: statement \\leanok added",
        "lem:double-add: proof \\leanok added",
        "lem:double-even: proof \\leanok removed",
        "thm:main: statement \\leanok added",
        "thm:main: proof \\leanok removed",
        "lem:missing: statement \\leanok removed",
    ]
    assert (coverage.total, coverage.stated, coverage.proved) == (5, 4, 2)
    # every change is an added or removed \leanok, nothing else
    for line in difflib.unified_diff(CONTENT.splitlines(), new_text.splitlines(), lineterm=""):
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---")):
            assert line[1:].replace("\\leanok", "").strip() in {
                "",
                "\\lean{Demo.double_add}",
                "\\lean{Demo.main, Demo.main'}",
                "\\begin{proof}",
                "\\begin{lemma}\\label{lem:missing}\\lean{Demo.not_yet}",
            }, line
    assert "% \\leanok in a comment is not a \\leanok" in new_text
    # a second sync changes nothing
    again, _, more = sync(new_text, declarations)
    assert again == new_text
    assert more == []


def test_sync_counts_proofs_closed_modulo_holes_apart(tmp_path: Path) -> None:
    """The ledger says double_add's proof rests on double_even (still a sorry): its
    \\leanok is added as before, and coverage counts it closed modulo holes."""
    _project(tmp_path)
    declarations = scan_declarations([tmp_path / "Demo.lean"])
    _, coverage, changes = sync(CONTENT, declarations, {"double_add": ["Demo.double_even"]})
    assert "lem:double-add: proof \\leanok added (closed modulo Demo.double_even)" in changes
    assert (coverage.proved, coverage.closed, coverage.modulo_holes) == (2, 1, 1)


def test_the_cli_writes_the_file_and_reports_coverage(tmp_path: Path) -> None:
    content = _project(tmp_path)
    check = runner.invoke(app, ["blueprint", "sync", str(content), "--check"])
    assert check.exit_code == 1
    assert content.read_text(encoding="utf-8") == CONTENT
    result = runner.invoke(app, ["blueprint", "sync", str(content)])
    assert result.exit_code == 0, result.output
    assert "coverage: 4/5 stated, 2/5 proved (2 closed, 0 closed modulo holes)" in result.output
    assert content.read_text(encoding="utf-8") != CONTENT
    assert runner.invoke(app, ["blueprint", "sync", str(content), "--check"]).exit_code == 0


def test_critical_path_weights_follow_uses_chains() -> None:
    weights = critical_path_weights(CONTENT)
    # def:double <- lem:double-add <- lem:double-even <- thm:main <- cor:final
    assert weights["Demo.double"] == 4
    assert weights["Demo.double_add"] == 3
    assert weights["Demo.double_even"] == 2
    assert weights["Demo.main"] == 1
    assert weights["Demo.not_yet"] == 2  # thm:main and cor:final wait for it


WEB = r"""\documentclass{report}
\usepackage{amssymb, amsthm, amsmath}
\usepackage{hyperref}
\usepackage[showmore, dep_graph]{blueprint}
\newtheorem{theorem}{Theorem}
\newtheorem{lemma}[theorem]{Lemma}
\newtheorem{corollary}[theorem]{Corollary}
\theoremstyle{definition}
\newtheorem{definition}[theorem]{Definition}
\title{Demo}
\begin{document}
\maketitle
\input{content}
\end{document}
"""
PLASTEX_CFG = """[general]
renderer=HTML5
plugins=plastexdepgraph plastexshowmore leanblueprint

[files]
directory=../web/
split-level=0
"""


def _node(graph: str, label: str) -> str:
    match = re.search(r'"' + re.escape(label) + r'"\s*\[([^\]]*)\]', graph)
    assert match is not None, label
    return match.group(1)


def test_leanblueprint_builds_the_synced_blueprint(tmp_path: Path) -> None:
    """The synced file is still a valid blueprint: leanblueprint's plasTeX build accepts it,
    and its dependency graph shows the new statuses."""
    pytest.importorskip("leanblueprint", reason="leanblueprint is not installed")
    plastex = shutil.which("plastex", path=str(Path(sys.executable).parent))
    if plastex is None:
        pytest.skip("plastex (installed with leanblueprint) is not in the environment")
    content = _project(tmp_path)
    assert runner.invoke(app, ["blueprint", "sync", str(content)]).exit_code == 0
    src = content.parent
    (src / "web.tex").write_text(WEB, encoding="utf-8")
    (src / "plastex.cfg").write_text(PLASTEX_CFG, encoding="utf-8")
    build = subprocess.run(
        [plastex, "-c", "plastex.cfg", "web.tex"],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    graph = (tmp_path / "blueprint" / "web" / "dep_graph_document.html").read_text()
    # leanblueprint: a green border = statement formalised, a green fill = proved
    # (#9CEC8B proved, #1CAC78 proved with all its ancestors)
    proved_fill = re.compile(r'fillcolor="#(?:9CEC8B|1CAC78)"')
    assert "color=green" in _node(graph, "lem:double-add")
    assert proved_fill.search(_node(graph, "lem:double-add"))
    assert "color=green" in _node(graph, "lem:double-even")
    assert not proved_fill.search(_node(graph, "lem:double-even"))
    assert "color=green" not in _node(graph, "lem:missing")
