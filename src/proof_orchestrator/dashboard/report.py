"""``orch report``: a benchmark result (bank JSON) as an HTML or Markdown report with plots.

The HTML report is one self-contained file: Plotly's bundle is inlined, so it
opens offline (about 5 MB).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from html import escape
from typing import Any

from .charts import bar_chart, line_chart, plotly_js, render

__all__ = ["render_html", "render_markdown"]


def _solved_over_time(result: dict[str, Any]) -> list[tuple[datetime | float, float]]:
    """Cumulative solved lemmas against cumulative CPU seconds (the order they were attempted)."""
    points: list[tuple[datetime | float, float]] = []
    cpu = 0.0
    solved = 0
    for row in result.get("lemmas", []):
        cpu += row.get("cpu_seconds", 0.0)
        solved += int(row.get("solved", False))
        points.append((cpu, solved))
    return points


def _table_rows(groups: dict[str, dict[str, Any]]) -> list[tuple[str, int, int, float, float]]:
    return [
        (name, g["solved"], g["total"], g["rate"], g["cpu_seconds"])
        for name, g in sorted(groups.items())
    ]


def _cpu_trace(result: dict[str, Any]) -> list[tuple[datetime | float, float]]:
    """The CPU trace against the time of day (the run started at its timestamp)."""
    start = datetime.strptime(result["timestamp"], "%Y%m%dT%H%M%SZ")
    return [
        (start + timedelta(seconds=float(s["t"])), float(s["fraction"]))
        for s in result.get("cpu_trace", [])
    ]


def _charts(result: dict[str, Any]) -> str:
    target = result.get("settings", {}).get("cpu_target")
    figures = [
        line_chart(
            [("solved", _solved_over_time(result))],
            title="Solved against search CPU",
            x_title="cumulative search CPU (s)",
            y_title="lemmas solved",
            step=True,
        ),
        bar_chart(
            [(k, float(v["solved"])) for k, v in sorted(result.get("per_strategy", {}).items())],
            title="Solved per strategy",
            value_title="lemmas solved",
            category_title="strategy",
            value_format="d",
        ),
        bar_chart(
            [(k, v["rate"]) for k, v in sorted(result.get("by_level", {}).items())],
            title="Rate per level",
            value_title="solved (%)",
            category_title="level",
            value_format=".0%",
        ),
        bar_chart(
            [(k, v["rate"]) for k, v in sorted(result.get("by_domain", {}).items())],
            title="Rate per domain",
            value_title="solved (%)",
            category_title="domain",
            value_format=".0%",
        ),
        line_chart(
            [("measured share", _cpu_trace(result))],
            title="CPU of the process tree against its target",
            x_title="time (UTC)",
            y_title="share of the machine (%)",
            y_format=".0%",
            y_range=(0.0, 1.0),
            reference=("target", float(target)) if target is not None else None,
        ),
    ]
    return "".join(
        render(fig, f"chart-{i}", "")
        for i, fig in enumerate(figures)
        if fig is not None  # a chart without data is left out of a report
    )


def render_html(result: dict[str, Any]) -> str:
    totals = result["totals"]
    tables = []
    for key, title in (("by_domain", "By domain"), ("by_level", "By level")):
        rows = "".join(
            f"<tr><td>{escape(n)}</td><td>{s}</td><td>{t}</td><td>{r:.0%}</td><td>{c:.1f}</td></tr>"
            for n, s, t, r, c in _table_rows(result.get(key, {}))
        )
        tables.append(
            f"<h2>{title}</h2><table><tr><th>category</th><th>solved</th><th>total</th>"
            f"<th>rate</th><th>CPU s</th></tr>{rows}</table>"
        )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Bank {escape(result['timestamp'])}</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:1.5rem}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.2rem .5rem}"
        ".chart{display:inline-block;vertical-align:top;width:640px;max-width:100%;margin:.5rem}"
        "</style>"
        f"<script>{plotly_js()}</script>"
        f"</head><body><h1>Benchmark {escape(result['timestamp'])}</h1>"
        f"<p>{totals['solved']}/{totals['lemmas']} solved ({totals['rate']:.1%}) with Coq "
        f"{escape(str(result.get('prover_version', '')))}; {totals['wall_seconds']:.1f} s wall, "
        f"{totals['search_cpu_seconds']:.1f} s search CPU.</p>"
        + _charts(result)
        + "".join(tables)
        + "</body></html>"
    )


def render_markdown(result: dict[str, Any]) -> str:
    totals = result["totals"]
    lines = [
        f"# Benchmark {result['timestamp']}",
        "",
        f"{totals['solved']}/{totals['lemmas']} solved ({totals['rate']:.1%}) with Coq "
        f"{result.get('prover_version', '')}; {totals['wall_seconds']:.1f} s wall, "
        f"{totals['search_cpu_seconds']:.1f} s search CPU.",
    ]
    for key, title in (("by_domain", "By domain"), ("by_level", "By level")):
        lines += [
            "",
            f"## {title}",
            "",
            "| category | solved | total | rate | CPU s |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {n} | {s} | {t} | {r:.0%} | {c:.1f} |"
            for n, s, t, r, c in _table_rows(result.get(key, {}))
        ]
    lines += ["", "## By strategy", "", "| strategy | solved | CPU s |", "|---|---|---|"]
    lines += [
        f"| {k} | {v['solved']} | {v['cpu_seconds']:.1f} |"
        for k, v in sorted(result.get("per_strategy", {}).items())
    ]
    summary = result.get("cpu_trace_summary", {}).get("all")
    if summary:
        lines += [
            "",
            f"CPU of the process tree: mean {summary['mean']:.2f}, p10 {summary['p10']:.2f}, "
            f"p90 {summary['p90']:.2f} ({summary['samples']} samples).",
        ]
    lines += ["", "Plots: render this result as HTML (`orch report RESULT.json --format html`)."]
    return "\n".join(lines) + "\n"
