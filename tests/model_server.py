"""A stand-in for a model API on 127.0.0.1: the OpenAI and Anthropic wire formats, fixed replies.

OpenAI-format requests with ``stream`` get their reply as server-sent events.

It replaces the model only (no model can be reached where the tests run);
every script it hands out is checked by the real prover. Each request takes
the next reply from a list; the last one repeats. Requests are recorded.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ModelServer", "Reply"]


@dataclass(frozen=True, slots=True)
class Reply:
    #: the texts of the choices (OpenAI) or of the one message (Anthropic: the first)
    texts: tuple[str, ...] = ()
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    #: seconds to wait before answering (a slow model, for timeouts)
    delay: float = 0.0
    tokens_in: int = 1000
    tokens_out: int = 200
    #: choices returned whatever ``n`` asks (0: ``n``); llama.cpp's and Ollama's give 1
    choices: int = 0
    #: a streamed reply that stops without a finish_reason (a server that dropped it)
    cut: bool = False
    #: refuse a request with ``n`` above this with HTTP 400 (0: no limit; llama-server's is 1)
    max_n: int = 0


@dataclass
class ModelServer:
    replies: list[Reply] = field(default_factory=list)
    #: (path, JSON body) of every request received
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the model server is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def _next(self) -> Reply:
        with self._lock:
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def start(self) -> ModelServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                del format, args

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    owner.requests.append((self.path, body))
                reply = owner._next()
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.max_n and int(body.get("n", 1)) > reply.max_n:
                    reply = Reply(status=400)
                if reply.status != 200:
                    payload: dict[str, Any] = {
                        "type": "error",
                        "error": {"type": "error", "message": f"status {reply.status}"},
                    }
                elif self.path.endswith("/chat/completions"):
                    n = int(body.get("n", 1))
                    texts = (list(reply.texts) * n)[: max(n, len(reply.texts))]
                    payload = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", ""),
                        "choices": [
                            {
                                "index": i,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                            for i, text in enumerate(texts[: reply.choices or n])
                        ],
                        "usage": {
                            "prompt_tokens": reply.tokens_in,
                            "completion_tokens": reply.tokens_out,
                            "total_tokens": reply.tokens_in + reply.tokens_out,
                        },
                    }
                else:
                    payload = {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": body.get("model", ""),
                        "content": [{"type": "text", "text": reply.texts[0]}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": {
                            "input_tokens": reply.tokens_in,
                            "output_tokens": reply.tokens_out,
                        },
                    }
                if reply.status == 200 and body.get("stream") and "choices" in payload:
                    usage = bool(body.get("stream_options", {}).get("include_usage"))
                    self._stream(payload, usage and not reply.cut, reply.cut)
                    return
                data = json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in reply.headers:
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def _stream(self, payload: dict[str, Any], usage: bool, cut: bool) -> None:
                """The reply as server-sent events: one chunk per choice, then the usage."""
                base = {k: payload[k] for k in ("id", "created", "model")}
                events = [
                    {
                        **base,
                        "object": "chat.completion.chunk",
                        "choices": [
                            {
                                "index": c["index"],
                                "delta": {"role": "assistant", "content": c["message"]["content"]},
                                "finish_reason": None if cut else "stop",
                            }
                        ],
                    }
                    for c in payload["choices"]
                ]
                if usage:
                    events.append(
                        {
                            **base,
                            "object": "chat.completion.chunk",
                            "choices": [],
                            "usage": payload["usage"],
                        }
                    )
                data = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
                data += "data: [DONE]\n\n"
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("content-length", str(len(data.encode())))
                    self.end_headers()
                    self.wfile.write(data.encode())
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
