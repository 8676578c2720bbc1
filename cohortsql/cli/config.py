"""The command's options from its flags and its TOML config file.

A config file holds any option under its flag's name (``memory_limit`` or ``memory-limit``); flags
override it; paths in it are relative to the file. Every value is checked for its type here, so a
wrong one is a one-line error naming the key.
"""

from __future__ import annotations

import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from cohortsql.cli.flags import AFTER_CONFIG, DISPLAY, FLAGS, Flags
from cohortsql.errors import CohortError

_PATH_KEYS = ("data", "histogram", "out", "database", "temp_directory", "model", "plot", "attributions")

_COMMA_LISTS = ("features", "target_ids", "exact", "thresholds", "holdouts")
"""Flags given as comma-separated text, which a config file may also give as a list."""


def _config_types(name: str, flag: Any) -> tuple[type, ...]:
    """The types a config file may give for a flag: its declared type's (a path is text, a whole
    number is a number too, a repeatable flag a list or one value)."""
    if name in ("similar", "groups"):
        return (dict,)
    if name in _COMMA_LISTS:
        return (str, list)
    declared = typing.get_args(flag)[0]  # Annotated[T, typer.Option(...)]
    optional = typing.get_origin(declared) in (typing.Union, types.UnionType)
    kind = next(kind for kind in typing.get_args(declared) if kind is not type(None)) if optional else declared
    if typing.get_origin(kind) is list:
        return (str, list)
    return {Path: (str,), float: (int, float)}.get(kind, (kind,))


CONFIG_TYPES: dict[str, tuple[type, ...]] = {
    name: _config_types(name, flag) for name, (flag, _) in FLAGS.items() if name not in DISPLAY
}
"""The type of every value a config file may hold."""

_TYPE_NAMES = {
    str: "text",
    int: "a whole number",
    float: "a number",
    list: "a list",
    dict: "a table",
    bool: "true or false",
}


def merged_options(arguments: Mapping[str, object], keys: tuple[str, ...]) -> Flags:
    """The command's options: its config file's, overridden by the flags that were given. Every value
    has its flag's type: typer parsed the flags, and `_check_config_value` checked the file's."""
    flags = {key: arguments[key] for key in keys if key in arguments and key != "config"}
    flags["similar"] = _once("--similar", [_split_similar(text) for text in _texts(arguments.get("similar"))])
    if "groups" in keys:
        flags["groups"] = _once("--group", [_split_group(text) for text in _texts(arguments.get("groups"))])
    config = arguments.get("config")
    merged = _merge_config(config if isinstance(config, Path) else None, flags, keys)
    defaults: dict[str, object] = {key: value for key, value in AFTER_CONFIG.items() if key in keys}
    return cast(Flags, defaults | merged)


def _texts(value: object) -> list[str]:
    """A repeatable flag's texts (none when it was not given)."""
    return [str(text) for text in value] if isinstance(value, list) else []


def _once(flag: str, pairs: list[tuple[str, object]]) -> dict[str, object]:
    """Repeated flags' NAME=VALUE pairs as a mapping, each name given once (a second one would hide the first)."""
    named: dict[str, object] = {}
    for name, value in pairs:
        if name in named:
            raise CohortError(f"{flag} names {name!r} twice ({named[name]!r} and {value!r}): give each name once")
        named[name] = value
    return named


def _split_similar(text: str) -> tuple[str, str]:
    name, equals, kind = text.partition("=")
    if not equals or not name.strip() or not kind.strip():
        raise CohortError(f"--similar {text!r} is not FEATURE=KIND, e.g. --similar age=range:0.1")
    return name.strip(), kind.strip()


def _split_group(text: str) -> tuple[str, list[str]]:
    name, equals, members = text.partition("=")
    features = [feature.strip() for feature in members.split(",") if feature.strip()]
    if not equals or not name.strip() or not features:
        raise CohortError(f"--group {text!r} is not NAME=FEATURE,FEATURE,..., e.g. --group place=lat,lon")
    return name.strip(), features


def _merge_config(config: Path | None, flags: dict[str, object], keys: tuple[str, ...]) -> dict[str, object]:
    """Options from the TOML file, overridden by every flag that was given."""
    merged: dict[str, object] = {}
    if config is not None:
        try:
            loaded = tomllib.loads(Path(config).read_text(encoding="utf-8"))
        except OSError as error:
            raise CohortError(f"cannot read config {str(config)!r}: {error.strerror}") from None
        except tomllib.TOMLDecodeError as error:
            raise CohortError(f"config {str(config)!r} is not valid TOML: {error}") from None
        except UnicodeDecodeError:
            raise CohortError(f"config {str(config)!r} is not UTF-8 text (a TOML file is)") from None
        merged = {}
        for key, value in loaded.items():
            name = key.replace("-", "_")
            if name in merged:
                spellings = [given for given in loaded if given.replace("-", "_") == name]
                raise CohortError(
                    f"config {str(config)!r} sets {name} twice ({' and '.join(repr(given) for given in spellings)}):"
                    " keep one of them"
                )
            merged[name] = value
        known = [key for key in keys if key not in DISPLAY]
        unknown = sorted(set(merged) - set(known))
        invocation = [key for key in unknown if key in DISPLAY and key != "config"]
        if invocation:
            flag = "--" + invocation[0].replace("_", "-")
            raise CohortError(
                f"config {str(config)!r}: {invocation[0]} is for one run only; give {flag} on the command line"
            )
        if unknown:
            raise CohortError(f"config {str(config)!r} has unknown keys {unknown}; known keys: {', '.join(known)}")
        for key, value in merged.items():
            _check_config_value(config, key, value)
        from cohortsql.api.surfaces import is_query

        for key in _PATH_KEYS:
            # Paths in a config file are relative to the file, so it works from any directory.
            value = merged.get(key)
            if isinstance(value, str) and not is_query(value) and not Path(value).is_absolute():
                merged[key] = str(Path(config).parent / value)
    for key, value in flags.items():
        if value in (None, [], {}):
            continue
        earlier = merged.get(key)
        if isinstance(value, dict) and isinstance(earlier, dict):
            value = {**earlier, **value}  # e.g. one --similar flag overrides one feature's kind
        merged[key] = value
    return merged


def _check_config_value(config: Path, key: str, value: object) -> None:
    expected = CONFIG_TYPES[key]
    wrong = not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected)
    if key == "similar" and isinstance(value, dict):
        wrong = not all(isinstance(kind, str) for kind in value.values())
    if key == "groups" and isinstance(value, dict):
        wrong = not all(
            isinstance(members, list) and all(isinstance(m, str) for m in members) for members in value.values()
        )
    if key in ("features", "prediction") and isinstance(value, list):
        wrong = not value or not all(isinstance(item, str) for item in value)
    if key == "target_ids" and isinstance(value, list):
        wrong = not all(isinstance(item, str | int) and not isinstance(item, bool) for item in value)
    if wrong:
        names = " or ".join(_TYPE_NAMES[kind] for kind in expected)
        if key == "similar":
            names = 'a table of FEATURE = "KIND" entries'
        if key == "groups":
            names = 'a table of NAME = ["FEATURE", ...] entries'
        raise CohortError(f"config {str(config)!r}: {key} must be {names}, got {value!r}")
