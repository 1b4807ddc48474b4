"""Model providers through the official SDKs, with bounded retries.

Two wire formats: OpenAI Chat Completions (which local servers such as
vLLM, llama.cpp and Ollama also speak) and Anthropic Messages. The SDKs'
own retries are off; :func:`_retrying` retries timeouts, connection errors,
429 (waiting what ``Retry-After`` says) , 5xx and malformed replies a bounded
number of times, then raises :class:`~proof_orchestrator.errors.ModelError`
with the reason. A caller turns that into a failed attempt, never a crash.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any, Protocol, TypeVar

from ..errors import ModelError, ModelUnavailable
from .settings import LLMSettings, ProviderKind, llm_off_reason

__all__ = ["AnthropicProvider", "Completion", "OpenAIProvider", "Provider", "make_provider"]

T = TypeVar("T")

log = logging.getLogger(__name__)

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
    #: seconds of each request that succeeded, in order
    request_seconds: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class _Reply:
    """What one request gave: texts, and tokens (``tokens_in`` None: not reported)."""

    texts: tuple[str, ...]
    tokens_in: int | None
    tokens_out: int
    seconds: float = 0.0


class Provider(Protocol):
    """Sends one prompt and returns ``n`` sampled replies."""

    kind: str
    model: str

    async def complete(
        self, system: str, prompt: str, *, n: int, temperature: float, max_tokens: int
    ) -> Completion: ...

    async def aclose(self) -> None: ...


class _Malformed(Exception):
    """The reply had no usable text (retried, then reported as ``malformed``)."""


class _Dropped(Exception):
    """The connection broke while a streamed reply was read (retried, then ``connection``)."""


def _reason(exc: BaseException, sdk: ModuleType) -> tuple[str, bool]:
    """(reason, retry?) for an exception raised by a request."""
    if isinstance(exc, _Malformed):
        return "malformed", True
    if isinstance(exc, _Dropped):
        return "connection", True
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
            f"the model request failed ({reason}) after {made} tries: {exc}", reason, made
        ) from exc
    return result, made


class OpenAIProvider:
    """OpenAI-compatible Chat Completions.

    ``n`` samples are asked for in one request; a server that returns fewer
    choices (llama-cpp-python's and Ollama's ignore ``n``) is asked again for
    the rest, at most ``n`` requests in all, and one that refuses ``n > 1``
    with HTTP 400 (llama.cpp's ``llama-server``) is asked for one at a time. With
    ``stream`` (the default) the reply is read as it is generated, so that a
    cancelled attempt closes the connection and the server stops generating.
    """

    kind = ProviderKind.OPENAI.value

    def __init__(self, settings: LLMSettings) -> None:
        import openai

        self._sdk: ModuleType = openai
        self.model = settings.model
        self._retries = settings.max_retries
        self._stream = settings.stream
        #: the server refused n > 1 once: one choice per request
        self._one_choice = False
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
        messages: list[Any] = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ]
        texts: list[str] = []
        tokens_in = tokens_out = requests = 0
        seconds: list[float] = []
        while len(texts) < n and len(seconds) < n:
            want = 1 if self._one_choice else n - len(texts)

            async def request(want: int = want) -> _Reply:
                sent = time.monotonic()
                if self._stream:
                    reply = await self._streamed(messages, want, temperature, max_tokens)
                else:
                    reply = await self._whole(messages, want, temperature, max_tokens)
                if not reply.texts or not all(t.strip() for t in reply.texts):
                    raise _Malformed("a reply without text")
                return replace(reply, seconds=time.monotonic() - sent)

            try:
                reply, made = await _retrying(request, self._sdk, self._retries)
            except ModelError as exc:
                if exc.reason != "http_400" or want == 1:
                    # the requests of the samples already in count too (their texts are
                    # lost with the failure: a partial answer is never cached)
                    exc.requests += requests
                    raise
                # llama.cpp's llama-server refuses n > 1 ("Only one completion choice
                # is allowed"): one choice per request from now on
                self._one_choice = True
                requests += exc.requests
                log.warning("%s refused n=%d; asking for one choice per request", self.model, want)
                continue
            requests += made
            texts.extend(reply.texts[:want])
            seconds.append(reply.seconds)
            tokens_out += reply.tokens_out
            tokens_in += (
                reply.tokens_in if reply.tokens_in is not None else await self._count(messages)
            )
        return Completion(
            tuple(texts),
            tokens_in,
            tokens_out,
            time.monotonic() - started,
            requests,
            tuple(seconds),
        )

    async def _whole(
        self, messages: list[Any], n: int, temperature: float, max_tokens: int
    ) -> _Reply:
        reply = await self._client.chat.completions.create(
            model=self.model,
            messages=messages,
            n=n,
            temperature=temperature,
            max_tokens=max_tokens,
        )
        texts = [c.message.content for c in (reply.choices or [])]
        usage = reply.usage
        return _Reply(
            tuple(t if isinstance(t, str) else "" for t in texts),
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
        )

    async def _streamed(
        self, messages: list[Any], n: int, temperature: float, max_tokens: int
    ) -> _Reply:
        import httpx2  # the openai SDK's HTTP client

        parts: dict[int, list[str]] = {}
        finished: set[int] = set()
        chunks = 0
        usage: Any = None
        stream = await self._client.chat.completions.create(
            model=self.model,
            messages=messages,
            n=n,
            temperature=temperature,
            max_tokens=max_tokens,
            stream=True,
            stream_options={"include_usage": True},
        )
        # leaving the block (done, failed or cancelled) closes the connection
        async with stream:
            try:
                async for chunk in stream:
                    if getattr(chunk, "usage", None) is not None:
                        usage = chunk.usage
                    for choice in chunk.choices or []:
                        content = choice.delta.content if choice.delta is not None else None
                        if content:
                            parts.setdefault(choice.index, []).append(content)
                            chunks += 1
                        if choice.finish_reason is not None:
                            finished.add(choice.index)
            except httpx2.TransportError as exc:
                raise _Dropped(f"the stream broke: {exc!r}") from exc
        if not parts or not set(parts) <= finished:
            # a server that drops a reply halfway (llama-cpp-python's, with its default
            # interrupt_requests, when the next request comes in) ends the stream with
            # no finish_reason: the text is cut off, not the model's whole reply
            raise _Malformed("the stream ended before the reply was finished")
        texts = tuple("".join(parts[i]) for i in sorted(parts))
        if usage is not None:
            return _Reply(
                texts,
                int(getattr(usage, "prompt_tokens", 0) or 0),
                int(getattr(usage, "completion_tokens", 0) or 0),
            )
        # no usage in the stream (llama-cpp-python's server): a server streams one
        # token per chunk, and the prompt is counted by the server's tokenizer
        return _Reply(texts, None, chunks)

    async def _count(self, messages: list[Any]) -> int:
        """The prompt's tokens by the server's own tokenizer (``/extras/tokenize/count``,
        llama-cpp-python's server), without the chat template's few; 0 if it has none."""
        text = "\n".join(m["content"] for m in messages)
        base = str(self._client.base_url).rstrip("/")
        root = base.removesuffix("/v1")
        try:
            response = await self._client.post(
                f"{root}/extras/tokenize/count",
                body={"input": text, "model": self.model},
                cast_to=dict,
            )
        except self._sdk.APIError:
            return 0
        count = response.get("count") if isinstance(response, dict) else None
        return int(count) if isinstance(count, int) else 0

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

        seconds: list[float] = []
        for _ in range(n):
            sent = time.monotonic()
            reply, made = await _retrying(request, self._sdk, self._retries)
            seconds.append(time.monotonic() - sent)
            requests += made
            texts.append("".join(getattr(b, "text", "") for b in reply.content if b.type == "text"))
            tokens_in += int(reply.usage.input_tokens or 0)
            tokens_out += int(reply.usage.output_tokens or 0)
        return Completion(
            tuple(texts),
            tokens_in,
            tokens_out,
            time.monotonic() - started,
            requests,
            tuple(seconds),
        )

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
