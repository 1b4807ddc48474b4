"""Small SVG charts drawn on the server: no JavaScript library, no CDN, work offline."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["bar_chart", "line_chart"]

_W, _H, _PAD = 560, 220, 36


def _empty(title: str) -> str:
    return (
        f'<svg class="chart" role="img" aria-label="{escape(title)}">'
        '<text x="10" y="20">no data yet</text></svg>'
    )


def line_chart(
    points: Sequence[tuple[float, float]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    y_max: float | None = None,
    reference: float | None = None,
) -> str:
    """A polyline with a dot per data point (class ``point``), optional horizontal reference."""
    if not points:
        return _empty(title)
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    top = y_max if y_max is not None else max(max(ys), reference or 0.0) or 1.0
    span_x = (x1 - x0) or 1.0

    def sx(x: float) -> float:
        return _PAD + (x - x0) / span_x * (_W - 2 * _PAD)

    def sy(y: float) -> float:
        return _H - _PAD - min(y, top) / top * (_H - 2 * _PAD)

    path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
    dots = "".join(
        f'<circle class="point" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5">'
        f"<title>{x:.1f}, {y:.3g}</title></circle>"
        for x, y in points
    )
    ref = ""
    if reference is not None:
        ref = (
            f'<line class="reference" x1="{_PAD}" x2="{_W - _PAD}" y1="{sy(reference):.1f}" '
            f'y2="{sy(reference):.1f}" stroke="#c33" stroke-dasharray="4 3"/>'
        )
    return (
        f'<svg class="chart" viewBox="0 0 {_W} {_H}" role="img" aria-label="{escape(title)}">'
        f'<text x="{_PAD}" y="16" font-weight="bold">{escape(title)}</text>'
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#888"/>'
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" stroke="#888"/>'
        f'<text x="{_W / 2}" y="{_H - 6}" text-anchor="middle">{escape(x_label)}</text>'
        f'<text x="4" y="{_PAD - 6}">{escape(y_label)} (max {top:.3g})</text>'
        f'{ref}<polyline fill="none" stroke="#2a6" stroke-width="2" points="{path}"/>{dots}</svg>'
    )


def bar_chart(bars: Sequence[tuple[str, float]], *, title: str) -> str:
    """Horizontal bars (class ``bar``), one per label."""
    if not bars:
        return _empty(title)
    top = max(v for _, v in bars) or 1.0
    row = 22
    height = _PAD + row * len(bars)
    items = []
    for i, (label, value) in enumerate(bars):
        y = _PAD + i * row
        width = value / top * (_W - 200)
        items.append(
            f'<text x="4" y="{y + 14}">{escape(label)}</text>'
            f'<rect class="bar" x="140" y="{y + 2}" width="{width:.1f}" height="16" fill="#48c">'
            f"<title>{escape(label)}: {value:.3g}</title></rect>"
            f'<text x="{146 + width:.1f}" y="{y + 14}">{value:.3g}</text>'
        )
    return (
        f'<svg class="chart" viewBox="0 0 {_W} {height}" role="img" aria-label="{escape(title)}">'
        f'<text x="4" y="16" font-weight="bold">{escape(title)}</text>{"".join(items)}</svg>'
    )
