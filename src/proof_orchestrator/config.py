"""Settings: named defaults, overridden by a project file, the environment and flags.

Precedence, highest first: command-line flag > ``ORCH_*`` environment
variable > ``orch.toml`` (or ``[tool.orch]`` in ``pyproject.toml``) in the
project root > the default below. Settings are read when a command starts,
never at import time. ``orch config`` shows every value and where it came from.

The model provider's settings (``llm/settings.py``) are read by the same
functions from the ``llm`` table of the same file (``[llm]`` in ``orch.toml``,
``[tool.orch.llm]`` in ``pyproject.toml``) and the ``ORCH_LLM_*`` variables.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import OrchError

__all__ = [
    "ConfigError",
    "ProjectFile",
    "Settings",
    "cache_folder",
    "coerce",
    "env_name",
    "load_settings",
    "read_project_file",
    "resolve_fields",
    "setting",
]


class ConfigError(OrchError):
    """A setting has a value of the wrong kind or out of range."""


def setting(default: Any, help: str, *, flag: str = "") -> Any:
    """A field of :class:`Settings`: its default, and the one sentence that explains it.

    ``help`` is what ``orch <command> --help`` shows beside the setting's flag and
    what the settings page of the docs says; ``flag`` replaces the flag's usual
    name (``--`` and the field's name with dashes).
    """
    return field(default=default, metadata={"help": help, "flag": flag})


@dataclass(frozen=True, slots=True)
class Settings:
    """What a run may do. Every field is a flag of ``fill``, ``bg``, ``bank``, ``repair``
    and ``mcp`` (``cli/options.py`` makes them), an ``ORCH_*`` variable and a key of
    ``orch.toml``."""

    cpu_target: float = setting(
        0.5, "fraction of the whole machine (all cores) the orchestrator's process tree may use"
    )
    max_light: int = setting(2, "most quick-tactic sessions at once")
    max_heavy: int = setting(1, "most heavy sessions (search, hammer) at once")
    profile: int = setting(
        1, "0: quick tactics only; 1: + best-first search, sauto, hammer; 2: + market, LLM"
    )
    seed: int = setting(0, "seed of every random choice (the bandit's sampling)")
    bandit: str = setting("thompson", "the bandit that orders strategies: thompson or ucb1")
    portfolio: int = setting(2, "strategies raced at once on one goal (speculative portfolio)")
    budget: float = setting(
        10.0,
        "CPU seconds per goal for its first pass, all strategies and the orchestrator "
        "together: cheap tactics first, the expensive strategies share the rest; a pass "
        "that runs out is revisited at twice the budget",
    )
    budget_cap: float = setting(
        160.0,
        "largest per-goal budget: a goal that failed at it is parked (set it to --budget "
        "for a single pass)",
    )
    tactic_timeout: float = setting(1.0, "timeout of one tactic, seconds")
    prover_memory_mb: int = setting(4096, "address-space cap of one prover process, MiB")
    memory_budget_mb: int = setting(
        8192, "resident memory all prover processes together may use, MiB"
    )
    executor: str = setting("local", "where attempts run: local (this process) or ray")
    ray_address: str = setting(
        "", "the Ray cluster: auto, HOST:PORT, or empty to start a local one"
    )
    allow_import: str = setting(
        "lia",
        "imports a proof may add, comma-separated: lia (`From Coq Require Import Lia.`, part "
        "of Coq, declares no axiom), hammer-tactics (`From Hammer Require Import Tactics.`, "
        "for proofs only CoqHammer's sauto/hauto rebuild); empty for none",
    )

    @property
    def allowed_imports(self) -> frozenset[str]:
        return frozenset(n.strip() for n in self.allow_import.split(",") if n.strip())

    use_llm: bool = setting(
        False,
        "add the llm strategies (also on with profile 2): the model server and model come "
        "from the [llm] table of orch.toml or ORCH_LLM_BASE_URL and ORCH_LLM_MODEL (or the "
        "[tool.orch.llm] table of pyproject.toml); `orch doctor` checks them",
        flag="--llm/--no-llm",
    )
    llm_budget_usd: float = setting(
        0.0, "stop model requests once a run has spent this much, USD (0: the [llm] budget_usd)"
    )
    strict_holes: bool = setting(
        False,
        "refuse a proof that rests on other holes (Admitted/sorry goals of the project) "
        "instead of writing it closed modulo them",
    )
    strict_axioms: bool = setting(
        False,
        "Coq: refuse a proof that rests on an axiom of a loaded library (classic, "
        "functional_extensionality, the Reals' axioms...) unless the file's own finished "
        "proofs already rest on it; by default an axiom a loaded library declares is trusted",
    )
    build: str = setting(
        "",
        "the project's own build command, e.g. 'make -j2', run in its root before the "
        "search; empty: orch compiles what the files need into .orch/build",
    )

    def validate(self) -> Settings:
        if not 0.05 <= self.cpu_target <= 1.0:
            raise ConfigError(f"cpu_target must be between 0.05 and 1.0, got {self.cpu_target}")
        for name in ("max_light", "max_heavy", "portfolio"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.profile not in (0, 1, 2):
            raise ConfigError(f"profile must be 0, 1 or 2, got {self.profile}")
        if self.executor not in ("local", "ray"):
            raise ConfigError(f"executor must be 'local' or 'ray', got {self.executor!r}")
        if self.bandit not in ("thompson", "ucb1"):
            raise ConfigError(f"bandit must be 'thompson' or 'ucb1', got {self.bandit!r}")
        for name in ("budget", "budget_cap", "tactic_timeout"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if self.llm_budget_usd < 0:
            raise ConfigError(f"llm_budget_usd must be >= 0, got {self.llm_budget_usd}")
        if self.budget_cap < self.budget:
            raise ConfigError(f"budget_cap ({self.budget_cap}) is below budget ({self.budget})")
        return self


def cache_folder(name: str, environ: Mapping[str, str] | None = None) -> Path:
    """orch's cache ``name`` under ``XDG_CACHE_HOME`` (else ``~/.cache``); read here only."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "orch" / name


def env_name(field: str, prefix: str = "ORCH_") -> str:
    return prefix + field.upper()


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def coerce(name: str, raw: Any, kind: type) -> Any:
    """``raw`` (from a file, the environment or a flag) as a ``kind``; ConfigError if it is not."""
    if kind is bool and not isinstance(raw, bool):
        word = str(raw).strip().lower()
        if word in _TRUE | _FALSE:
            return word in _TRUE
        raise ConfigError(f"setting {name}: cannot read {raw!r} as true or false")
    try:
        return kind(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"setting {name}: cannot read {raw!r} as {kind.__name__}") from exc


@dataclass(frozen=True, slots=True)
class ProjectFile:
    """A project's settings table: ``orch.toml``, else ``[tool.orch]`` of ``pyproject.toml``."""

    #: the table's keys (the ``llm`` sub-table among them)
    values: Mapping[str, Any] = field(default_factory=dict)
    #: the file it was read from ("" when there is none)
    path: str = ""
    #: the table's name in that file ("" for the whole of ``orch.toml``)
    section: str = ""

    @property
    def label(self) -> str:
        """Where the values come from, as errors and ``orch config`` name it."""
        return f"{self.path} [{self.section}]" if self.section else self.path

    def table(self, name: str) -> ProjectFile:
        """The sub-table ``name`` (``llm``: the model provider's settings)."""
        sub = self.values.get(name, {})
        if not isinstance(sub, Mapping):
            raise ConfigError(f"{self.label}: {name} must be a table, got {sub!r}")
        section = f"{self.section}.{name}" if self.section else name
        return ProjectFile(dict(sub), self.path, section)


def read_project_file(root: Path) -> ProjectFile:
    """The project's settings table; ``orch.toml`` wins over ``pyproject.toml``."""
    orch_toml = root / "orch.toml"
    if orch_toml.is_file():
        return ProjectFile(_read_toml(orch_toml), str(orch_toml))
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        table = _read_toml(pyproject).get("tool", {}).get("orch", {})
        if table:
            return ProjectFile(dict(table), str(pyproject), "tool.orch")
    return ProjectFile()


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def resolve_fields(
    cls: type,
    file: ProjectFile,
    flags: Mapping[str, Any] | None,
    environ: Mapping[str, str],
    *,
    prefix: str = "ORCH_",
    tables: frozenset[str] = frozenset(),
    no_env: frozenset[str] = frozenset(),
) -> tuple[dict[str, Any], dict[str, str]]:
    """The value of each scalar field of the dataclass ``cls`` and where it came from.

    Flag (not None) > environment variable ``prefix + NAME`` > ``file`` > the
    field's default. A key of ``file`` that is no field (nor one of ``tables``)
    is refused. Each environment variable is read here and nowhere else; the
    fields in ``no_env`` have none (their name would be another setting's).
    """
    known = {f.name: f for f in fields(cls) if f.name not in tables}
    unknown = set(file.values) - set(known) - tables
    if unknown:
        raise ConfigError(f"unknown setting(s) in {file.label}: {', '.join(sorted(unknown))}")
    defaults = cls()
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name in known:
        kind = type(getattr(defaults, name))
        env = env_name(name, prefix)
        if flags and flags.get(name) is not None:
            raw, sources[name] = flags[name], "flag"
        elif env in environ and name not in no_env:
            raw, sources[name] = environ[env], f"env {env}"
        elif name in file.values:
            raw, sources[name] = file.values[name], file.label
        else:
            values[name], sources[name] = getattr(defaults, name), "default"
            continue
        # the error names where the bad value was given
        values[name] = coerce(f"{name} (from {sources[name]})", raw, kind)
    return values, sources


def load_settings(
    root: Path,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Settings, dict[str, str]]:
    """The settings for a project at ``root``, and the source of each value."""
    environ = os.environ if environ is None else environ
    # the llm table holds the model provider's settings (llm/settings.py reads it the same way)
    values, sources = resolve_fields(
        Settings, read_project_file(root), flags, environ, tables=frozenset({"llm"})
    )
    return Settings(**values).validate(), sources
