"""One colour per feature, the same in every figure and in the report: the feature's place in the
result's feature order picks a colour of matplotlib's tab20 palette (written out, so the report
needs no matplotlib)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PALETTE = (
    "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd", "#c5b0d5",
    "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5",
)  # fmt: skip


def feature_colours(features: Sequence[str]) -> dict[str, str]:
    """Each feature's colour (hex), by its place among `features`."""
    return {feature: PALETTE[index % len(PALETTE)] for index, feature in enumerate(features)}


def run_feature_order(settings: Mapping[str, Any], shown: Sequence[str]) -> list[str]:
    """The run's features in the order it was given them (the keys of its ``similarity`` setting), so
    that a table sorted by importance draws each feature in the colour it has in the other figures;
    `shown` as it is where the settings do not name every shown feature (a table from elsewhere)."""
    named = settings.get("similarity")
    order = list(named) if isinstance(named, dict) else []
    return order if set(shown) <= set(order) else list(shown)


LEVEL_PALETTES = ("tab20", "tab20b", "tab20c")
"""matplotlib's qualitative colour maps whose colours, in turn, tell levels of categorical features apart."""


def level_colour(plt: Any, index: int) -> Any:
    """The `index`-th level's colour in a figure that shows many features' levels: the 60 colours of
    `LEVEL_PALETTES` in turn, then hues spaced by the golden ratio, so that no two levels of one
    figure share a colour (tab10's ten repeated after the tenth level: two features' levels looked alike)."""
    palette, place = divmod(index, 20)
    if palette < len(LEVEL_PALETTES):
        return plt.get_cmap(LEVEL_PALETTES[palette])(place)
    import matplotlib.colors

    return matplotlib.colors.hsv_to_rgb(((index * 0.618033988749895) % 1.0, 0.75, 0.8))
