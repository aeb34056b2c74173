"""Figures and participant flows by declaration: typed shapes the site and the API render generically.

A kind (``Kind.figures``) or a family (its extras, through its kind) declares what a result page
draws as ``Figure`` values: series of (x, y) points on two titled axes, or labelled values with
their 95% intervals, with a caption. The site draws any ``Figure`` with one renderer per shape
(``api.site.svg.figure``), so a plug-in kind's picture needs no edit of the site, and a figure the
site cannot draw is left out, never a 500. A participant flow is a ``list[FlowStep]``: labelled
counts in order (cases in the snapshot, exclusions, cohort, splits), indented by ``level``.
Nothing here imports the project (the API may import it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec


class Axis(msgspec.Struct, frozen=True, kw_only=True):
    title: str
    low: float | None = None   # None: from the data
    high: float | None = None


class Series(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    x: list[float]
    y: list[float]
    style: Literal["line", "dashed", "points"] = "line"


class Interval(msgspec.Struct, frozen=True, kw_only=True):
    label: str
    value: float
    ci_low: float
    ci_high: float
    n: int | None = None


class Figure(msgspec.Struct, frozen=True, kw_only=True):
    """One declared figure: ``series`` on axes ``x`` and ``y`` (a line chart), or ``intervals`` on
    the ``x`` axis (a value with its interval per label); ``caption`` says what it shows."""

    id: str              # the page anchor, e.g. "roc-curve"
    title: str
    caption: str
    x: Axis
    y: Axis | None = None
    series: list[Series] = []
    intervals: list[Interval] = []
    reference: float | None = None  # a dashed reference value on the x axis of an interval figure


class FlowStep(msgspec.Struct, frozen=True, kw_only=True):
    """One labelled count of a participant flow (TRIPOD+AI), ``level`` 0 for the main line."""

    label: str
    count: int
    unit: str = ""       # "cases", "windows", "patients"...
    level: int = 0
    note: str = ""


def _finite(values: Any) -> bool:
    try:
        return all(math.isfinite(float(v)) for v in values)
    except (TypeError, ValueError):
        return False


def valid_figures(declared: Sequence[Any]) -> list[Figure]:
    """The declared figures the site can draw: decoded to ``Figure`` (dicts are converted), series
    with as many finite x as y; anything else is dropped rather than failing a page."""
    out = []
    for item in declared or ():
        try:
            fig = item if isinstance(item, Figure) else msgspec.convert(item, Figure)
        except (msgspec.ValidationError, TypeError):
            continue
        series = [s for s in fig.series if len(s.x) == len(s.y) and s.x and _finite(s.x) and _finite(s.y)]
        intervals = [i for i in fig.intervals if _finite((i.value, i.ci_low, i.ci_high))]
        if series and fig.y is not None or intervals:
            out.append(msgspec.structs.replace(fig, series=series, intervals=intervals))
    return out


def flow_steps(flow: Any) -> list[FlowStep] | None:
    """A published participant flow as steps: a list of labelled counts as it is; None for any
    other shape (an older file's, an unknown one), which the site then does not draw."""
    if not isinstance(flow, list):
        return None
    try:
        return msgspec.convert(flow, list[FlowStep])
    except msgspec.ValidationError:
        return None


def lines(figure_id: str, title: str, caption: str, x: Axis, y: Axis,
          series: Sequence[tuple[str, Sequence[float], Sequence[float], str]]) -> Figure:
    """A line figure from (name, xs, ys, style) tuples."""
    return Figure(id=figure_id, title=title, caption=caption, x=x, y=y,
                  series=[Series(name=n, x=[float(v) for v in xs], y=[float(v) for v in ys], style=st)  # type: ignore[arg-type]
                          for n, xs, ys, st in series])


def get_mapping(extras: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = extras.get(key) if isinstance(extras, Mapping) else None
    return value if isinstance(value, Mapping) else None


__all__ = ["Axis", "Figure", "FlowStep", "Interval", "Series", "flow_steps", "get_mapping", "lines", "valid_figures"]
