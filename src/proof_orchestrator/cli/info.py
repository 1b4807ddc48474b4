"""Read-only commands: ``orch report``, ``orch stats``, ``orch config``, ``orch doctor``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.columns import Columns
from rich.markup import escape
from rich.table import Table

from ..backends import project_root
from ..config import ConfigError, env_name, load_settings
from ..errors import LedgerError
from ..llm.settings import NO_ENV, load_llm_settings_and_sources
from .common import (
    EXIT_BAD_INPUT,
    fail,
    open_ledger,
    out,
)
from .doctor import run_checks


def report_command(
    result: Annotated[
        Path, typer.Argument(help="a result JSON of orch bank (.orch/results/<timestamp>.json)")
    ],
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
    """Summarise the ledger: goals (broken and repaired proofs included), attempts, proofs,
    strategies, recent runs."""
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
    _print_stats(stats)


def local_time(value: str | None) -> str:
    """An ISO time from the ledger as local wall-clock time, ``2026-11-24 15:27:26``.

    SQLite gives naive times, which the ledger writes in UTC; PostgreSQL gives aware ones.
    """
    if not value:
        return ""
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def duration(seconds: float | None) -> str:
    """``0.4 s``, ``12 s``, ``3 min 12 s``, ``2 h 5 min``, ``3 d 4 h``; empty for None."""
    if seconds is None:
        return ""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def _took(run: dict[str, Any]) -> str:
    if not run["started_at"] or not run["finished_at"]:
        return ""
    started = datetime.fromisoformat(run["started_at"])
    finished = datetime.fromisoformat(run["finished_at"])
    return duration(max((finished - started).total_seconds(), 0.0))


def _counts(table: Table, counts: dict[str, int], *, first: tuple[str, ...] = ()) -> None:
    """One row per key of ``counts``: ``first`` keys in that order, then by count."""
    order = [k for k in first if k in counts]
    order += sorted((k for k in counts if k not in order), key=lambda k: (-counts[k], k))
    for key in order:
        table.add_row(key, str(counts[key]))


def _print_stats(stats: dict[str, Any]) -> None:
    """``orch stats`` for a person: tables, local times, durations.

    Skipped strategies (they cannot run on a goal, :attr:`Outcome.SKIPPED`) are
    not attempts: they are counted, with their reason, in a table of their own.
    """
    goals: dict[str, int] = stats["goals"]
    attempts: dict[str, int] = stats["attempts"]
    skipped = int(stats.get("skipped", 0))
    summary = Table(title="Ledger", show_header=False, title_justify="left")
    summary.add_column("what", style="bold")
    summary.add_column("value", overflow="fold")
    summary.add_row("ledger", stats["url"])
    proved = goals.get("proved", 0)
    summary.add_row("goals", f"{sum(goals.values())} ({proved} proved)" if goals else "none")
    modulo: list[dict[str, Any]] = stats.get("modulo_holes", [])
    if proved:
        summary.add_row(
            "proved",
            f"{proved - len(modulo)} closed, {len(modulo)} closed modulo holes still open",
        )
    broken, repaired = goals.get("broken", 0), goals.get("repaired", 0)
    if broken or repaired:
        summary.add_row(
            "broken proofs",
            f"{broken + repaired} found by orch repair: {repaired} repaired, {broken} still broken",
        )
    summary.add_row("attempts", str(sum(attempts.values())) if attempts else "none")
    if skipped:
        summary.add_row("skipped", f"{skipped} (strategies that cannot run there; not attempts)")
    summary.add_row("verified proofs", str(stats["proofs"]))
    summary.add_row("prover CPU", duration(stats["cpu_seconds"]))
    out.print(summary)
    llm = stats["llm"]
    if llm["attempts"]:
        out.print(
            f"Model spend: ${llm['cost_usd']:.4f} on {llm['attempts']} attempts, "
            f"{llm['tokens_in']} tokens in, {llm['tokens_out']} out, "
            f"{duration(llm['llm_seconds'])} of model time"
        )
    replies: dict[str, Any] = stats.get("llm_replies", {})
    if replies.get("replies"):
        refused = ", ".join(f"{n} {kind}" for kind, n in replies["refused"].items()) or "none"
        out.print(
            f"Model replies: {replies['replies']} from {replies['requests']} requests; "
            f"{replies['scripts']} held a script (or tactics); refused by the gate: {refused}; "
            f"{replies['checked']} checked by the prover, {replies['closed']} closed their goal"
        )
    if goals or attempts:
        by_status = Table(title="Goals by status", title_justify="left")
        by_status.add_column("status")
        by_status.add_column("goals", justify="right")
        _counts(by_status, goals, first=("proved", "repaired", "broken"))
        by_outcome = Table(title="Attempts by outcome", title_justify="left")
        by_outcome.add_column("outcome")
        by_outcome.add_column("attempts", justify="right")
        _counts(by_outcome, attempts, first=("proved", "candidate"))
        out.print(Columns([by_status, by_outcome], padding=(0, 4)))
    if modulo:
        resting = Table(
            title="Proved modulo holes (closed once the holes they use are proved)",
            title_justify="left",
        )
        for column in ("lemma", "file", "uses", "still open"):
            resting.add_column(column, overflow="fold")
        for row in modulo:
            resting.add_row(
                row["name"],
                Path(row["file"]).name,
                "uses " + ", ".join(row["uses"]),
                ", ".join(row["open"]),
            )
        out.print(resting)
    strategies = sorted(stats["strategies"], key=lambda s: (-s["proved"], -s["attempts"]))
    table = Table(title="Strategies", title_justify="left")
    for column in ("strategy", "attempts", "proved", "CPU", "CPU per proof"):
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for s in strategies:
        if not s["attempts"]:
            continue
        per_proof = duration(s["cpu_seconds"] / s["proved"]) if s["proved"] else "–"
        table.add_row(
            s["strategy"],
            str(s["attempts"]),
            str(s["proved"]),
            duration(s["cpu_seconds"]),
            per_proof,
        )
    out.print(table)
    skipping = [s for s in strategies if s.get("skipped")]
    if skipping:
        skips = Table(
            title="Skipped (the strategy cannot run there; not counted as attempts)",
            title_justify="left",
        )
        skips.add_column("strategy")
        skips.add_column("times", justify="right")
        skips.add_column("reason", overflow="fold")
        for s in sorted(skipping, key=lambda s: -s["skipped"]):
            skips.add_row(s["strategy"], str(s["skipped"]), s.get("skipped_reason") or "")
        out.print(skips)
    runs = Table(title="Recent runs (local time)", title_justify="left")
    for column in ("id", "command", "status", "started", "finished", "took"):
        runs.add_column(
            column,
            justify="right" if column in ("id", "took") else "left",
            # a time or a duration is read whole: the other columns give way
            no_wrap=column in ("started", "finished", "took"),
        )
    for r in stats["recent_runs"]:
        runs.add_row(
            str(r["id"]),
            r["command"],
            r["status"],
            local_time(r["started_at"]),
            local_time(r["finished_at"]),
            _took(r),
        )
    out.print(runs)


def config_command(
    path: Annotated[Path, typer.Argument(help="a project folder or file")] = Path("."),
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show every setting (the model provider's too), its value and where it comes from
    (flag > env > file > default)."""
    if not path.exists():
        raise fail(f"{path} does not exist", EXIT_BAD_INPUT)
    root = project_root(path)
    try:
        settings, sources = load_settings(root)
        llm, llm_sources = load_llm_settings_and_sources(root)
    except ConfigError as exc:
        raise fail(str(exc), EXIT_BAD_INPUT) from exc
    rows = [
        (name, getattr(settings, name), sources[name], env_name(name))
        for name in settings.__slots__
    ]
    # the model provider's table; the key is never shown, only whether it is set
    rows += [
        (
            f"llm.{name}",
            ("(set)" if llm.api_key else "") if name == "api_key" else getattr(llm, name),
            source,
            "" if name in NO_ENV else env_name(name, "ORCH_LLM_"),
        )
        for name, source in llm_sources.items()
    ]
    if as_json:
        out.print_json(json.dumps({n: {"value": v, "source": src} for n, v, src, _ in rows}))
        return
    table = Table(title="orch config")
    for column in ("setting", "value", "source", "environment variable"):
        table.add_column(column)
    for name, value, source, env in rows:
        # a file's table name ("[tool.orch]") is text, not rich markup
        table.add_row(name, escape(str(value)), escape(source), env)
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
