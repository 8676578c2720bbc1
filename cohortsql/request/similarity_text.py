"""Similarity kinds as text: one kind's short form (`parse_similarity`, e.g. ``range:0.1``), a kind
or its text (`as_similarity`), and a whole ``FEATURE=KIND, ...`` list (`similarity_text`); the forms
are listed in `cohortsql.request.similarity`."""

from __future__ import annotations

import re

from cohortsql._typing import EVERY_OTHER
from cohortsql.errors import CohortError
from cohortsql.request.similarity import (
    AbsoluteWindow,
    Bins,
    Exact,
    QuantileWindow,
    RangeWindow,
    RelativeWindow,
    Similarity,
    SqlPredicate,
)

_USAGE = "exact, abs:<delta>[unit], relative:<delta>, range:<r>, quantile:<r>[:<p>], bins:<k> or sql:<expression>"
_DURATION = re.compile(r"^\s*([0-9.eE+-]+)\s*(w|d|h|min|s)\s*$")


def _numbers(arguments: str, count: range) -> list[float]:
    parts = arguments.split(":") if arguments else []
    if len(parts) not in count:
        raise ValueError
    return [float(part) for part in parts]


def _absolute(arguments: str) -> AbsoluteWindow:
    duration = _DURATION.match(arguments)
    if duration:
        return AbsoluteWindow(float(duration[1]), duration[2])
    (delta,) = _numbers(arguments, range(1, 2))
    return AbsoluteWindow(delta)


def parse_similarity(text: str) -> Similarity:
    """Parse the short text form of a similarity kind, e.g. ``"range:0.1"`` or ``"sql:s.a = t.a"``.

    Parameters
    ----------
    text
        ``exact``, ``abs:D[unit]``, ``relative:D``, ``range:R``, ``quantile:R[:P]``, ``bins:K`` or
        ``sql:EXPRESSION``; a malformed text is a `CohortError` that says which part is wrong.

    Returns
    -------
    Similarity
        The kind as an object.

    Examples
    --------
    >>> from cohortsql import parse_similarity
    >>> parse_similarity("quantile:0.1")
    QuantileWindow(fraction=0.1, p=0.05)
    >>> parse_similarity("abs:12h")
    AbsoluteWindow(delta=12.0, unit='h')
    """
    if not isinstance(text, str):
        raise CohortError(f"a similarity kind must be a Similarity object or text like 'range:0.1', got {text!r}")
    kind, _, arguments = text.strip().partition(":")
    kind = kind.strip().lower()
    try:
        if kind == "sql":
            return SqlPredicate(arguments.strip())
        if kind == "exact" and not arguments:
            return Exact()
        if kind in ("abs", "absolute"):
            return _absolute(arguments)
        if kind == "relative":
            return RelativeWindow(*_numbers(arguments, range(1, 2)))
        if kind == "range":
            return RangeWindow(*_numbers(arguments, range(1, 2)))
        if kind == "quantile":
            return QuantileWindow(*_numbers(arguments, range(1, 3)))
        if kind == "bins":
            (k,) = _numbers(arguments, range(1, 2))
            return Bins(k)  # type: ignore[arg-type]  # Bins checks that k is whole
    except CohortError as error:
        raise CohortError(f"malformed similarity {text!r}: {error}") from None
    except ValueError:
        pass
    raise CohortError(f"malformed similarity {text!r}: expected {_USAGE}")


def as_similarity(kind: Similarity | str) -> Similarity:
    """A Similarity object as given, or parsed from its short text form."""
    return kind if isinstance(kind, Similarity) else parse_similarity(kind)


def similarity_text(text: str) -> dict[str, str | None]:
    """The features and kinds of one string, as SQL callers write them: ``"income=quantile:0.1, region"``
    (comma-separated ``name=kind``, or a name alone for its default kind; ``all`` for every other
    column, ``*=kind`` for every column not named otherwise). A name holding a comma, an ``=``, a quote
    or spaces at its ends is written as a SQL identifier: in double quotes, a double quote doubled
    (``"a,b"=exact``). Commas inside parentheses or quotes belong to a ``sql:`` kind's expression.

    Examples
    --------
    >>> from cohortsql.request.similarity_text import similarity_text
    >>> similarity_text("income=quantile:0.1, region, tenure=sql:abs(s.tenure - t.tenure) <= greatest(1, 2)")
    {'income': 'quantile:0.1', 'region': None, 'tenure': 'sql:abs(s.tenure - t.tenure) <= greatest(1, 2)'}
    >>> similarity_text('"net, ""adjusted"" income"=abs:5, age')
    {'net, "adjusted" income': 'abs:5', 'age': None}
    """
    if not isinstance(text, str) or not text.strip():
        raise CohortError("the similarity names no features: write it as 'name=kind, name=kind, ...'")
    features: dict[str, str | None] = {}
    for part in _top_level_parts(text):
        name, equals, kind, quoted = _name_and_kind(part)
        if not name or (equals and not kind.strip()):
            raise CohortError(f"{part.strip()!r} in the similarity is not name=kind (e.g. age=range:0.1) or a name")
        if name in features:
            raise CohortError(f"the similarity names feature {name!r} twice")
        bare_all = name == "all" and not equals and not quoted
        features[EVERY_OTHER if bare_all else name] = kind.strip() if equals else None
    return features


def _name_and_kind(part: str) -> tuple[str, str, str, bool]:
    """A part of the similarity string as (name, '=' or '', kind, whether the name was quoted)."""
    stripped = part.strip()
    if not stripped.startswith('"'):
        name, equals, kind = part.partition("=")
        return name.strip(), equals, kind, False
    position, pieces = 1, []
    while True:
        close = stripped.find('"', position)
        if close < 0:
            raise CohortError(f"{stripped!r} in the similarity opens a quoted name that does not end")
        pieces.append(stripped[position:close])
        if stripped.startswith('"', close + 1):  # a doubled quote stands for itself
            pieces.append('"')
            position = close + 2
            continue
        break
    rest = stripped[close + 1 :].strip()
    if rest and not rest.startswith("="):
        raise CohortError(f"{stripped!r} in the similarity is not name=kind: after a quoted name comes '=' or ','")
    return "".join(pieces), rest[:1], rest[1:], True


def _top_level_parts(text: str) -> list[str]:
    """`text` split at the commas outside parentheses, single-quoted strings and double-quoted names."""
    parts, depth, quote, start = [], 0, "", 0
    for position, character in enumerate(text):
        if character in "'\"" and quote in ("", character):
            quote = "" if quote else character
        elif not quote and character == "(":
            depth += 1
        elif not quote and character == ")":
            depth = max(0, depth - 1)
        elif not quote and depth == 0 and character == ",":
            parts.append(text[start:position])
            start = position + 1
    parts.append(text[start:])
    return [part for part in parts if part.strip()] or [text]
