"""What is installed: provers, ATPs and tools, with versions."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..config import ConfigError
from ..coq.strategies.hammer import HAMMER_LIBEXEC
from ..errors import ProverHung
from ..lean.session import registry_path, repl_from_environment
from ..llm.server import server_status
from ..llm.settings import llm_off_reason, load_llm_settings
from ..provers.process import run_sync

__all__ = ["Check", "run_checks"]


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    found: bool
    version: str
    detail: str
    #: "required" for the Coq pipeline, "optional" otherwise
    need: str


def _version(argv: list[str]) -> str:
    try:
        done = run_sync(argv, timeout=20)
    except (OSError, ProverHung) as exc:
        return f"(failed: {exc})"
    text = (done.stdout or done.stderr).strip()
    first = text.splitlines()[0] if text else ""
    match = re.search(r"\d+\.\d+(?:\.\d+)?", first)
    return match.group() if match else first[:60]


def _tool(name: str, argv: list[str], need: str, hint: str) -> Check:
    path = shutil.which(name)
    if path is None:
        return Check(name, False, "", hint, need)
    return Check(name, True, _version([path, *argv[1:]]), path, need)


def _lean_repl() -> Check:
    """The Lean REPL: ``ORCH_LEAN_REPL``, the builds ``orch lean setup`` recorded, or ``repl``."""
    argv = repl_from_environment()
    if argv is not None:
        return Check("lean-repl", True, "", f"ORCH_LEAN_REPL={shlex.join(argv)}", "optional")
    try:
        recorded = json.loads(registry_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = {}
    builds = [f"{toolchain}: {path}" for toolchain, path in recorded.items() if Path(path).exists()]
    if builds:
        return Check("lean-repl", True, "", "; ".join(builds), "optional")
    if path := shutil.which("repl"):
        return Check("lean-repl", True, "", path, "optional")
    return Check("lean-repl", False, "", "run `orch lean setup` in a Lean project", "optional")


def _llm(root: Path) -> Check:
    """The llm strategies: the configured model server, whether it answers, and its models."""
    try:
        settings = load_llm_settings(root)
    except ConfigError as exc:
        return Check("llm", False, "", f"off: {exc}", "optional")
    reason = llm_off_reason(settings)
    if reason is not None:
        return Check("llm", False, "", f"off: {reason}", "optional")
    status = server_status(settings)
    where = f"{settings.provider} server at {status.url}"
    if not status.answers:
        return Check(
            "llm",
            False,
            settings.model,
            f"off: {where} does not answer: {status.error}",
            "optional",
        )
    served = ", ".join(status.models) or "no model listed"
    if status.models and settings.model not in status.models:
        note = f"; model {settings.model!r} is not among those it serves ({served})"
    else:
        note = f"; serves {served}"
    return Check("llm", True, settings.model, f"{where} answers{note}", "optional")


def _mcp() -> Check:
    if importlib.util.find_spec("mcp") is None:
        return Check("mcp", False, "", "pip install 'proof-orchestrator[mcp]'", "optional")
    from importlib.metadata import version

    return Check("mcp", True, version("mcp"), "orch mcp can serve agents", "optional")


def run_checks(root: Path | None = None) -> list[Check]:
    checks = [
        _tool("coqtop", ["coqtop", "--version"], "required", "apt-get install coq"),
        _tool("coqc", ["coqc", "--version"], "required", "apt-get install coq"),
        _tool(
            "eprover", ["eprover", "--version"], "optional", "apt-get install eprover (hammer ATP)"
        ),
        _tool("cvc4", ["cvc4", "--version"], "optional", "apt-get install cvc4 (hammer ATP)"),
        _tool("z3", ["z3", "--version"], "optional", "apt-get install z3 (hammer ATP)"),
        _tool("vampire", ["vampire", "--version"], "optional", "not packaged in Debian"),
        _tool("lean", ["lean", "--version"], "optional", "Lean 4: install elan"),
        _tool("lake", ["lake", "--version"], "optional", "Lean 4: install elan"),
        _lean_repl(),
    ]
    hammer_plugin = any(
        (Path(root) / "Hammer").is_dir()
        for root in ("/usr/lib/ocaml/coq/user-contrib", "/usr/lib/coq/user-contrib")
    )
    helpers = Path(HAMMER_LIBEXEC).is_dir()
    checks.append(
        Check(
            "coq-hammer",
            hammer_plugin,
            "",
            ("plugin installed; " if hammer_plugin else "apt-get install libcoq-hammer; ")
            + (
                f"orch puts {HAMMER_LIBEXEC} on PATH for the provers it starts"
                if helpers
                else f"{HAMMER_LIBEXEC} is missing: hammer's ATP calls would fail"
            ),
            "optional",
        )
    )
    checks += [_mcp(), _llm(root or Path.cwd())]
    return checks
