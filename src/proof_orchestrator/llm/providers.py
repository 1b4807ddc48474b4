"""Model providers through the official SDKs, with bounded retries.

Two wire formats: OpenAI Chat Completions (which local servers such as
vLLM, llama.cpp and Ollama also speak) and Anthropic Messages. The SDKs'
own retries are off; :func:`_retrying` retries timeouts, connection errors,
429 (waiting what ``Retry-After`` says) , 5xx and malformed replies a bounded
number of times, then raises :class:`~proof_orchestrator.errors.ModelError`
with the reason. A caller turns that into a failed attempt, never a crash.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol, TypeVar

from ..errors import ModelError, ModelUnavailable
from .settings import LLMSettings, ProviderKind, llm_off_reason

__all__ = ["AnthropicProvider", "Completion", "OpenAIProvider", "Provider", "make_provider"]

T = TypeVar("T")

#: longest wait honoured from a ``Retry-After`` header, seconds
MAX_RETRY_AFTER = 60.0


@dataclass(frozen=True, slots=True)
class Completion:
    """The texts a model wrote for one prompt, and what they cost in tokens and time."""

    texts: tuple[str, ...]
    tokens_in: int
    tokens_out: int
    latency_seconds: float
    #: HTTP requests made (retries included)
    requests: int = 1


class Provider(Protocol):
    """Sends one prompt and returns ``n`` sampled replies."""

    kind: str
    model: str

    async def complete(
        self, system: str, prompt: str, *, n: int, temperature: float, max_tokens: int
    ) -> Completion: ...


class _Malformed(Exception):
    """The reply had no usable text (retried, then reported as ``malformed``)."""


def _reason(exc: BaseException, sdk: ModuleType) -> tuple[str, bool]:
    """(reason, retry?) for an exception raised by a request."""
    if isinstance(exc, _Malformed):
        return "malformed", True
    if isinstance(exc, sdk.APITimeoutError):
        return "timeout", True
    if isinstance(exc, sdk.APIConnectionError):
        return "connection", True
    if isinstance(exc, sdk.RateLimitError):
        return "rate_limited", True
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        return ("server_error", True) if status >= 500 else (f"http_{status}", False)
    return "error", False


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw = headers.get("retry-after")
    try:
        return min(MAX_RETRY_AFTER, max(0.0, float(raw))) if raw is not None else None
    except ValueError:
        return None


async def _retrying(
    request: Callable[[], Awaitable[T]], sdk: ModuleType, max_retries: int
) -> tuple[T, int]:
    """Run ``request`` with bounded retries; returns (result, requests made)."""
    import tenacity

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        after = _retry_after(exc) if exc is not None else None
        if after is not None:
            return after
        return float(min(20.0, 0.5 * 2 ** (state.attempt_number - 1)))

    def transient(exc: BaseException) -> bool:
        return _reason(exc, sdk)[1]

    made = 0

    async def counted() -> T:
        nonlocal made
        made += 1
        return await request()

    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(max_retries + 1),
        wait=wait,
        retry=tenacity.retry_if_exception(transient),
        reraise=True,
    )
    try:
        result: T = await retrying(counted)
    except Exception as exc:
        reason, _ = _reason(exc, sdk)
        if reason == "error":
            raise
        raise ModelError(
            f"the model request failed ({reason}) after {made} tries: {exc}", reason
        ) from exc
    return result, made


class OpenAIProvider:
    """OpenAI-compatible Chat Completions (``n`` samples in one request)."""

    kind = ProviderKind.OPENAI.value

    def __init__(self, settings: LLMSettings) -> None:
        import openai

        self._sdk: ModuleType = openai
        self.model = settings.model
        self._retries = settings.max_retries
        self._client = openai.AsyncOpenAI(
            api_key=settings.api_key,
            base_url=settings.base_url or None,
            timeout=settings.timeout,
            max_retries=0,
        )

    async def complete(
        self, system: str, prompt: str, *, n: int, temperature: float, max_tokens: int
    ) -> Completion:
        started = time.monotonic()

        async def request() -> Any:
            reply = await self._client.chat.completions.create(
                model=self.model,
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": prompt},
                ],
                n=n,
                temperature=temperature,
                max_tokens=max_tokens,
            )
            texts = [c.message.content for c in (reply.choices or [])]
            if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
                raise _Malformed("a reply without text")
            return reply

        reply, made = await _retrying(request, self._sdk, self._retries)
        usage = reply.usage
        return Completion(
            tuple(c.message.content for c in reply.choices),
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
            time.monotonic() - started,
            made,
        )

    async def aclose(self) -> None:
        await self._client.close()


class AnthropicProvider:
    """Anthropic Messages (one request per sample: the API has no ``n``).

    The Messages API of the SDK this was built with takes no ``temperature``;
    samples differ by the model's default sampling.
    """

    kind = ProviderKind.ANTHROPIC.value

    def __init__(self, settings: LLMSettings) -> None:
        import anthropic

        self._sdk: ModuleType = anthropic
        self.model = settings.model
        self._retries = settings.max_retries
        self._client = anthropic.AsyncAnthropic(
            api_key=settings.api_key,
            base_url=settings.base_url or None,
            timeout=settings.timeout,
            max_retries=0,
        )

    async def complete(
        self, system: str, prompt: str, *, n: int, temperature: float, max_tokens: int
    ) -> Completion:
        del temperature
        started = time.monotonic()
        texts: list[str] = []
        tokens_in = tokens_out = requests = 0

        async def request() -> Any:
            reply = await self._client.messages.create(
                model=self.model,
                system=system,
                messages=[{"role": "user", "content": prompt}],
                max_tokens=max_tokens,
            )
            text = "".join(
                getattr(block, "text", "") for block in reply.content if block.type == "text"
            )
            if not text.strip():
                raise _Malformed("a reply without text")
            return reply

        for _ in range(n):
            reply, made = await _retrying(request, self._sdk, self._retries)
            requests += made
            texts.append("".join(getattr(b, "text", "") for b in reply.content if b.type == "text"))
            tokens_in += int(reply.usage.input_tokens or 0)
            tokens_out += int(reply.usage.output_tokens or 0)
        return Completion(tuple(texts), tokens_in, tokens_out, time.monotonic() - started, requests)

    async def aclose(self) -> None:
        await self._client.close()


def make_provider(settings: LLMSettings) -> OpenAIProvider | AnthropicProvider:
    """The provider ``settings`` name; :class:`ModelUnavailable` says why not."""
    reason = llm_off_reason(settings)
    if reason is not None:
        raise ModelUnavailable(reason)
    if settings.provider == ProviderKind.ANTHROPIC:
        return AnthropicProvider(settings)
    return OpenAIProvider(settings)
