"""The servers: ``orch dashboard`` (the web dashboard) and ``orch mcp`` (tools for agents)."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Annotated

import typer

from ..workflows.gitops import GitRepo
from .common import (
    EXIT_BAD_INPUT,
    console,
    fail,
    fill_options,
    load_command_settings,
    open_ledger,
    ready_repo,
)
from .options import AllowDirty, SettingFlags, settings_flags


def dashboard_command(
    path: Annotated[Path, typer.Argument(help="the project folder (its ledger and files)")] = Path(
        "."
    ),
    host: Annotated[
        str, typer.Option(help="address to bind; non-loopback needs ORCH_DASHBOARD_TOKEN")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 8000,
    db: Annotated[str | None, typer.Option(help="ledger URL or SQLite path")] = None,
    results: Annotated[
        Path | None,
        typer.Option(help="folder of benchmark result JSON (default: PATH/.orch/results)"),
    ] = None,
) -> None:
    """Serve the web dashboard (read-only) over the ledger."""
    if not path.is_dir():
        raise fail(f"{path} is not a folder", EXIT_BAD_INPUT)
    token = os.environ.get("ORCH_DASHBOARD_TOKEN") or None
    if not _is_loopback(host) and token is None:
        raise fail(
            f"refusing to serve on {host} without a token: set ORCH_DASHBOARD_TOKEN "
            "(clients then send it as 'Authorization: Bearer ...' or ?token=...)",
            EXIT_BAD_INPUT,
        )
    ledger = open_ledger(db, path)
    # imported here, not at the top: the web stack costs every command 0.3 s at start-up
    import uvicorn

    from ..dashboard import create_app

    app_ = create_app(ledger, path, token=token, results_dir=results)
    console.print(f"orch dashboard on http://{host}:{port}/ (Ctrl-C stops)")
    try:
        uvicorn.run(app_, host=host, port=port, log_level="warning")
    finally:
        ledger.close()


@settings_flags()
def mcp_command(
    project: Annotated[Path, typer.Argument(help="the project folder agents may work on")] = Path(
        "."
    ),
    http: Annotated[
        bool, typer.Option("--http", help="serve streamable HTTP instead of stdio")
    ] = False,
    host: Annotated[
        str, typer.Option(help="with --http: address; non-loopback needs ORCH_MCP_TOKEN")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="with --http: port (path /mcp)")] = 8765,
    db: Annotated[str | None, typer.Option(help="ledger URL or SQLite path")] = None,
    git: Annotated[
        bool, typer.Option("--git", help="verified proofs go to branches, files stay unchanged")
    ] = False,
    allow_dirty: AllowDirty = False,
    *,
    flags: SettingFlags,
) -> None:
    """Serve the project to AI agents over the Model Context Protocol (stdio by default)."""
    try:
        from ..agents.mcp_server import build_server, http_app
        from ..agents.service import AgentService
    except ImportError as exc:
        raise fail(
            f"orch mcp needs the MCP SDK ({exc}): pip install 'proof-orchestrator[mcp]'",
            EXIT_BAD_INPUT,
        ) from exc
    if not project.is_dir():
        raise fail(f"{project} is not a folder", EXIT_BAD_INPUT)
    token = os.environ.get("ORCH_MCP_TOKEN") or None
    if http and not _is_loopback(host) and token is None:
        raise fail(f"refusing to serve on {host} without ORCH_MCP_TOKEN", EXIT_BAD_INPUT)
    settings = load_command_settings(project, flags)
    repo: GitRepo | None = None
    if git:
        repo = ready_repo(project, allow_dirty)
    ledger = open_ledger(db, project)
    server = build_server(AgentService(project, ledger, fill_options(settings), git=repo))
    try:
        if http:
            console.print(f"orch mcp on http://{host}:{port}/mcp (Ctrl-C stops)")
            asgi = http_app(server, host, port, token)
            import uvicorn

            uvicorn.run(asgi, host=host, port=port, log_level="warning")
        else:
            server.run()
    finally:
        ledger.close()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
