"""Small SVG charts for the report: written out as text, readable without scripts, with a tooltip
(an SVG ``<title>``) on every mark. Pure functions of numbers and labels."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

WIDTH = 640
ROW = 22
LABEL = 190


LABEL_CHARACTERS = 30
"""The most characters a label left of a chart holds (about 6 px each at 12 px); a longer one is
shortened with an ellipsis, and its whole text stays in the mark's tooltip."""


def _number(value: float) -> str:
    return f"{value:.4g}"


def _label(text: str, characters: int = LABEL_CHARACTERS) -> str:
    """`text` escaped for SVG, shortened to `characters` with an ellipsis (a chart clipped it)."""
    return escape(text if len(text) <= characters else text[: characters - 1] + "…")


def _scale(low: float, high: float, left: float, right: float) -> Callable[[float], float]:
    """The linear map from [low, high] to [left, right] (a point range maps to its start)."""
    span = (high - low) or 1.0
    return lambda value: left + (value - low) / span * (right - left)


def bars(
    labels: Sequence[str],
    values: Sequence[float],
    errors: Sequence[float] | None,
    colours: Sequence[str],
    unit: str,
    floors: Sequence[float | None] | None = None,
) -> str:
    """Horizontal bars, one per label, with the value printed beside each, an error whisker, and (with
    `floors`) a dark tick at each bar's floor: what a shuffled copy of its feature reaches."""
    highs = [value + (errors[index] if errors else 0.0) for index, value in enumerate(values)]
    highs += [floor for floor in floors or [] if floor is not None and math.isfinite(floor)]
    low, high = min(0.0, *values), max(0.0, *highs) if values else 1.0
    x = _scale(low, high, LABEL, WIDTH - 70)
    height = ROW * len(labels) + 10
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img">']
    for index, (label, value, colour) in enumerate(zip(labels, values, colours)):
        y = 5 + index * ROW
        start, end = sorted((x(0.0), x(value)))
        tip = f"{label}: {_number(value)}{unit}" + (f" ± {_number(errors[index])}" if errors else "")
        parts.append(
            f'<g><title>{escape(tip)}</title><text x="{LABEL - 6}" y="{y + 15}" text-anchor="end">{_label(label)}</text>'
            f'<rect x="{start:.1f}" y="{y + 3}" width="{max(end - start, 0.5):.1f}" height="{ROW - 6}" fill="{colour}"/>'
        )
        right = max(end, x(0.0))
        if errors:
            whisker = x(value + errors[index])
            parts.append(
                f'<line x1="{x(value - errors[index]):.1f}" x2="{whisker:.1f}" y1="{y + 11}" y2="{y + 11}" class="whisker"/>'
            )
            right = max(right, whisker)  # the value is written past its whisker, never struck by it
        floor = None if floors is None else floors[index]
        if floor is not None and math.isfinite(floor):
            parts.append(
                f'<line x1="{x(floor):.1f}" x2="{x(floor):.1f}" y1="{y + 1}" y2="{y + ROW - 1}" class="floor">'
                f"<title>{escape(label)}: floor {_number(floor)}{unit}</title></line>"
            )
            right = max(right, x(floor) + 2)  # the value is read beside the bar and its tick, never struck
        parts.append(f'<text x="{right + 4:.1f}" y="{y + 15}" class="value">{_number(value)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def nice_ticks(low: float, high: float, most: int = 5) -> list[float]:
    """Round values from `low` to `high` for an axis: the smallest step of 1, 2, 2.5 or 5 times a power
    of ten that leaves at most `most` ticks within the range, 0 among them when the range holds it."""
    if not high > low:
        return [low]
    power = 10 ** math.floor(math.log10((high - low) / most))
    for step in (factor * power for factor in (1, 2, 2.5, 5, 10, 20)):
        first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
        if last - first + 1 <= most:
            break
    return [index * step for index in range(first, last + 1)]


AXIS = 36
"""The height of a horizontal axis below a chart: its tick values and its caption."""


def _horizontal_axis(low: float, high: float, x: Callable[[float], float], y: float, caption: str) -> str:
    """An axis at height `y`: a line from `low` to `high` under the marks, ticks with their values, and
    `caption` (what the values are, in which units) below."""
    ticks = nice_ticks(low, high)
    parts = [f'<g class="axis"><line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{y}" y2="{y}" class="axis-line"/>']
    for tick in ticks:
        parts.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{y}" y2="{y + 4}" class="axis-line"/>'
            f'<text x="{x(tick):.1f}" y="{y + 15}" text-anchor="middle" class="size">{tick:+.3g}</text>'
        )
    middle = (x(low) + x(high)) / 2
    parts.append(f'<text x="{middle:.1f}" y="{y + 30}" text-anchor="middle" class="size">{escape(caption)}</text></g>')
    return "".join(parts)


