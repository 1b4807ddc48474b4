"""Charts of the dashboard and of ``orch report``, drawn by Plotly in the browser.

Figures are built with Plotly's Python API and rendered as a ``<div>`` with
the call that draws it. Pages load ``plotly.min.js`` once, from the installed
``plotly`` package (:data:`PLOTLY_JS`): the dashboard serves it, a report
inlines it. No CDN, works offline. Every chart has axis titles with units,
tick labels, and the values on hover; time series have the time on the x-axis.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from html import escape
from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io as pio

__all__ = [
    "PLOTLY_JS",
    "Series",
    "bar_chart",
    "line_chart",
    "plotly_js",
    "render",
]

#: the minified Plotly bundle shipped inside the plotly package
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"

#: a named line: (name, points); x is a time or a number, y a number
Series = tuple[str, Sequence[tuple[datetime | float, float]]]

_CONFIG = {"displaylogo": False, "responsive": True}


@functools.cache
def plotly_js() -> str:
    """The text of :data:`PLOTLY_JS` (read once)."""
    return PLOTLY_JS.read_text(encoding="utf-8")


def _layout(fig: go.Figure, title: str, x_title: str, y_title: str) -> None:
    fig.update_layout(
        title={"text": title, "x": 0.01, "font": {"size": 15}},
        template="plotly_white",
        height=300,
        margin={"l": 60, "r": 20, "t": 45, "b": 50},
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"},
    )
    fig.update_xaxes(title_text=x_title, showline=True, linecolor="#888", ticks="outside")
    fig.update_yaxes(title_text=y_title, showline=True, linecolor="#888", ticks="outside")


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_title: str,
    y_title: str,
    y_format: str = "",
    y_range: tuple[float, float] | None = None,
    reference: tuple[str, float] | None = None,
    step: bool = False,
) -> go.Figure | None:
    """Lines with a marker per point; None when no series has a point.

    ``y_format`` is a d3 format for ticks and hover (``".0%"``); ``reference``
    draws a dashed horizontal line with that name (a target).
    """
    if not any(points for _, points in series):
        return None
    fig = go.Figure()
    time_axis = any(isinstance(x, datetime) for _, points in series for x, _ in points)
    x_hover = "%{x|%Y-%m-%d %H:%M:%S}" if time_axis else "%{x:.3~f}"
    y_hover = f"%{{y:{y_format}}}" if y_format else "%{y:.4~g}"
    for name, points in series:
        fig.add_trace(
            go.Scatter(
                x=[x for x, _ in points],
                y=[y for _, y in points],
                name=name,
                mode="lines+markers",
                marker={"size": 4},
                line={"shape": "hv" if step else "linear"},
                hovertemplate=f"{x_hover}<br>{escape(name)}: {y_hover}<extra></extra>",
            )
        )
    if reference is not None:
        label, value = reference
        xs = [x for _, points in series for x, _ in points]
        fig.add_trace(
            go.Scatter(
                x=[min(xs), max(xs)],
                y=[value, value],
                name=label,
                mode="lines",
                line={"dash": "dash", "color": "#c33"},
                hovertemplate=f"{escape(label)}: {y_hover}<extra></extra>",
            )
        )
    _layout(fig, title, x_title, y_title)
    if y_format:
        fig.update_yaxes(tickformat=y_format)
    if y_range is not None:
        fig.update_yaxes(range=list(y_range))
    return fig


def bar_chart(
    bars: Sequence[tuple[str, float]],
    *,
    title: str,
    value_title: str,
    category_title: str,
    value_format: str = ".4~g",
) -> go.Figure | None:
    """Horizontal bars, one per label, the value printed beside each; None without bars."""
    if not bars:
        return None
    fig = go.Figure(
        go.Bar(
            x=[value for _, value in bars],
            y=[label for label, _ in bars],
            orientation="h",
            marker={"color": "#48c"},
            text=[_label(value, value_format) for _, value in bars],
            textposition="outside",
            cliponaxis=False,
            hovertemplate=f"%{{y}}: %{{x:{value_format}}} {escape(value_title)}<extra></extra>",
        )
    )
    _layout(fig, title, value_title, category_title)
    # room on the right for the value printed past the longest bar
    fig.update_layout(height=max(220, 90 + 32 * len(bars)), margin={"r": 50})
    fig.update_yaxes(autorange="reversed")
    if "%" in value_format:
        fig.update_xaxes(tickformat=value_format)
    return fig


def _label(value: float, d3_format: str) -> str:
    """``value`` printed as the d3 format ``d3_format`` prints it (the formats used here)."""
    if d3_format == "d":
        return str(round(value))
    return format(value, d3_format.replace("~", ""))


def render(fig: go.Figure | None, chart_id: str, title: str) -> str:
    """The ``<div>`` that draws ``fig`` (``plotly.min.js`` must be loaded before it)."""
    if fig is None:
        return (
            f'<div class="chart chart-empty" id="{escape(chart_id)}">'
            f"<b>{escape(title)}</b><p>no data yet</p></div>"
        )
    html: str = pio.to_html(
        fig, include_plotlyjs=False, full_html=False, div_id=chart_id, config=_CONFIG
    )
    return f'<div class="chart" data-title="{escape(title)}">{html}</div>'
