"""MkDocs hook: the options page's table of every option, generated while the site builds from the
one place each option is declared (`cohortsql.request.options`: its concern, type and default), with
its meaning from the declaration's docstring, else the public TypedDict's (`cohortsql._typing`), else
its command-line flag's help, and its flag. A table written by hand would drift from the code."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import typing
from pathlib import Path
from typing import Any

MARKER = "<!-- options table -->"


def attribute_docstrings(module: Any) -> dict[str, str]:
    """Each class attribute's docstring (the string literal after it) in `module`'s source, by
    ``Class.attribute`` and by ``attribute``."""
    found: dict[str, str] = {}
    tree = ast.parse(Path(inspect.getfile(module)).read_text())
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for before, after in zip(node.body, node.body[1:]):
            if (
                isinstance(before, ast.AnnAssign)
                and isinstance(before.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                text = " ".join(after.value.value.split())
                found[f"{node.name}.{before.target.id}"] = text
                found.setdefault(before.target.id, text)
    return found


def flag_help() -> dict[str, str]:
    """Each command-line flag's help, by option name."""
    from cohortsql.cli.flags import FLAGS

    helps = {}
    for name, (annotation, _) in FLAGS.items():
        for extra in getattr(annotation, "__metadata__", ()):
            text = getattr(extra, "help", None)
            if text:
                helps[name] = " ".join(text.split())
    return helps


def options_rows() -> list[dict[str, str]]:
    """One row per option of every concern: concern, option, type, default, flag, meaning."""
    from cohortsql import _typing
    from cohortsql.cli.flags import API_ONLY, FLAGS
    from cohortsql.request import options

    own, public, helps = attribute_docstrings(options), attribute_docstrings(_typing), flag_help()
    rows = []
    for concern, kind in options._GROUPS.items():
        for field in dataclasses.fields(kind):
            default = field.default_factory() if field.default is dataclasses.MISSING else field.default  # type: ignore[misc]
            meaning = own.get(f"{kind.__name__}.{field.name}") or public.get(field.name) or helps.get(field.name, "")
            flag = f"`--{field.name.replace('_', '-')}`" if field.name in FLAGS else ""
            if not flag and field.name in API_ONLY:
                flag = "(Python only)"
            option = f"`{field.name}`"
            if field.name in options.ENGINE_SETTINGS:  # given only inside a configured engine=
                owner, setting = options.ENGINE_SETTINGS[field.name]
                option = f"`engine=cohortsql.{owner}({setting}=...)`"
            rows.append(
                {
                    "concern": concern,
                    "option": option,
                    "type": f"`{_type_text(str(field.type), _typing)}`",
                    "default": f"`{default!r}`",
                    "flag": flag,
                    "meaning": meaning.replace("|", "\\|"),
                }
            )
    return rows


def _type_text(annotation: str, names: Any) -> str:
    """The annotation as declared, each `Literal` alias of `names` spelled out as its choices."""

    def spelled(match: re.Match[str]) -> str:
        value = getattr(names, match[0], None)
        if typing.get_origin(value) is typing.Literal:
            return " | ".join(repr(choice) for choice in typing.get_args(value))
        return match[0]

    return re.sub(r"\b[A-Z]\w*\b", spelled, annotation).replace("|", "\\|")


def options_table() -> str:
    """The table, in Markdown."""
    lines = ["| concern | option | type | default | command line | meaning |", "| --- | --- | --- | --- | --- | --- |"]
    for row in options_rows():
        lines.append(
            f"| {row['concern']} | {row['option']} | {row['type']} | {row['default']} | {row['flag']} | {row['meaning']} |"
        )
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """The options page with its table filled in."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, options_table())


def on_page_content(html: str, page: Any, **_: Any) -> str:
    """Every page's ``{default:name}`` marks (the API reference reads them from the docstrings) filled
    with the options' declared defaults, as `cohortsql.request.options.documented` fills the docstrings."""
    from cohortsql.request.options import with_declared_defaults

    return with_declared_defaults(html)
