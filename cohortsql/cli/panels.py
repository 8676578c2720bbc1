"""The panels of a command's ``--help``: each flag under its option's concern, as the options page
groups them (`cohortsql.request.options`' concerns, read through `cohortsql.api.declared`)."""

from __future__ import annotations

from cohortsql.api.declared import CONCERN_OF

CONCERN_PANELS = {
    "selection": "Targets",
    "weighting": "Weights and intervals",
    "nulls": "Null reference",
    "estimation": "Method",
    "terms": "Interactions",
    "grouping": "Groups of features",
    "modelling": "Model",
    "auditing": "Protected attributes",
    "calibration": "Calibration",
    "where": "Engine",
}
"""The help's panel of each concern's flags (`cohortsql.request.options`' concerns, as the options page groups them)."""

PANELS = {
    **dict.fromkeys(("prediction", "game", "similar", "features", "data_table", "attributions"), "What to explain"),
    "target_ids": "Targets",
    "model": "Model",
    **dict.fromkeys(("protected", "threshold", "observed"), "Protected attributes"),
    **dict.fromkeys(("table", "dialect", "variant"), "SQL"),
    **dict.fromkeys(("out", "into_table", "database", "replace", "top", "reasons", "report", "plot"), "Output"),
}
"""The help's panel of each flag outside the concerns; the rest (positional arguments, --dry-run,
--config, --debug) are under "Options", first, with --help."""


def panel(name: str) -> str | None:
    """The panel of `name`'s flag in a command's ``--help``: its concern's, or its own (`PANELS`)."""
    concern = CONCERN_OF.get(name)
    return CONCERN_PANELS[concern] if concern is not None else PANELS.get(name)
