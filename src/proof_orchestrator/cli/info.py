"""Read-only commands: ``orch report``, ``orch stats``, ``orch config``, ``orch doctor``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..backends import project_root
from ..config import ConfigError, env_name, load_settings
from ..errors import LedgerError
from .common import (
    EXIT_BAD_INPUT,
    fail,
    open_ledger,
    out,
)
from .doctor import run_checks


def report_command(
    result: Annotated[Path, typer.Argument(help="a bench/results/<timestamp>.json file")],
    fmt: Annotated[str, typer.Option("--format", help="html or md")] = "html",
    out_path: Annotated[
        Path | None, typer.Option("--out", help="where to write (default: next to the JSON)")
    ] = None,
) -> None:
    """Render a benchmark result as an HTML (with plots) or Markdown report."""
    if fmt not in ("html", "md"):
        raise fail("--format must be html or md", EXIT_BAD_INPUT)
    # imported here: the dashboard's web stack costs every other command 0.3 s at start-up
    from ..dashboard.report import render_html, render_markdown

    try:
        data = json.loads(result.read_text(encoding="utf-8"))
        text = render_html(data) if fmt == "html" else render_markdown(data)
    except FileNotFoundError as exc:
        raise fail(f"{result} does not exist", EXIT_BAD_INPUT) from exc
    except (ValueError, KeyError) as exc:
        raise fail(f"{result} is not an orch bank result: {exc}", EXIT_BAD_INPUT) from exc
    target = out_path or result.with_suffix(f".{fmt}")
    target.write_text(text, encoding="utf-8")
    out.print(f"report written to {target}")


def stats_command(
    path: Annotated[
        Path, typer.Argument(help="a project folder or file (finds its ledger)")
    ] = Path("."),
    db: Annotated[str | None, typer.Option(help="ledger URL or SQLite path")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Summarise the ledger: goals, attempts, proofs, strategies, recent runs."""
    if not path.exists():
        raise fail(f"{path} does not exist", EXIT_BAD_INPUT)
    ledger = open_ledger(db, path)
    try:
        stats = ledger.stats()
    except LedgerError as exc:
        raise fail(str(exc)) from exc
    finally:
        ledger.close()
    if as_json:
        out.print_json(json.dumps(stats))
        return
    out.print(f"Ledger: {stats['url']}")
    out.print(
        f"Goals: {stats['goals'] or 'none'}; attempts: {stats['attempts'] or 'none'}; "
        f"verified proofs: {stats['proofs']}; CPU: {stats['cpu_seconds']:.1f} s"
    )
    llm = stats["llm"]
    if llm["attempts"]:
        out.print(
            f"Model spend: ${llm['cost_usd']:.4f} on {llm['attempts']} attempts, "
            f"{llm['tokens_in']} tokens in, {llm['tokens_out']} out, {llm['llm_seconds']:.1f} s"
        )
    table = Table(title="Strategies")
    for column in ("strategy", "attempts", "proved", "cpu s"):
        table.add_column(column)
    for s in stats["strategies"]:
        table.add_row(
            s["strategy"], str(s["attempts"]), str(s["proved"]), f"{s['cpu_seconds']:.1f}"
        )
    out.print(table)
    runs = Table(title="Recent runs")
    for column in ("id", "command", "status", "started", "finished"):
        runs.add_column(column)
    for r in stats["recent_runs"]:
        runs.add_row(
            str(r["id"]), r["command"], r["status"], r["started_at"] or "", r["finished_at"] or ""
        )
    out.print(runs)


def config_command(
    path: Annotated[Path, typer.Argument(help="a project folder or file")] = Path("."),
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show every setting, its value and where it comes from (flag > env > file > default)."""
    if not path.exists():
        raise fail(f"{path} does not exist", EXIT_BAD_INPUT)
    try:
        settings, sources = load_settings(project_root(path))
    except ConfigError as exc:
        raise fail(str(exc), EXIT_BAD_INPUT) from exc
    rows = [(name, getattr(settings, name), sources[name]) for name in settings.__slots__]
    if as_json:
        out.print_json(json.dumps({n: {"value": v, "source": src} for n, v, src in rows}))
        return
    table = Table(title="orch config")
    for column in ("setting", "value", "source", "environment variable"):
        table.add_column(column)
    for name, value, source in rows:
        table.add_row(name, str(value), source, env_name(name))
    out.print(table)


def doctor_command(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Which provers and tools are available, with versions, and what is missing."""
    checks = run_checks()
    if as_json:
        out.print_json(
            json.dumps(
                [
                    c.__dict__
                    if hasattr(c, "__dict__")
                    else {
                        "name": c.name,
                        "found": c.found,
                        "version": c.version,
                        "detail": c.detail,
                        "need": c.need,
                    }
                    for c in checks
                ]
            )
        )
    else:
        table = Table(title="orch doctor")
        for column in ("tool", "status", "version", "detail", "needed for"):
            table.add_column(column)
        for c in checks:
            status = (
                "[green]found[/]"
                if c.found
                else ("[red]missing[/]" if c.need == "required" else "[yellow]missing[/]")
            )
            table.add_row(
                c.name,
                status,
                c.version,
                c.detail,
                "the Coq pipeline" if c.need == "required" else "optional",
            )
        out.print(table)
    if any(c.need == "required" and not c.found for c in checks):
        raise typer.Exit(1)
