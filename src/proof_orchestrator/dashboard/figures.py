"""The overview's charts, from what the ledger holds (each a rendered Plotly ``<div>``).

The CPU-share and memory charts follow a command while it runs: they draw
the trace it publishes with its live state (``state["cpu"]["trace"]``, see
:func:`proof_orchestrator.run.live.live_trace`), and the last finished run's
trace otherwise. :func:`live_figures` gives the same two figures as JSON, for
the page to redraw them as the run goes on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from ..ledger import LedgerReader
from ..scheduler.queue import difficulty
from .charts import bar_chart, line_chart, render

__all__ = ["live_figures", "overview_charts"]

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


def _live_trace_times(trace: dict[str, Any], key: str) -> list[tuple[datetime | float, float]]:
    """A live trace's column ``key`` against the time of day (see the module's docstring)."""
    end = _utc(datetime.fromisoformat(trace["end"]))
    times = [float(t) for t in trace["t"]]
    last = times[-1] if times else 0.0
    return [
        (end - timedelta(seconds=last - t), float(v))
        for t, v in zip(times, trace[key], strict=False)
    ]


@dataclass(frozen=True, slots=True)
class _Traces:
    """The CPU and memory series the two run charts draw, and where they come from."""

    cpu: list[tuple[datetime | float, float]]
    memory: list[tuple[datetime | float, float]]
    target: float | None
    #: "(run 7, fill, running)" or "(run 6, fill)"; empty without a run
    label: str
    #: drawn from a command running now
    running: bool = False


def _running_trace(live_runs: list[dict[str, Any]]) -> _Traces | None:
    """The trace of the newest live run that publishes one (dead runs are left out)."""
    for run in sorted(live_runs, key=lambda r: r["run_id"], reverse=True):
        cpu = run["state"].get("cpu") or {}
        trace = cpu.get("trace")
        if run.get("dead") or not trace or not trace.get("t"):
            continue
        return _Traces(
            _live_trace_times(trace, "cpu_share"),
            _live_trace_times(trace, "largest_prover_mb"),
            cpu.get("target"),
            f" (run {run['run_id']}, {run['command']}, running)",
            running=True,
        )
    return None


def _run_traces(reader: LedgerReader, live_runs: list[dict[str, Any]] | None) -> _Traces:
    running = _running_trace(live_runs if live_runs is not None else reader.live())
    if running is not None:
        return running
    latest = next((r for r in reader.runs() if r["summary"].get("cpu_trace")), None)
    if latest is None:
        return _Traces([], [], None, "")
    memory = _trace_times(latest, "prover_rss_mb") if latest["summary"].get("prover_rss_mb") else []
    return _Traces(
        _trace_times(latest, "cpu_trace"),
        memory,
        latest["summary"].get("cpu_target"),
        f" (run {latest['id']}, {latest['command']})",
    )


def _cpu_figure(traces: _Traces) -> go.Figure | None:
    return line_chart(
        [("measured share", traces.cpu)],
        title="CPU of the process tree against its target" + traces.label,
        x_title="time (UTC)",
        y_title="share of the machine (%)",
        y_format=".0%",
        y_range=(0.0, 1.0),
        reference=("target", float(traces.target)) if traces.target is not None else None,
    )


def _memory_figure(traces: _Traces) -> go.Figure | None:
    return line_chart(
        [("largest prover", traces.memory)],
        title="Largest prover process (RSS)" + traces.label,
        x_title="time (UTC)",
        y_title="resident memory (MiB)",
    )


def live_figures(reader: LedgerReader) -> dict[str, Any]:
    """The CPU-share and memory figures as Plotly JSON (None without data), and their run."""
    traces = _run_traces(reader, None)
    figures = {"cpu": _cpu_figure(traces), "memory": _memory_figure(traces)}
    return {
        "running": traces.running,
        "figures": {
            key: None if fig is None else json.loads(pio.to_json(fig, validate=False))
            for key, fig in figures.items()
        },
    }


def _difficulty_label(level: float) -> str:
    return "< 2" if level < 2 else "2–4" if level < 4 else "4–6" if level < 6 else "≥ 6"


def overview_charts(
    reader: LedgerReader,
    strategies: list[dict[str, Any]],
    live_runs: list[dict[str, Any]] | None = None,
) -> dict[str, str]:
    """Solved over time, CPU share against target, memory, per-strategy proofs and cost, queue.

    The CPU and memory charts show the running command's trace while one runs
    (``live_runs``, read from the ledger when not given), else the last finished run's.
    """
    solved = [(_utc(t), float(n)) for t, n in reader.proofs_over_time()]
    traces = _run_traces(reader, live_runs)
    buckets: dict[str, int] = {}
    for statement in reader.open_statements():  # not every goal: linear in the open ones
        label = _difficulty_label(difficulty(statement))
        buckets[label] = buckets.get(label, 0) + 1
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
        "cpu": ("CPU share against target", _cpu_figure(traces)),
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
        "memory": ("Largest prover process", _memory_figure(traces)),
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
