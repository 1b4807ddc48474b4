"""What the configured model server says about itself (``orch doctor``).

A server speaking the OpenAI wire format lists its models at ``GET
{base_url}/models`` (llama.cpp's server, Ollama's ``/v1``, vLLM, OpenAI);
Anthropic's API at ``GET /v1/models``. One request with the configured key,
a short timeout, and no retry: the doctor reports, it does not insist.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from .settings import LLMSettings, ProviderKind

__all__ = ["ServerStatus", "server_status", "server_url"]

#: the APIs' own addresses when no base_url is set
DEFAULT_URLS = {
    ProviderKind.OPENAI.value: "https://api.openai.com/v1",
    ProviderKind.ANTHROPIC.value: "https://api.anthropic.com",
}
#: the longest list of models read
MAX_REPLY_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """The configured server: its address, whether it answered, and the models it serves."""

    url: str
    answers: bool
    #: the model ids it listed (empty when it did not answer)
    models: tuple[str, ...] = ()
    #: why it did not answer ("" when it did)
    error: str = ""


def server_url(settings: LLMSettings) -> str:
    """The base URL requests go to."""
    return (settings.base_url or DEFAULT_URLS[settings.provider]).rstrip("/")


def server_status(settings: LLMSettings, timeout: float = 5.0) -> ServerStatus:
    """Ask the server for its models (one request, no retry)."""
    base = server_url(settings)
    if settings.provider == ProviderKind.ANTHROPIC:
        url = f"{base.removesuffix('/v1')}/v1/models"
        headers = {"x-api-key": settings.api_key, "anthropic-version": "2023-06-01"}
    else:
        url = f"{base}/models"
        headers = {"Authorization": f"Bearer {settings.api_key}"}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read(MAX_REPLY_BYTES)
    except urllib.error.HTTPError as exc:
        return ServerStatus(base, False, error=f"GET {url} answered HTTP {exc.code}")
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return ServerStatus(base, False, error=f"GET {url} failed: {reason}")
    try:
        listed = json.loads(body)
        models = tuple(str(m["id"]) for m in listed.get("data", []) if "id" in m)
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        return ServerStatus(base, False, error=f"GET {url} did not list models: {exc!r}")
    return ServerStatus(base, True, models)
