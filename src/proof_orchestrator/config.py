"""Settings: named defaults, overridden by a project file, the environment and flags.

Precedence, highest first: command-line flag > ``ORCH_*`` environment
variable > ``orch.toml`` (or ``[tool.orch]`` in ``pyproject.toml``) in the
project root > the default below. Settings are read when a command starts,
never at import time. ``orch config`` shows every value and where it came from.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .errors import OrchError

__all__ = ["ConfigError", "Settings", "load_settings"]


class ConfigError(OrchError):
    """A setting has a value of the wrong kind or out of range."""


@dataclass(frozen=True, slots=True)
class Settings:
    #: fraction of the whole machine (all cores) the orchestrator's process tree may use
    cpu_target: float = 0.5
    #: most quick-tactic sessions at once
    max_light: int = 2
    #: most heavy sessions (search, hammer) at once
    max_heavy: int = 1
    #: 0 = quick tactics only; 1 (default) = + best-first search, sauto, hammer; 2 = + market, LLM
    profile: int = 1
    #: seed of every random choice (bandit sampling)
    seed: int = 0
    #: "thompson" or "ucb1"
    bandit: str = "thompson"
    #: strategies run at once on one goal (speculative portfolio)
    portfolio: int = 2
    #: CPU seconds of a goal's first pass, all its strategies together; doubled on a revisit
    budget: float = 10.0
    #: a goal is parked once its budget would exceed this (seconds)
    budget_cap: float = 160.0
    #: timeout of one tactic (seconds)
    tactic_timeout: float = 1.0
    #: address-space cap of one prover process (MiB)
    prover_memory_mb: int = 4096
    #: resident memory all prover processes together may use (MiB)
    memory_budget_mb: int = 8192
    #: where attempts run: "local" (this process) or "ray" (a Ray cluster)
    executor: str = "local"
    #: the Ray cluster: "auto", "HOST:PORT", or "" to start a local one
    ray_address: str = ""
    #: imports a proof may add to a file, comma-separated ("lia", "hammer-tactics"; "" for
    #: none; the backends name what they know). Lia is part of Coq and declares no axiom:
    #: allowed unless turned off
    allow_import: str = "lia"

    @property
    def allowed_imports(self) -> frozenset[str]:
        return frozenset(n.strip() for n in self.allow_import.split(",") if n.strip())

    #: add the llm strategies (also on with profile 2); the provider is the ``[llm]`` table
    use_llm: bool = False
    #: stop model requests once a run has spent this much, USD (0: the ``[llm]`` budget_usd)
    llm_budget_usd: float = 0.0
    #: refuse proofs that rest on other holes (closed modulo them) instead of writing them
    strict_holes: bool = False
    #: Coq: refuse an axiom of a loaded library unless the file's own finished proofs
    #: already rest on it (default: an axiom a loaded library declares is trusted)
    strict_axioms: bool = False
    #: the project's own build command (``make -j2``), run in its root before a search;
    #: empty: orch compiles what the files need into ``.orch/build``
    build: str = ""

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


def env_name(field: str) -> str:
    return "ORCH_" + field.upper()


def _coerce(name: str, raw: Any, kind: type) -> Any:
    try:
        if kind is bool:
            return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes")
        return kind(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"setting {name}: cannot read {raw!r} as {kind.__name__}") from exc


def _file_values(root: Path) -> tuple[dict[str, Any], str]:
    orch_toml = root / "orch.toml"
    if orch_toml.is_file():
        return _read_toml(orch_toml), str(orch_toml)
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        table = _read_toml(pyproject).get("tool", {}).get("orch", {})
        if table:
            return dict(table), f"{pyproject} [tool.orch]"
    return {}, ""


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def load_settings(
    root: Path,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Settings, dict[str, str]]:
    """The settings for a project at ``root``, and the source of each value."""
    environ = os.environ if environ is None else environ
    file_values, file_label = _file_values(root)
    known = {f.name: f for f in fields(Settings)}
    # the [llm] table holds the model provider's settings (llm/settings.py)
    unknown = set(file_values) - set(known) - {"llm"}
    if unknown:
        raise ConfigError(f"unknown setting(s) in {file_label}: {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    defaults = Settings()
    for name, f in known.items():
        kind = type(getattr(defaults, name))
        if flags and flags.get(name) is not None:
            values[name], sources[name] = _coerce(name, flags[name], kind), "flag"
        elif env_name(name) in environ:
            values[name] = _coerce(name, environ[env_name(name)], kind)
            sources[name] = f"env {env_name(name)}"
        elif name in file_values:
            values[name], sources[name] = _coerce(name, file_values[name], kind), file_label
        else:
            values[name], sources[name] = getattr(defaults, name), "default"
        del f
    return Settings(**values).validate(), sources
