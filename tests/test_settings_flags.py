"""One source of settings: every command's settings flags come from ``config.Settings``."""

from __future__ import annotations

import contextvars
import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from proof_orchestrator.cli import app
from proof_orchestrator.cli.common import RESULTS, load_command_settings
from proof_orchestrator.cli.eval import EVAL_SETTINGS
from proof_orchestrator.config import Settings, env_name
from proof_orchestrator.goals import Budget
from proof_orchestrator.provers.process import memory_limit
from proof_orchestrator.run.reports import FillOptions

runner = CliRunner()

SRC = Path(__file__).resolve().parent.parent / "src" / "proof_orchestrator"
SETTINGS = [f.name for f in dataclasses.fields(Settings)]
#: the commands that run a search: each takes every setting as a flag
RUNS = ("fill", "bg", "bank", "repair", "mcp")
BG_ARGS = ["--llm", "--build", "make", "--duration", "6", "--profile", "0", "--json"]


def _command(name: str) -> Any:
    """The click command Typer makes of ``orch NAME``."""
    commands: dict[str, Any] = getattr(typer.main.get_command(app), "commands", {})
    return commands[name]


def _setting_options(name: str) -> dict[str, Any]:
    """The command's options that set a setting: named like it, its variable in the help."""
    return {
        p.name: p
        for p in _command(name).params
        if p.param_type_name == "option"
        and p.name in SETTINGS
        and env_name(p.name) in (p.help or "")
    }


@pytest.mark.parametrize("command", RUNS)
def test_every_setting_is_a_flag_of_every_run_command(command: str) -> None:
    missing = set(SETTINGS) - set(_setting_options(command))
    assert not missing, f"orch {command} has no flag for {sorted(missing)}"


@pytest.mark.parametrize("command", RUNS)
def test_a_settings_flag_is_named_and_explained_by_its_field(command: str) -> None:
    options = _setting_options(command)
    for f in dataclasses.fields(Settings):
        option = options[f.name]
        dashed = "--" + f.name.replace("_", "-")
        if f.name == "use_llm":
            assert option.opts == ["--llm"]
            assert option.secondary_opts == ["--no-llm"]
        else:
            assert dashed in option.opts
        # the help is the field's own text (its brackets escaped for rich)
        assert f.metadata["help"].replace("[", "\\[") in (option.help or "")


def test_eval_takes_its_settings_as_flags_and_keeps_tactic_seconds() -> None:
    options = _setting_options("eval")
    assert set(options) == set(EVAL_SETTINGS)
    assert "--tactic-seconds" in options["tactic_timeout"].opts


def test_no_command_passes_its_arguments_through_locals() -> None:
    for path in (SRC / "cli").glob("*.py"):
        assert "locals()" not in path.read_text(encoding="utf-8"), path


def test_each_settings_variable_is_read_only_by_the_loader() -> None:
    names = "|".join(env_name(name) for name in SETTINGS)
    read = re.compile(rf"(environ|getenv)[^\n]*\"({names})\"")
    readers = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if read.search(path.read_text(encoding="utf-8"))
    ]
    assert readers == []


def test_each_variable_is_read_in_one_module() -> None:
    read = re.compile(r'(?:environ\.get\(|environ\[|getenv\()\s*"([A-Z_]+)"')
    readers: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for name in read.findall(path.read_text(encoding="utf-8")):
            readers.setdefault(name, set()).add(str(path.relative_to(SRC)))
    assert {"ORCH_LEAN_REPL", "XDG_CACHE_HOME", "ORCH_DB_URL"} <= set(readers)
    assert {name: where for name, where in readers.items() if len(where) > 1} == {}


def test_the_prover_memory_setting_caps_every_child(tmp_path: Path) -> None:
    def load() -> int:
        load_command_settings(tmp_path, {})
        return memory_limit()

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ORCH_PROVER_MEMORY_MB", "3000")
        # in a copy of the context: the cap a command sets does not outlive the test
        assert contextvars.copy_context().run(load) == 3000 * 1024**2


def test_the_budget_is_held_once() -> None:
    assert "budget" not in {f.name for f in dataclasses.fields(FillOptions)}
    options = FillOptions(orch=Settings(budget=3.0, tactic_timeout=2.0))
    assert options.budget == Budget(cpu_seconds=3.0, tactic_seconds=2.0)


def test_bg_takes_llm_and_build_and_runs_the_build(tmp_path: Path) -> None:
    # B.v needs A.v compiled: `make` (the user's build) compiles it, then bg fills B.v
    (tmp_path / "_CoqProject").write_text("-Q . P\nA.v\nB.v\n")
    (tmp_path / "Makefile").write_text("all:\n\tcoqc -Q . P A.v\n\ttouch built.stamp\n")
    (tmp_path / "A.v").write_text("Definition zero := 0.\n")
    hole = tmp_path / "B.v"
    hole.write_text(
        "From P Require Import A.\nLemma t : forall n : nat, n + zero = n.\nAdmitted.\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "proof_orchestrator.cli", "bg", str(hole), *BG_ARGS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={**_environ_without_llm(), "ORCH_DB_URL": f"sqlite:///{tmp_path / 'l.sqlite'}"},
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "built.stamp").exists()  # --build ran the user's command
    assert "the llm strategies are off" in done.stderr  # --llm asked for them
    assert json.loads(done.stdout)["proved"] == 1
    assert "Admitted." not in hole.read_text()


def _environ_without_llm() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("ORCH_", "OPENAI_"))}


@pytest.mark.parametrize("command", ["bank", "eval"])
def test_results_go_to_dot_orch_results_by_default(command: str) -> None:
    out = next(p for p in _command(command).params if p.name == "out_dir")
    assert Path(str(out.default)) == RESULTS == Path(".orch/results")


def test_a_results_folder_named_json_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "A.v").write_text("Lemma a : True.\nProof. exact I. Qed.\n")
    for args in (["bank", "--bank", str(_tiny_bank(tmp_path))], ["eval", "A.v"]):
        result = runner.invoke(app, [*args, "--out", "run-eval.json"])
        assert result.exit_code == 2, result.output
        assert "named like a JSON file" in result.output
        assert not (tmp_path / "run-eval.json").exists()


def test_bank_writes_its_result_into_dot_orch_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    bank = _tiny_bank(tmp_path)
    result = runner.invoke(app, ["bank", "--bank", str(bank), "--profile", "0", "--json"])
    assert result.exit_code == 0, result.output
    written = list((tmp_path / ".orch" / "results").glob("*.json"))
    assert len(written) == 1
    totals: dict[str, Any] = json.loads(written[0].read_text())["totals"]
    assert totals["lemmas"] == 1


def _tiny_bank(root: Path) -> Path:
    bank = root / "bank"
    (bank / "coq").mkdir(parents=True, exist_ok=True)
    (bank / "index.tsv").write_text("# id\tdomain\tlevel\tfile\nt\tnat\teasy\tTiny\n")
    (bank / "coq" / "Tiny.v").write_text("Lemma t : forall n : nat, n + 0 = n.\nAdmitted.\n")
    return bank
