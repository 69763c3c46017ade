"""Small self-contained SVG plots for report.html (no plotting library, no network): a
scatter of points with a reference line, lines with a band, and bars with limit lines. Each
returns one ``<svg>`` element as text; every value is data the report passes in."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

W, H = 560, 290  # the plot's size in px
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 56
COLORS = {"accepted": "#2ca02c", "rejected": "#d62728", "untimed": "#7f7f7f",
          "baseline": "#1f77b4", "candidate": "#ff7f0e", "band": "#aec7e8", "limit": "#000000"}


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Ticks at a round step (1, 2, 2.5 or 5 times a power of ten) that cover [low, high] in
    about ``count`` intervals: 0, 0.5, 1, 1.5 rather than 0, 1.02, 2.04."""
    if not high > low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)]


class Axes:
    def __init__(self, x: tuple[float, float], y: tuple[float, float]) -> None:
        (x0, x1), (y0, y1) = x, y
        self.x0, self.x1 = x0, x1 if x1 > x0 else x0 + 1
        pad = (y1 - y0) * 0.08 or abs(y0) * 0.1 or 1.0
        # times and speedups are never negative: their axis does not start below zero
        low, high = (max(0.0, y0 - pad) if y0 >= 0 else y0 - pad), y1 + pad
        self.yticks = nice_ticks(low, high)
        self.y0, self.y1 = self.yticks[0], self.yticks[-1]

    def start_at_zero(self) -> None:
        """A bar chart's axis: from 0, on round ticks."""
        self.yticks = nice_ticks(0.0, self.y1)
        self.y0, self.y1 = self.yticks[0], self.yticks[-1]

    def px(self, x: float) -> float:
        return LEFT + (x - self.x0) / (self.x1 - self.x0) * (W - LEFT - RIGHT)

    def py(self, y: float) -> float:
        return H - BOTTOM - (y - self.y0) / (self.y1 - self.y0) * (H - TOP - BOTTOM)


def _tick(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _key(i: int, name: str, color: str) -> str:
    """One legend entry: a swatch, or a dashed line for a colour given as ``dashed:COLOR``."""
    x = LEFT + 8 + i * 150
    swatch = (f'<line x1="{x}" x2="{x + 12}" y1="{H - 9}" y2="{H - 9}" stroke="{color[7:]}" '
              'stroke-dasharray="4 3"/>' if color.startswith("dashed:") else
              f'<rect x="{x}" y="{H - 14}" width="10" height="10" fill="{color}"/>')
    return f'{swatch}<text x="{x + 16}" y="{H - 5}" font-size="11">{escape(name)}</text>'


def _frame(title: str, xlabel: str, ylabel: str, ax: Axes, body: list[str],
           legend: Sequence[tuple[str, str]], xticks: Sequence[tuple[float, str]] = ()) -> str:
    ticks = []
    for y in ax.yticks:
        ticks.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{ax.py(y):.1f}" y2="{ax.py(y):.1f}" '
                     'stroke="#e0e0e0"/>'
                     f'<text x="{LEFT - 6}" y="{ax.py(y) + 4:.1f}" font-size="10" '
                     f'text-anchor="end">{_tick(y)}</text>')
    for x, label in xticks:
        ticks.append(f'<line x1="{ax.px(x):.1f}" x2="{ax.px(x):.1f}" y1="{H - BOTTOM}" '
                     f'y2="{H - BOTTOM + 4}" stroke="#000"/>'
                     f'<text x="{ax.px(x):.1f}" y="{H - BOTTOM + 14}" font-size="10" '
                     f'text-anchor="middle">{escape(label)}</text>')
    keys = "".join(_key(i, name, color) for i, (name, color) in enumerate(legend))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
            f'viewBox="0 0 {W} {H}" role="img" aria-label="{escape(title)}">'
            f'<text x="{W / 2}" y="16" font-size="13" text-anchor="middle" '
            f'font-weight="bold">{escape(title)}</text>{"".join(ticks)}'
            f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#000"/>'
            f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{H - BOTTOM}" y2="{H - BOTTOM}" stroke="#000"/>'
            f'<text x="{(W + LEFT) / 2}" y="{H - BOTTOM + 26}" font-size="11" '
            f'text-anchor="middle">{escape(xlabel)}</text>'
            f'<text x="12" y="{(H - BOTTOM + TOP) / 2}" font-size="11" text-anchor="middle" '
            f'transform="rotate(-90 12 {(H - BOTTOM + TOP) / 2})">{escape(ylabel)}</text>'
            f'{"".join(body)}{keys}</svg>')


