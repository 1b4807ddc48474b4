"""The overview's charts, from what the ledger holds (each a rendered Plotly ``<div>``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ..ledger import LedgerReader
from ..scheduler.queue import difficulty
from .charts import bar_chart, line_chart, render

__all__ = ["overview_charts"]

_DIFFICULTY_ORDER = ("< 2", "2–4", "4–6", "≥ 6")


def _utc(value: datetime) -> datetime:
    """A naive UTC time (SQLite gives naive, PostgreSQL aware datetimes)."""
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def _trace_times(run: dict[str, Any], key: str) -> list[tuple[datetime | float, float]]:
    """A run's per-second trace against the time of day.

    The trace counts seconds from its CPU governor's start, made just before
    the run's row, so ``started_at + t`` is the sample's time to within the
    run's start-up (well under a second).
    """
    start = _utc(datetime.fromisoformat(run["started_at"]))
    return [(start + timedelta(seconds=float(t)), float(v)) for t, v in run["summary"][key]]


def _difficulty_label(level: float) -> str:
    return "< 2" if level < 2 else "2–4" if level < 4 else "4–6" if level < 6 else "≥ 6"


def overview_charts(reader: LedgerReader, strategies: list[dict[str, Any]]) -> dict[str, str]:
    """Solved over time, CPU share against target, memory, per-strategy proofs and cost, queue."""
    solved = [(_utc(t), float(n)) for t, n in reader.proofs_over_time()]
    runs = reader.runs()
    latest = next((r for r in runs if r["summary"].get("cpu_trace")), None)
    cpu = _trace_times(latest, "cpu_trace") if latest else []
    target = latest["summary"].get("cpu_target") if latest else None
    memory = (
        _trace_times(latest, "prover_rss_mb")
        if latest and latest["summary"].get("prover_rss_mb")
        else []
    )
    buckets: dict[str, int] = {}
    for statement in reader.open_statements():  # not every goal: linear in the open ones
        label = _difficulty_label(difficulty(statement))
        buckets[label] = buckets.get(label, 0) + 1
    suffix = f" (run {latest['id']}, {latest['command']})" if latest else ""
    figures = {
        "solved": (
            "Verified proofs over time",
            line_chart(
                [("proofs", solved)],
                title="Verified proofs over time",
                x_title="time (UTC)",
                y_title="proofs (cumulative)",
                step=True,
            ),
        ),
        "cpu": (
            "CPU share against target",
            line_chart(
                [("measured share", cpu)],
                title="CPU of the process tree against its target" + suffix,
                x_title="time (UTC)",
                y_title="share of the machine (%)",
                y_format=".0%",
                y_range=(0.0, 1.0),
                reference=("target", float(target)) if target is not None else None,
            ),
        ),
        "strategy": (
            "Proofs by strategy",
            bar_chart(
                [(s["strategy"], float(s["proved"])) for s in strategies],
                title="Verified proofs by strategy",
                value_title="proofs",
                category_title="strategy",
                value_format="d",
            ),
        ),
        "cost": (
            "CPU seconds per proof",
            bar_chart(
                [
                    (s["strategy"], s["cpu_seconds"] / s["proved"])
                    for s in strategies
                    if s["proved"]
                ],
                title="CPU per verified proof, by strategy",
                value_title="CPU s per proof",
                category_title="strategy",
                value_format=".2f",
            ),
        ),
        "memory": (
            "Largest prover process",
            line_chart(
                [("largest prover", memory)],
                title="Largest prover process (RSS)" + suffix,
                x_title="time (UTC)",
                y_title="resident memory (MiB)",
            ),
        ),
        "queue": (
            "Open goals by estimated difficulty",
            bar_chart(
                [(k, float(buckets[k])) for k in _DIFFICULTY_ORDER if k in buckets],
                title="Open goals by estimated difficulty",
                value_title="goals",
                category_title="difficulty",
                value_format="d",
            ),
        ),
    }
    return {key: render(fig, f"chart-{key}", title) for key, (title, fig) in figures.items()}