def intervals(
    labels: Sequence[str], values: Sequence[float], lows: Sequence[float], highs: Sequence[float], caption: str
) -> str:
    """One row per label: the value as a dot, its interval as a whisker (where known, i.e. finite),
    beside a dashed line at 0, the value and interval written at the right, over an axis of the values
    with its `caption`."""
    finite = [number for number in (*values, *lows, *highs) if math.isfinite(number)]
    low, high = min(0.0, *finite), max(0.0, *finite)
    x = _scale(low, high, LABEL, WIDTH - 230)
    rows = ROW * len(labels) + 10
    height = rows + AXIS
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img">']
    parts.append(f'<line x1="{x(0.0):.1f}" x2="{x(0.0):.1f}" y1="5" y2="{rows - 5}" class="guide"/>')
    parts.append(_horizontal_axis(low, high, x, rows, caption))
    for index, (label, value, low, high) in enumerate(zip(labels, values, lows, highs)):
        y = 5 + index * ROW + 11
        known = math.isfinite(low) and math.isfinite(high)
        shown = f"{value:+.3g}" + (f" ({low:+.3g} to {high:+.3g})" if known else "")
        parts.append(
            f"<g><title>{escape(label)}: {escape(shown)}</title>"
            f'<text x="{LABEL - 6}" y="{y + 4}" text-anchor="end">{_label(label)}</text>'
        )
        if known:
            parts.append(f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{y}" y2="{y}" class="whisker"/>')
        parts.append(
            f'<circle cx="{x(value):.1f}" cy="{y}" r="4" class="means"/>'
            f'<text x="{WIDTH - 222}" y="{y + 4}" class="value">{escape(shown)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def waterfall(start: float, steps: Sequence[tuple[str, str, float]], end: float, colours: Sequence[str]) -> str:
    """From the mean (`start`) to the cohort mean (`end`): one bar per step (feature, its value for the
    target, the Shapley value), its Shapley value written on it. No cohort size is written beside a
    bar: a Shapley value averages over every order of the features, and the sizes of one order's
    cohorts (the refinement path, drawn apart) would suggest cohort means the bars do not show."""
    positions = [start]
    for _, _, value in steps:
        positions.append(positions[-1] + value)
    x = _scale(min(positions + [end]), max(positions + [end]), LABEL + 60, WIDTH - 90)
    height = ROW * (len(steps) + 2) + 10
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img">']
    parts.append(
        f'<text x="{LABEL + 54}" y="17" text-anchor="end">mean</text>'
        f'<line x1="{x(start):.1f}" x2="{x(start):.1f}" y1="5" y2="{height - 5}" class="guide"/>'
        f'<text x="{x(start) + 4:.1f}" y="17" class="value">{_number(start)}</text>'
    )
    for index, ((feature, shown, value), colour) in enumerate(zip(steps, colours)):
        y = 5 + (index + 1) * ROW
        left, right = sorted((x(positions[index]), x(positions[index + 1])))
        sign = "+" if value >= 0 else "−"
        tip = f"{feature} = {shown}: Shapley value {sign}{_number(abs(value))}"
        parts.append(
            f"<g><title>{escape(tip)}</title>"
            f'<text x="{LABEL + 54}" y="{y + 15}" text-anchor="end">{_label(f"{feature} = {shown}", LABEL_CHARACTERS + 8)}</text>'
            f'<rect x="{left:.1f}" y="{y + 3}" width="{max(right - left, 0.5):.1f}" height="{ROW - 6}" fill="{colour}"/>'
            f'<text x="{right + 4:.1f}" y="{y + 15}" class="value">{sign}{_number(abs(value))}</text></g>'
        )
    y = 5 + (len(steps) + 1) * ROW
    parts.append(
        f'<text x="{LABEL + 54}" y="{y + 15}" text-anchor="end">cohort mean</text>'
        f'<line x1="{x(end):.1f}" x2="{x(end):.1f}" y1="5" y2="{height - 5}" class="guide strong"/>'
        f'<text x="{x(end) + 4:.1f}" y="{y + 15}" class="value">{_number(end)}</text></svg>'
    )
    return "".join(parts)


def _size_ticks(smallest: float, largest: float) -> tuple[list[float], list[str]]:
    """Ticks of the logarithmic cohort-size axis (log10 positions, labels): its ends, and every power
    of ten between them not crowding an end (a third of a decade away at least)."""
    ends = [math.log10(max(smallest, 1.0)), math.log10(max(largest, 1.0))]
    between = [
        float(power)
        for power in range(math.ceil(ends[0]), math.floor(ends[1]) + 1)
        if all(abs(power - end) > 1 / 3 for end in ends)
    ]
    positions = [ends[0], *between, ends[1]]
    return positions, [f"{10**position:,.0f}" for position in positions]


def _axis_values(positions: Sequence[float], shown: Sequence[str], scale: Callable[[float], float]) -> list[str]:
    """A vertical axis's values at `positions`: a tick and the number left of the plot."""
    return [
        f'<line x1="62" x2="68" y1="{scale(position):.1f}" y2="{scale(position):.1f}" class="guide"/>'
        f'<text x="60" y="{scale(position) + 4:.1f}" text-anchor="end" class="size">{escape(text)}</text>'
        for position, text in zip(positions, shown)
    ]


def refinement(labels: Sequence[str], sizes: Sequence[float], means: Sequence[float], prediction: float) -> str:
    """The refinement path: cohort size (log scale) and cohort mean as features join, one point per step."""
    steps = len(labels)
    x = _scale(0, max(steps - 1, 1), 70, WIDTH - 60)
    logs = [math.log10(max(size, 1.0)) for size in sizes]
    size_y = _scale(min(logs), max(logs) or 1.0, 110, 20)
    mean_y = _scale(min([*means, prediction]), max([*means, prediction]), 230, 140)
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} 290" width="{WIDTH}" height="290" role="img">']
    parts.append('<text x="8" y="12">cohort size (log scale)</text><text x="8" y="132">cohort mean</text>')
    parts += _axis_values(*_size_ticks(min(sizes), max(sizes)), size_y)
    mean_ends = (min([*means, prediction]), max([*means, prediction]))
    parts += _axis_values(list(mean_ends), [_number(value) for value in mean_ends], mean_y)
    parts.append(
        f'<line x1="70" x2="{WIDTH - 20}" y1="{mean_y(prediction):.1f}" y2="{mean_y(prediction):.1f}" class="guide"/>'
        f'<text x="{WIDTH - 20}" y="{mean_y(prediction) - 4:.1f}" text-anchor="end" class="size">prediction'
        f" {_number(prediction)}</text>"
    )
    for series, scale, values, css in ((logs, size_y, sizes, "sizes"), (means, mean_y, means, "means")):
        points = " ".join(f"{x(step):.1f},{scale(value):.1f}" for step, value in enumerate(series))
        parts.append(f'<polyline points="{points}" class="{css}"/>')
        for step, (value, shown) in enumerate(zip(series, values)):
            tip = f"{labels[step]}: {'cohort of ' if css == 'sizes' else 'mean '}{_number(shown)}"
            parts.append(
                f'<circle cx="{x(step):.1f}" cy="{scale(value):.1f}" r="3.5" class="{css}"><title>{escape(tip)}</title></circle>'
            )
    for step, label in enumerate(labels):
        parts.append(
            f'<text x="{x(step):.1f}" y="250" transform="rotate(35 {x(step):.1f} 250)" class="size">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


CELL = 44
"""A heat-map cell's side in pixels: room for a value of 12 px type (`.cell` in report.css)."""


def heatmap(labels: Sequence[str], values: Sequence[Sequence[float]]) -> str:
    """A square matrix (row label, column label) as shaded cells: darker for a larger |value|, blue above
    zero and red below, each value written in its cell and in its tooltip."""
    size = len(labels)
    longest = max((len(label) for label in labels), default=1)
    left, top = max(40, 10 + 7 * longest), max(30, 14 + 6 * longest)  # room for the labels, slanted on top
    largest = max((abs(value) for row in values for value in row), default=0.0) or 1.0
    width, height = left + CELL * size + 10, top + CELL * size + 10
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img">']
    for index, label in enumerate(labels):
        middle = left + CELL * index + CELL / 2
        parts.append(
            f'<text x="{left - 6}" y="{top + CELL * index + CELL / 2 + 4:.1f}" text-anchor="end">{escape(label)}</text>'
        )
        parts.append(
            f'<text transform="translate({middle:.1f},{top - 6}) rotate(-60)" text-anchor="start">{escape(label)}</text>'
        )
    for row, (label, cells) in enumerate(zip(labels, values)):
        for column, value in enumerate(cells):
            strength = abs(value) / largest
            colour = f"rgba({'33,102,172' if value >= 0 else '178,24,43'},{0.08 + 0.87 * strength:.2f})"
            x, y = left + CELL * column, top + CELL * row
            tip = f"{label} × {labels[column]}: {_number(value)}"
            parts.append(
                f'<g><title>{escape(tip)}</title><rect x="{x}" y="{y}" width="{CELL - 1}" height="{CELL - 1}"'
                f' fill="{colour}"/><text x="{x + CELL / 2:.1f}" y="{y + CELL / 2 + 4:.1f}" text-anchor="middle"'
                f' class="cell">{value:.2g}</text></g>'
            )
    parts.append("</svg>")
    return "".join(parts)