def scatter(title: str, xlabel: str, ylabel: str,
            points: Sequence[tuple[float, float, str, str]], reference: float | None,
            reference_name: str = "") -> str:
    """Points (x, y, kind, hover text) coloured by kind; a dashed reference line at y, named
    in the legend."""
    points = [p for p in points if math.isfinite(p[1])]
    ys = [y for _x, y, _k, _t in points] + ([reference] if reference is not None else [])
    xs = [x for x, _y, _k, _t in points] or [0.0]
    ax = Axes((min(xs) - 0.5, max(xs) + 0.5), (min(ys, default=0.0), max(ys, default=1.0)))
    body = []
    if reference is not None:
        body.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{ax.py(reference):.1f}" '
                    f'y2="{ax.py(reference):.1f}" stroke="{COLORS["limit"]}" '
                    'stroke-dasharray="4 3"/>')
    for x, y, kind, text in points:
        body.append(f'<circle cx="{ax.px(x):.1f}" cy="{ax.py(y):.1f}" r="6" '
                    f'fill="{COLORS[kind]}"><title>{escape(text)}</title></circle>'
                    f'<text x="{ax.px(x):.1f}" y="{H - BOTTOM + 13}" font-size="10" '
                    f'text-anchor="middle">{escape(text.split(":")[0])}</text>')
    kinds = dict.fromkeys(k for _x, _y, k, _t in points)
    legend = [(k, COLORS[k]) for k in kinds]
    if reference is not None:
        legend.append((reference_name or f"{reference:g}", f"dashed:{COLORS['limit']}"))
    return _frame(title, xlabel, ylabel, ax, body, legend)


def _round_ticks(n: int) -> list[tuple[float, str]]:
    """Round numbers 1..n on the x axis, at most about ten of them."""
    step = max(1, math.ceil(n / 10))
    return [(float(i), str(i)) for i in range(1, n + 1) if (i - 1) % step == 0 or i == n]


def lines(title: str, xlabel: str, ylabel: str, series: dict[str, Sequence[float]],
          band: tuple[float, float] | None, band_name: str) -> str:
    """One polyline per series (kind → values per round) over an optional horizontal band."""
    series = {k: [v for v in vs if math.isfinite(v)] for k, vs in series.items()}
    values = [v for vs in series.values() for v in vs] + (list(band) if band else [])
    n = max((len(vs) for vs in series.values()), default=1)
    ax = Axes((1, max(n, 2)), (min(values, default=0.0), max(values, default=1.0)))
    body = []
    if band is not None:
        top, bottom = ax.py(band[1]), ax.py(band[0])
        body.append(f'<rect x="{LEFT}" y="{top:.1f}" width="{W - LEFT - RIGHT}" '
                    f'height="{max(bottom - top, 1):.1f}" fill="{COLORS["band"]}" '
                    'fill-opacity="0.6"/>')
    for kind, vs in series.items():
        pts = " ".join(f"{ax.px(i + 1):.1f},{ax.py(v):.1f}" for i, v in enumerate(vs))
        body.append(f'<polyline points="{pts}" fill="none" stroke="{COLORS[kind]}" '
                    'stroke-width="2"/>')
        body += [f'<circle cx="{ax.px(i + 1):.1f}" cy="{ax.py(v):.1f}" r="3" '
                 f'fill="{COLORS[kind]}"><title>{kind} {v:.5g}</title></circle>'
                 for i, v in enumerate(vs)]
    legend = [(k, COLORS[k]) for k in series] + ([(band_name, COLORS["band"])] if band else [])
    return _frame(title, xlabel, ylabel, ax, body, legend, _round_ticks(n))


def bars(title: str, ylabel: str, values: Sequence[tuple[str, float, str]],
         limits: Sequence[tuple[str, float]]) -> str:
    """Bars (label, value, kind) and labelled horizontal limit lines."""
    values = [(label, v, kind) for label, v, kind in values if math.isfinite(v) and v >= 0]
    limits = [(label, v) for label, v in limits if math.isfinite(v) and v >= 0]
    top = max([v for _l, v, _k in values] + [v for _l, v in limits], default=1.0)
    ax = Axes((0, len(values)), (0.0, top))
    ax.start_at_zero()
    width = (W - LEFT - RIGHT) / max(len(values), 1) * 0.5
    body = []
    for i, (label, value, kind) in enumerate(values):
        x = ax.px(i + 0.5)
        body.append(f'<rect x="{x - width / 2:.1f}" y="{ax.py(value):.1f}" width="{width:.1f}" '
                    f'height="{ax.py(0) - ax.py(value):.1f}" fill="{COLORS[kind]}">'
                    f'<title>{escape(label)} {value:.4g}</title></rect>'
                    # the value over its bar: readable when a limit line dwarfs the bar
                    f'<text x="{x:.1f}" y="{ax.py(value) - 4:.1f}" font-size="11" '
                    f'text-anchor="middle">{value:.4g}</text>'
                    f'<text x="{x:.1f}" y="{H - BOTTOM + 28}" font-size="11" '
                    f'text-anchor="middle">{escape(label)}</text>')
    for i, (label, value) in enumerate(limits):
        body.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{ax.py(value):.1f}" '
                    f'y2="{ax.py(value):.1f}" stroke="{COLORS["limit"]}" '
                    f'stroke-dasharray="{"" if i == 0 else "5 3"}"/>'
                    f'<text x="{W - RIGHT - 4}" y="{ax.py(value) - 4:.1f}" font-size="10" '
                    f'text-anchor="end">{escape(label)}</text>')
    return _frame(title, "", ylabel, ax, body, [])
