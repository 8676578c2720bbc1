"""A run's settings: what a result says of how it was made (``result.settings``), as Python values, and
their text in the files and tables it writes (every value as JSON).

A setting is what JSON holds — text, a number, a boolean, ``None``, a list or a mapping of them — so a
result's settings equal those read back from its Parquet file (`settings_from_text`)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from importlib import metadata
from typing import Any, TypeAlias

import numpy as np

Settings: TypeAlias = dict[str, Any]
"""A run's settings by name; each value is what JSON holds (text, number, boolean, None, list, mapping)."""


def run_settings(**settings: Any) -> Settings:
    """A run's settings as JSON's values (a tuple as a list, a numpy scalar as the Python number it is,
    anything else JSON has no type for as its text), plus the library's version and the time."""
    try:
        version = metadata.version("cohortsql")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        version = "unknown"
    created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return {"cohortsql_version": version, "created": created, **plain_settings(settings)}


def plain_settings(settings: Mapping[str, Any]) -> Settings:
    """`settings` with every value as JSON reads it back: what a file written with them returns."""
    return {name: json.loads(json.dumps(value, default=_plain)) for name, value in settings.items()}


def settings_text(settings: Mapping[str, Any]) -> dict[str, str]:
    """Settings as the text a Parquet file's key-value metadata holds: each value as JSON."""
    return {name: json.dumps(value, default=_plain) for name, value in settings.items()}


def settings_from_text(text: Mapping[str, str]) -> Settings:
    """Settings read from a file's metadata: each value parsed as JSON; text that is not JSON (a value
    written before every setting was JSON, e.g. a bare column name) as it is."""
    return {name: _parsed(value) for name, value in text.items()}


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _plain(value: object) -> object:
    """A value JSON holds: a numpy scalar as the Python number it is, anything else as text."""
    if isinstance(value, np.generic):
        return value.item()
    return str(value)
