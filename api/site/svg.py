"""Server-side SVG pictures: interval bars, a ROC curve, accuracy by category, a paired difference.

Drawn on the server, so the pages need no chart library, no JavaScript and no network, and each
picture is a few kilobytes of plain SVG that prints and scales with the page. Every picture has a
``<title>`` and ``role="img"`` with an ``aria-label`` saying in words what it shows, and every text
that comes from the data is escaped. Coordinates are rounded to 0.1 px to keep pages small.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

AXIS = "#6b7280"
GRID = "#e5e7eb"
INK = "#1d4ed8"
REFERENCE = "#b45309"
_NICE_STEPS = (1, 2, 2.5, 5, 10)


def _n(x: float) -> str:
    """A coordinate: one decimal at most, no trailing zeros."""
    text = f"{x:.1f}"
    return text.removesuffix(".0")


def _label(value: float) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _svg(width: float, height: float, label: str, body: list[str], css_class: str) -> Markup:
    return Markup(
        f'<svg class="{css_class}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(width)} {_n(height)}" '
        f'width="{_n(width)}" height="{_n(height)}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg>"
    )


@dataclass(frozen=True)
class Scale:
    """A linear map from metric values [low, high] to pixels [left, right]."""

    low: float
    high: float

    def x(self, value: float, left: float, right: float) -> float:
        span = self.high - self.low
        frac = (value - self.low) / span if span > 0 else 0.5
        return left + min(max(frac, 0.0), 1.0) * (right - left)

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies on the axis (a reference line outside it is not drawn, nor mentioned)."""
        return self.low <= value <= self.high

    def ticks(self, most: int = 5) -> list[float]:
        step = nice_step((self.high - self.low) / max(most - 1, 1))
        first = math.ceil(self.low / step - 1e-9) * step
        out, value = [], first
        while value <= self.high + 1e-9:
            out.append(round(value, 10))
            value += step
        return out


