"""Settings of the model provider, read when a command starts (never at import time).

Precedence, highest first: ``ORCH_LLM_*`` environment variables > the
``llm`` table of the project's settings file (``[llm]`` in ``orch.toml``, or
``[tool.orch.llm]`` in ``pyproject.toml``) > the defaults below; the file is
found, read and checked by the same functions as the run's settings
(:mod:`..config`), with the same errors. The key
may also come from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``. Local servers
(vLLM, llama.cpp, Ollama) speak the OpenAI wire format: set ``base_url`` to
their ``/v1`` address and any non-empty key.
"""

from __future__ import annotations

import enum
import importlib.util
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..config import ConfigError, ProjectFile, coerce, read_project_file, resolve_fields

__all__ = [
    "NO_ENV",
    "LLMMode",
    "LLMSettings",
    "ProviderKind",
    "llm_off_reason",
    "load_llm_settings",
    "load_llm_settings_and_sources",
    "probe",
]


class ProviderKind(enum.StrEnum):
    """Which wire format the provider speaks."""

    #: OpenAI Chat Completions (OpenAI, vLLM, llama.cpp, Ollama, any compatible server)
    OPENAI = "openai"
    #: Anthropic Messages
    ANTHROPIC = "anthropic"


class LLMMode(enum.StrEnum):
    """How the model's proposals are used."""

    #: whole proofs, ``samples`` of them, each checked by the prover
    WHOLE = "whole"
    #: next tactics inside the best-first search, beside the k-NN suggestions
    NEXT = "next"
    #: both strategies
    BOTH = "both"


@dataclass(frozen=True, slots=True)
class LLMSettings:
    provider: str = ProviderKind.OPENAI.value
    #: the model name as the provider knows it (required)
    model: str = ""
    #: the API's base URL (empty: the SDK's default, api.openai.com / api.anthropic.com)
    base_url: str = ""
    api_key: str = field(default="", repr=False)
    #: whole-proof samples per attempt
    samples: int = 4
    temperature: float = 0.8
    max_tokens: int = 1024
    #: seconds for one request
    timeout: float = 60.0
    #: retries after the first request (timeouts, 429, 5xx, malformed replies)
    max_retries: int = 3
    #: model requests in flight at once (they use no local CPU slot)
    concurrency: int = 2
    #: stop making requests once a run has spent this much (USD); 0 = no cap. Its
    #: variable would be ORCH_LLM_BUDGET_USD, which is the run's ``llm_budget_usd``
    budget_usd: float = 0.0
    #: USD per million input / output tokens (the price table's default)
    price_in: float = 0.0
    price_out: float = 0.0
    #: per-model prices, {model: (input, output)} USD per million tokens
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    mode: str = LLMMode.BOTH.value
    #: read OpenAI-format replies as they are generated: a cancelled attempt closes the
    #: connection and the server stops generating (off: one JSON reply per request)
    stream: bool = True

    def validate(self) -> LLMSettings:
        if self.provider not in {p.value for p in ProviderKind}:
            raise ConfigError(
                f"llm provider must be 'openai' or 'anthropic', got {self.provider!r}"
            )
        if self.mode not in {m.value for m in LLMMode}:
            raise ConfigError(f"llm mode must be whole, next or both, got {self.mode!r}")
        if self.samples < 1 or self.concurrency < 1 or self.max_retries < 0:
            raise ConfigError("llm samples and concurrency must be >= 1, max_retries >= 0")
        if self.timeout <= 0 or self.max_tokens < 1:
            raise ConfigError("llm timeout and max_tokens must be positive")
        return self

    def price(self) -> tuple[float, float]:
        """USD per million (input, output) tokens of the configured model."""
        return self.prices.get(self.model, (self.price_in, self.price_out))

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        price_in, price_out = self.price()
        return (tokens_in * price_in + tokens_out * price_out) / 1_000_000


#: fields with no variable of their own: ORCH_LLM_BUDGET_USD is the run's
#: ``llm_budget_usd`` (:class:`..config.Settings`), which overrides ``budget_usd`` when
#: above 0, so that each variable is read once, by one setting
NO_ENV = frozenset({"budget_usd"})


def load_llm_settings(
    root: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> LLMSettings:
    """The provider settings for the project at ``root``.

    Read by :func:`..config.resolve_fields`, as the run's settings are: ``flags``
    (None: not given) > ``ORCH_LLM_*`` > the ``llm`` table of the project's file >
    the defaults.
    """
    return load_llm_settings_and_sources(root, flags, environ)[0]


def load_llm_settings_and_sources(
    root: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[LLMSettings, dict[str, str]]:
    """:func:`load_llm_settings`, and where each value came from (``orch config``)."""
    environ = os.environ if environ is None else environ
    file = read_project_file(root).table("llm") if root is not None else ProjectFile()
    values, sources = resolve_fields(
        LLMSettings,
        file,
        flags,
        environ,
        prefix="ORCH_LLM_",
        tables=frozenset({"prices"}),
        no_env=NO_ENV,
    )
    prices: dict[str, tuple[float, float]] = {}
    for model, entry in dict(file.values.get("prices", {})).items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{file.label}: prices.{model} must be a table with input and output")
        prices[str(model)] = (
            coerce(f"prices.{model}.input", entry.get("input", 0.0), float),
            coerce(f"prices.{model}.output", entry.get("output", 0.0), float),
        )
    settings = LLMSettings(**values, prices=prices)
    if not settings.api_key:
        fallback = "ANTHROPIC_API_KEY" if settings.provider == "anthropic" else "OPENAI_API_KEY"
        if fallback in environ:
            settings = replace(settings, api_key=environ[fallback])
            sources["api_key"] = f"env {fallback}"
    return settings.validate(), sources


def llm_off_reason(settings: LLMSettings) -> str | None:
    """Why the llm strategy cannot run with ``settings`` (None: it can)."""
    sdk = "anthropic" if settings.provider == ProviderKind.ANTHROPIC else "openai"
    if importlib.util.find_spec(sdk) is None or importlib.util.find_spec("tenacity") is None:
        return f"the {sdk} SDK is not installed: pip install 'proof-orchestrator[llm]'"
    if not settings.model:
        return "no model is set (ORCH_LLM_MODEL, or model in the [llm] table of orch.toml)"
    if not settings.api_key:
        return "no API key (ORCH_LLM_API_KEY; for a local server without keys, any non-empty value)"
    return None


def probe(settings: LLMSettings, timeout: float = 3.0) -> str | None:
    """Can the provider's host be reached? None if a TCP connection opens, else why not."""
    default = (
        "https://api.anthropic.com"
        if settings.provider == ProviderKind.ANTHROPIC
        else "https://api.openai.com"
    )
    parts = urlsplit(settings.base_url or default)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{host}:{port} is unreachable ({exc})"
