"""``orch report``: a benchmark result (bank JSON) as an HTML or Markdown report with plots."""

from __future__ import annotations

from html import escape
from typing import Any

from .charts import bar_chart, line_chart

__all__ = ["render_html", "render_markdown"]


def _solved_over_time(result: dict[str, Any]) -> list[tuple[float, float]]:
    """Cumulative solved lemmas against cumulative CPU seconds (the order they were attempted)."""
    points: list[tuple[float, float]] = []
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


def render_html(result: dict[str, Any]) -> str:
    totals = result["totals"]
    trace = [(s["t"], s["fraction"]) for s in result.get("cpu_trace", [])]
    target = result.get("settings", {}).get("cpu_target")
    charts = [
        line_chart(
            _solved_over_time(result),
            title="Solved vs CPU time",
            x_label="cumulative search CPU s",
            y_label="solved",
        ),
        bar_chart(
            [(k, v["solved"]) for k, v in sorted(result.get("per_strategy", {}).items())],
            title="Solved per strategy",
        ),
        bar_chart(
            [(k, v["rate"]) for k, v in sorted(result.get("by_level", {}).items())],
            title="Rate per level",
        ),
        bar_chart(
            [(k, v["rate"]) for k, v in sorted(result.get("by_domain", {}).items())],
            title="Rate per domain",
        ),
    ]
    if trace:
        charts.append(
            line_chart(
                trace,
                title="CPU of the process tree",
                x_label="seconds",
                y_label="fraction of the machine",
                y_max=1.0,
                reference=target,
            )
        )
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
        "td,th{border:1px solid #ccc;padding:.2rem .5rem}.chart{width:560px;margin:.5rem}</style>"
        f"</head><body><h1>Benchmark {escape(result['timestamp'])}</h1>"
        f"<p>{totals['solved']}/{totals['lemmas']} solved ({totals['rate']:.1%}) with Coq "
        f"{escape(str(result.get('prover_version', '')))}; {totals['wall_seconds']:.1f} s wall, "
        f"{totals['search_cpu_seconds']:.1f} s search CPU.</p>"
        + "".join(charts)
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