def nice_step(raw: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k that is at least ``raw``."""
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    for m in _NICE_STEPS:
        if m * power >= raw - 1e-12:
            return m * power
    return 10 * power


def interval_scale(lows: Sequence[float], highs: Sequence[float], bounds: tuple[float, float] | None = (0.0, 1.0)) -> Scale:
    """A scale holding every interval with some margin, widened to nice ticks, kept inside ``bounds``."""
    finite = [v for v in (*lows, *highs) if v is not None and math.isfinite(v)]
    if not finite:
        return Scale(*(bounds or (0.0, 1.0)))
    low, high = min(finite), max(finite)
    span = max(high - low, 0.02)
    step = nice_step(span / 4)
    low = math.floor((low - span * 0.05) / step) * step
    high = math.ceil((high + span * 0.05) / step) * step
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return Scale(round(low, 10), round(high, 10))


MIN_BAND_PX = 40.0  # an interval narrower than this on screen reads as a dot (issue #40: bars of 9 px)
BAR_WIDTH = 180.0


def focus_scale(intervals: Sequence[tuple[float, float]], width: float = BAR_WIDTH,
                minimum: float = MIN_BAND_PX) -> Scale:
    """The leaderboard's shared axis, focused so that every interval drawn on it is at least
    ``minimum`` px wide: rows are taken in board order (the leaders first) while the axis holding them
    keeps each of their intervals that wide; a row left out is drawn as an arrow at the axis' edge
    (``ci_bar``), its numbers beside it in the table. One interval always fits (it spans the axis)."""
    inner = width - 12.0
    kept: list[tuple[float, float]] = []
    scale = interval_scale([], [])
    for low, high in intervals:
        if not (math.isfinite(low) and math.isfinite(high)):
            continue
        trial = [*kept, (low, high)]
        candidate = interval_scale([lo for lo, _ in trial], [hi for _, hi in trial])
        span = candidate.high - candidate.low
        if not kept or span <= 0 or min(hi - lo for lo, hi in trial) / span * inner >= minimum:
            kept, scale = trial, candidate
    return scale


def ci_bar(value: float, ci_low: float, ci_high: float, scale: Scale, *, reference: float | None = None,
           width: float = BAR_WIDTH, height: float = 22) -> Markup:
    """One interval as a bar with a dot at the estimate, on a scale shared by a whole leaderboard; an
    interval not wholly on the axis (``focus_scale`` left it out) is an arrow at the edge it lies past."""
    left, right, mid = 6.0, width - 6.0, height / 2
    body = [f'<line x1="{_n(left)}" y1="{_n(mid)}" x2="{_n(right)}" y2="{_n(mid)}" stroke="{GRID}" stroke-width="1"/>']
    if not (scale.contains(ci_low) and scale.contains(ci_high)):
        below = value < scale.low or (value <= scale.high and ci_low < scale.low)
        tip, back = (left, left + 10) if below else (right, right - 10)
        body.append(f'<path d="M{_n(tip)} {_n(mid)} L{_n(back)} {_n(mid - 5)} L{_n(back)} {_n(mid + 5)} Z" '
                    f'fill="{INK}" opacity="0.6"/>')
        label = (f"{_label(value)}, 95% CI {_label(ci_low)} to {_label(ci_high)}: off this axis "
                 f"({'below' if below else 'above'} {_label(scale.low if below else scale.high)})")
        return _svg(width, height, label, body, "ci-bar")
    if reference is not None and scale.contains(reference):
        rx = scale.x(reference, left, right)
        body.append(f'<line x1="{_n(rx)}" y1="2" x2="{_n(rx)}" y2="{_n(height - 2)}" stroke="{REFERENCE}" '
                    'stroke-width="1" stroke-dasharray="2 2"/>')
    x0, x1, xv = (scale.x(v, left, right) for v in (ci_low, ci_high, value))
    body.append(f'<line x1="{_n(x0)}" y1="{_n(mid)}" x2="{_n(x1)}" y2="{_n(mid)}" stroke="{INK}" stroke-width="6" '
                'stroke-linecap="round" opacity="0.35"/>')
    body.append(f'<circle cx="{_n(xv)}" cy="{_n(mid)}" r="4" fill="{INK}"/>')
    label = f"{_label(value)}, 95% CI {_label(ci_low)} to {_label(ci_high)}"
    return _svg(width, height, label, body, "ci-bar")


def scale_axis(scale: Scale, *, width: float = 180, height: float = 20) -> Markup:
    """Tick labels for the column of ``ci_bar`` pictures drawn on ``scale``."""
    left, right = 6.0, width - 6.0
    body = []
    for tick in scale.ticks(5):
        x = scale.x(tick, left, right)
        anchor = "start" if x <= left + 1 else "end" if x >= right - 1 else "middle"
        body.append(f'<line x1="{_n(x)}" y1="{_n(height - 5)}" x2="{_n(x)}" y2="{_n(height)}" stroke="{AXIS}"/>')
        body.append(f'<text x="{_n(x)}" y="{_n(height - 7)}" font-size="10" fill="{AXIS}" text-anchor="{anchor}">'
                    f"{_label(tick)}</text>")
    return _svg(width, height, f"scale from {_label(scale.low)} to {_label(scale.high)}", body, "ci-axis")


def roc_curve(fpr: Sequence[float], tpr: Sequence[float], auroc: float | None = None, *, size: float = 320) -> Markup:
    """The ROC curve with the chance diagonal, axes and grid every 0.2."""
    margin_l, margin_b, margin_t, margin_r = 44.0, 40.0, 10.0, 10.0
    plot = size - margin_l - margin_r
    height = margin_t + plot + margin_b

    def px(x: float) -> float:
        return margin_l + x * plot

    def py(y: float) -> float:
        return margin_t + (1 - y) * plot

    body = []
    for k in range(6):
        v = k / 5
        body.append(f'<line x1="{_n(px(v))}" y1="{_n(py(0))}" x2="{_n(px(v))}" y2="{_n(py(1))}" stroke="{GRID}"/>')
        body.append(f'<line x1="{_n(px(0))}" y1="{_n(py(v))}" x2="{_n(px(1))}" y2="{_n(py(v))}" stroke="{GRID}"/>')
        body.append(f'<text x="{_n(px(v))}" y="{_n(py(0) + 14)}" font-size="10" fill="{AXIS}" text-anchor="middle">'
                    f"{_label(v)}</text>")
        body.append(f'<text x="{_n(px(0) - 5)}" y="{_n(py(v) + 3)}" font-size="10" fill="{AXIS}" text-anchor="end">'
                    f"{_label(v)}</text>")
    body.append(f'<rect x="{_n(px(0))}" y="{_n(py(1))}" width="{_n(plot)}" height="{_n(plot)}" fill="none" stroke="{AXIS}"/>')
    body.append(f'<line x1="{_n(px(0))}" y1="{_n(py(0))}" x2="{_n(px(1))}" y2="{_n(py(1))}" stroke="{REFERENCE}" '
                'stroke-dasharray="4 3"/>')
    points = " ".join(f"{_n(px(float(x)))},{_n(py(float(y)))}" for x, y in zip(fpr, tpr))
    if points:
        body.append(f'<polyline points="{points}" fill="none" stroke="{INK}" stroke-width="2"/>')
    body.append(f'<text x="{_n(px(0.5))}" y="{_n(height - 8)}" font-size="11" fill="#111827" text-anchor="middle">'
                "False positive rate</text>")
    body.append(f'<text x="12" y="{_n(py(0.5))}" font-size="11" fill="#111827" text-anchor="middle" '
                f'transform="rotate(-90 12 {_n(py(0.5))})">True positive rate</text>')
    if auroc is not None and math.isfinite(auroc):
        body.append(f'<text x="{_n(px(0.95))}" y="{_n(py(0.06))}" font-size="12" fill="{INK}" text-anchor="end">'
                    f"AUROC {auroc:.3f}</text>")
    label = f"ROC curve through {len(fpr)} points" + (f", AUROC {auroc:.3f}" if auroc is not None else "")
    return _svg(size, height, label, body, "roc")


def category_bars(rows: Sequence[Mapping[str, Any]], *, reference: float | None = None, width: float = 640,
                  scale: Scale | None = None, title: str | None = None) -> Markup:
    """Accuracy per category: a bar from 0, its 95% interval as a whisker, the value and n as text.

    ``rows`` are ``{category, n, accuracy, ci_low, ci_high}`` (the choice scorer's ``by_category``).
    """
    label_w, value_w, row_h, top = 190.0, 92.0, 22.0, 22.0
    left, right = label_w, width - value_w
    height = top + row_h * len(rows) + 6
    scale = scale or Scale(0.0, 1.0)
    body = []
    for tick in scale.ticks(6):
        x = scale.x(tick, left, right)
        body.append(f'<line x1="{_n(x)}" y1="{_n(top - 4)}" x2="{_n(x)}" y2="{_n(height - 4)}" stroke="{GRID}"/>')
        body.append(f'<text x="{_n(x)}" y="{_n(top - 8)}" font-size="10" fill="{AXIS}" text-anchor="middle">'
                    f"{_label(tick)}</text>")
    if reference is not None:
        rx = scale.x(reference, left, right)
        body.append(f'<line x1="{_n(rx)}" y1="{_n(top - 4)}" x2="{_n(rx)}" y2="{_n(height - 4)}" stroke="{REFERENCE}" '
                    'stroke-dasharray="3 3"/>')
    for i, row in enumerate(rows):
        y = top + i * row_h
        name = str(row["category"])
        short = name if len(name) <= 28 else name[:27] + "\u2026"
        acc, lo, hi = float(row["accuracy"]), float(row["ci_low"]), float(row["ci_high"])
        x0, xv, xl, xh = (scale.x(v, left, right) for v in (0.0, acc, lo, hi))
        body.append(f'<g><title>{escape(name)}: {acc:.3f} (95% CI {lo:.3f} to {hi:.3f}), n = {int(row["n"])}</title>')
        body.append(f'<text x="{_n(left - 6)}" y="{_n(y + 15)}" font-size="12" fill="#111827" text-anchor="end">'
                    f"{escape(short)}</text>")
        body.append(f'<rect x="{_n(x0)}" y="{_n(y + 4)}" width="{_n(max(xv - x0, 0.0))}" height="{_n(row_h - 8)}" '
                    f'fill="{INK}" opacity="0.7"/>')
        body.append(f'<line x1="{_n(xl)}" y1="{_n(y + row_h / 2)}" x2="{_n(xh)}" y2="{_n(y + row_h / 2)}" '
                    'stroke="#111827" stroke-width="1.5"/>')
        body.append(f'<text x="{_n(right + 6)}" y="{_n(y + 15)}" font-size="11" fill="#111827">'
                    f"{acc:.3f} (n={int(row['n'])})</text></g>")
    label = title or f"Accuracy by category for {len(rows)} categories, with 95% intervals"
    return _svg(width, height, label, body, "categories")


def difference_bar(difference: float, ci_low: float, ci_high: float, *, width: float = 480, height: float = 56) -> Markup:
    """A paired difference and its 95% interval on an axis centred on 0 (no difference)."""
    left, right, mid = 16.0, width - 16.0, 22.0
    extent = max(abs(ci_low), abs(ci_high), abs(difference), 1e-3) * 1.25
    scale = Scale(-extent, extent)
    body = [f'<line x1="{_n(left)}" y1="{_n(mid)}" x2="{_n(right)}" y2="{_n(mid)}" stroke="{GRID}" stroke-width="2"/>']
    for tick in scale.ticks(5):
        x = scale.x(tick, left, right)
        body.append(f'<line x1="{_n(x)}" y1="{_n(mid + 8)}" x2="{_n(x)}" y2="{_n(mid + 13)}" stroke="{AXIS}"/>')
        anchor = "start" if x <= left + 1 else "end" if x >= right - 1 else "middle"
        body.append(f'<text x="{_n(x)}" y="{_n(mid + 25)}" font-size="10" fill="{AXIS}" text-anchor="{anchor}">'
                    f"{_label(tick)}</text>")
    zero = scale.x(0.0, left, right)
    body.append(f'<line x1="{_n(zero)}" y1="4" x2="{_n(zero)}" y2="{_n(mid + 8)}" stroke="{REFERENCE}" stroke-dasharray="3 3"/>')
    x0, x1, xv = (scale.x(v, left, right) for v in (ci_low, ci_high, difference))
    body.append(f'<line x1="{_n(x0)}" y1="{_n(mid)}" x2="{_n(x1)}" y2="{_n(mid)}" stroke="{INK}" stroke-width="8" '
                'stroke-linecap="round" opacity="0.35"/>')
    body.append(f'<circle cx="{_n(xv)}" cy="{_n(mid)}" r="5" fill="{INK}"/>')
    label = f"difference {_label(difference)}, 95% CI {_label(ci_low)} to {_label(ci_high)}; the dashed line is no difference"
    return _svg(width, height, label, body, "difference")


def _xy_frame(size: float) -> tuple[float, float, float, float]:
    """(left, top, plot side, height) of a square plot with room for the axes' labels."""
    margin_l, margin_b, margin_t, margin_r = 48.0, 40.0, 10.0, 10.0
    plot = size - margin_l - margin_r
    height = margin_t + plot + margin_b
    return margin_l, margin_t, plot, height


def line_chart(series: Sequence[tuple[str, Sequence[float], Sequence[float], str, bool]], *, x_high: float,
               y_low: float, y_high: float, x_title: str, y_title: str, label: str, css_class: str,
               size: float = 320, points: Sequence[tuple[float, float]] = (), x_low: float = 0.0) -> Markup:
    """Lines ``(name, xs, ys, colour, dashed)`` on [0, x_high] x [y_low, y_high], with a legend; ``points``
    are drawn as dots on the first series' colour (the calibration curve's bins)."""
    left, top, plot, height = _xy_frame(size)

    def px(x: float) -> float:
        span = (x_high - x_low) or 1.0
        return left + min(max((x - x_low) / span, 0.0), 1.0) * plot

    def py(y: float) -> float:
        span = y_high - y_low
        return top + (1 - min(max((y - y_low) / span, 0.0), 1.0)) * plot

    body = []
    for k in range(6):
        xv, yv = x_low + (x_high - x_low) * k / 5, y_low + (y_high - y_low) * k / 5
        body.append(f'<line x1="{_n(px(xv))}" y1="{_n(py(y_low))}" x2="{_n(px(xv))}" y2="{_n(py(y_high))}" stroke="{GRID}"/>')
        body.append(f'<line x1="{_n(px(x_low))}" y1="{_n(py(yv))}" x2="{_n(px(x_high))}" y2="{_n(py(yv))}" stroke="{GRID}"/>')
        body.append(f'<text x="{_n(px(xv))}" y="{_n(py(y_low) + 14)}" font-size="10" fill="{AXIS}" '
                    f'text-anchor="middle">{_label(xv)}</text>')
        body.append(f'<text x="{_n(px(x_low) - 5)}" y="{_n(py(yv) + 3)}" font-size="10" fill="{AXIS}" '
                    f'text-anchor="end">{_label(yv)}</text>')
    body.append(f'<rect x="{_n(px(x_low))}" y="{_n(py(y_high))}" width="{_n(plot)}" height="{_n(plot)}" fill="none" '
                f'stroke="{AXIS}"/>')
    for k, (name, xs, ys, colour, dashed) in enumerate(series):
        line = " ".join(f"{_n(px(float(x)))},{_n(py(float(y)))}" for x, y in zip(xs, ys)
                        if math.isfinite(float(x)) and math.isfinite(float(y)))
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        if line:
            body.append(f'<polyline class="series" data-series="{escape(name)}" points="{line}" fill="none" '
                        f'stroke="{colour}" stroke-width="2"{dash}/>')
        body.append(f'<text x="{_n(px(x_low) + 6)}" y="{_n(py(y_high) + 14 + 13 * k)}" font-size="11" fill="{colour}">'
                    f"{escape(name)}</text>")
    for x, y in points:
        body.append(f'<circle cx="{_n(px(x))}" cy="{_n(py(y))}" r="3" fill="{INK}"/>')
    body.append(f'<text x="{_n(px((x_low + x_high) / 2))}" y="{_n(height - 8)}" font-size="11" fill="#111827" '
                f'text-anchor="middle">{escape(x_title)}</text>')
    body.append(f'<text x="12" y="{_n(py((y_low + y_high) / 2))}" font-size="11" fill="#111827" text-anchor="middle" '
                f'transform="rotate(-90 12 {_n(py((y_low + y_high) / 2))})">{escape(y_title)}</text>')
    return _svg(size, height, label, body, css_class)


def calibration_curve(predicted: Sequence[float], observed: Sequence[float]) -> Markup:
    """Observed rate against mean predicted probability per bin, with the ideal diagonal."""
    high = max(0.1, min(1.0, nice_step(max([*predicted, *observed, 0.0]) / 5) * 5))
    return line_chart(
        [("model", predicted, observed, INK, False), ("ideal (observed = predicted)", [0, high], [0, high], REFERENCE, True)],
        x_high=high, y_low=0.0, y_high=high, x_title="Mean predicted probability", y_title="Observed rate",
        label=f"Calibration curve over {len(predicted)} bins of predicted probability", css_class="calibration",
        points=list(zip(predicted, observed)))


def decision_curve(thresholds: Sequence[float], model: Sequence[float], treat_all: Sequence[float]) -> Markup:
    """Net benefit of the model, of treat-all and of treat-none (0) against the threshold probability."""
    top = max([*model, *treat_all, 0.01])
    high = nice_step(top / 5) * 5
    low = -high / 5
    x_high = max(thresholds) if thresholds else 1.0
    return line_chart(
        [("model", thresholds, model, INK, False), ("treat all", thresholds, treat_all, REFERENCE, True),
         ("treat none", [0, x_high], [0, 0], AXIS, True)],
        x_high=x_high, y_low=low, y_high=high, x_title="Threshold probability", y_title="Net benefit",
        label=f"Decision curve: net benefit at {len(thresholds)} thresholds, model against treat all and treat none",
        css_class="decision")


def _bounds(values: Sequence[float], low: float | None, high: float | None) -> tuple[float, float]:
    lo = low if low is not None else min(values)
    hi = high if high is not None else max(values)
    if hi <= lo:
        hi = lo + 1.0
    if low is None or high is None:  # round the free end(s) outwards to a tick
        step = nice_step((hi - lo) / 5)
        lo = lo if low is not None else math.floor(lo / step) * step
        hi = hi if high is not None else math.ceil(hi / step) * step
    return float(lo), float(hi)


_STYLE = {"line": (INK, False), "dashed": (REFERENCE, True), "points": (INK, False)}


def figure(fig: Any) -> Markup:
    """Any declared figure (``medbench.figures.Figure``): a line chart of its series, or its
    labelled values with their intervals as bars. The one renderer of every kind's pictures."""
    if fig.intervals:
        values = [v for i in fig.intervals for v in (i.value, i.ci_low, i.ci_high)]
        low, high = _bounds([*values, 0.0], fig.x.low, fig.x.high)
        rows = [{"category": i.label, "n": i.n or 0, "accuracy": i.value, "ci_low": i.ci_low, "ci_high": i.ci_high}
                for i in fig.intervals]
        return category_bars(rows, reference=fig.reference, scale=Scale(low, high), title=fig.title)
    xs = [v for s in fig.series for v in s.x]
    ys = [v for s in fig.series for v in s.y]
    x_low, x_high = _bounds(xs, fig.x.low, fig.x.high)
    y_low, y_high = _bounds(ys, fig.y.low, fig.y.high)
    series, points = [], []
    for k, s in enumerate(fig.series):
        colour, dashed = _STYLE.get(s.style, (INK, False))
        if s.style == "points":
            points += list(zip(s.x, s.y))
        series.append((s.name, s.x, s.y, colour if k else INK, dashed))
    return line_chart(series, x_low=x_low, x_high=x_high, y_low=y_low, y_high=y_high, x_title=fig.x.title,
                      y_title=fig.y.title, label=f"{fig.title}: {fig.caption}", css_class="figure " + re.sub(r"[^a-z0-9-]", "", fig.id.lower()),
                      points=points)
