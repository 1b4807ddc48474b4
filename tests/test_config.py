"""Settings precedence: flag > env > file > default."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from proof_orchestrator.config import ConfigError, Settings, env_name, load_settings
from proof_orchestrator.llm.settings import NO_ENV, LLMSettings, load_llm_settings


def test_defaults_when_nothing_is_set(tmp_path: Path) -> None:
    settings, sources = load_settings(tmp_path, environ={})
    assert settings == Settings()
    assert set(sources.values()) == {"default"}


def test_precedence_flag_over_env_over_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.orch]\ncpu_target = 0.3\nmax_light = 3\nprofile = 0\n"
    )
    settings, sources = load_settings(
        tmp_path,
        flags={"cpu_target": 0.7, "profile": None},
        environ={"ORCH_MAX_LIGHT": "4", "ORCH_CPU_TARGET": "0.4"},
    )
    assert settings.cpu_target == 0.7
    assert sources["cpu_target"] == "flag"
    assert settings.max_light == 4
    assert sources["max_light"] == "env ORCH_MAX_LIGHT"
    assert settings.profile == 0
    assert sources["profile"].endswith("[tool.orch]")


def test_orch_toml_wins_over_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.orch]\nseed = 1\n")
    (tmp_path / "orch.toml").write_text("seed = 2\n")
    settings, _ = load_settings(tmp_path, environ={})
    assert settings.seed == 2


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"ORCH_CPU_TARGET": "lots"}, "cannot read 'lots'"),
        ({"ORCH_CPU_TARGET": "1.5"}, "between 0.05 and 1.0"),
        ({"ORCH_PROFILE": "7"}, "profile must be"),
        ({"ORCH_BANDIT": "greedy"}, "thompson"),
    ],
)
def test_bad_values_are_clear_errors(tmp_path: Path, environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(tmp_path, environ=environ)


def test_unknown_keys_in_the_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "orch.toml").write_text("cpu_targt = 0.5\n")
    with pytest.raises(ConfigError, match="cpu_targt"):
        load_settings(tmp_path, environ={})


def test_an_llm_table_in_pyproject_is_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.orch]\nprofile = 2\n[tool.orch.llm]\nmodel = "m"\nsamples = 3\n'
        "[tool.orch.llm.prices.m]\ninput = 1.0\noutput = 2.0\n"
    )
    settings = load_llm_settings(tmp_path, environ={})
    assert (settings.model, settings.samples, settings.price()) == ("m", 3, (1.0, 2.0))
    assert load_settings(tmp_path, environ={})[0].profile == 2


def test_llm_settings_have_the_same_precedence(tmp_path: Path) -> None:
    (tmp_path / "orch.toml").write_text('[llm]\nmodel = "file"\nsamples = 3\ntimeout = 9\n')
    settings = load_llm_settings(
        tmp_path, flags={"model": "flag", "timeout": None}, environ={"ORCH_LLM_SAMPLES": "5"}
    )
    assert (settings.model, settings.samples, settings.timeout) == ("flag", 5, 9.0)


def _both(root: Path, environ: dict[str, str]) -> None:
    load_settings(root, environ=environ)
    load_llm_settings(root, environ=environ)


@pytest.mark.parametrize(
    ("text", "environ", "message"),
    [
        (
            '[tool.orch.llm]\nmodle = "m"\n',
            {},
            r"unknown setting\(s\) in .*\[tool.orch.llm\]: modle",
        ),
        (
            "[tool.orch.llm]\nsamples = 3\n",
            {"ORCH_LLM_SAMPLES": "many"},
            "setting samples \\(from env ORCH_LLM_SAMPLES\\): cannot",
        ),
        (
            "[tool.orch.llm]\nstream = 'maybe'\n",
            {},
            r"setting stream \(from .*\[tool.orch.llm\]\): cannot read 'maybe' as true",
        ),
        (
            "[tool.orch]\nstrict_holes = 'maybe'\n",
            {},
            r"setting strict_holes \(from .*\[tool.orch\]\): cannot read 'maybe'",
        ),
        ("[tool.orch]\nllm = 3\n", {}, "llm must be a table"),
    ],
)
def test_both_tables_give_the_same_errors(
    tmp_path: Path, text: str, environ: dict[str, str], message: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        _both(tmp_path, environ)


def test_no_variable_is_read_by_two_settings() -> None:
    run = {env_name(f.name) for f in fields(Settings)}
    llm = {env_name(f.name, "ORCH_LLM_") for f in fields(LLMSettings) if f.name not in NO_ENV}
    assert run.isdisjoint(llm)


def test_the_llm_budget_variable_is_the_runs_cap(tmp_path: Path) -> None:
    (tmp_path / "orch.toml").write_text("[llm]\nbudget_usd = 3.0\n")
    environ = {"ORCH_LLM_BUDGET_USD": "2"}
    assert load_settings(tmp_path, environ=environ)[0].llm_budget_usd == 2.0
    assert load_llm_settings(tmp_path, environ=environ).budget_usd == 3.0
