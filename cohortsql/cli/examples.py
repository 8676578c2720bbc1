"""The examples a command's ``--help`` ends with, laid out for an 80-column terminal: each command on
lines of at most `WIDTH` characters joined by a backslash, so that it pastes into a shell as it is
shown (the help keeps the line breaks; a line the terminal wrapped itself would not paste)."""

from __future__ import annotations

import re

WIDTH = 74
"""The longest line of an example, its backslash included (the help indents it by one column)."""

_WORD = re.compile(r"""(?:'[^']*'|"[^"]*"|[^\s'"])+""")
"""A shell word: quoted parts stay whole (``--targets "region = 'north'"``)."""


def examples(*commands: str) -> str:
    """``Examples:`` and each command laid out by `laid_out`, a blank line apart."""
    return "Examples:\n\n" + "\n\n".join(laid_out(command) for command in commands)


def laid_out(command: str) -> str:
    """`command` on lines of at most `WIDTH` characters, continued with `` \\`` and indented by four;
    a flag stays on the line of its value. A comment (``# ...``) is as it is."""
    if command.startswith("#"):
        return command
    words = _WORD.findall(command)
    units: list[str] = []
    for word in words:
        if units and units[-1].startswith("-") and " " not in units[-1] and not word.startswith("-"):
            units[-1] += " " + word
        else:
            units.append(word)
    lines = [units[0]]
    for unit in units[1:]:
        if len(lines[-1]) + 1 + len(unit) + 2 <= WIDTH:
            lines[-1] += " " + unit
        else:
            lines.append("    " + unit)
    return " \\\n".join(lines)
