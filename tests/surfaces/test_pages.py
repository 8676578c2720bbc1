"""What the pages show is what the code gives: every shell block of every page runs as written (from
the repository's root, or the folder a ``<!-- in: FOLDER -->`` line before the block names), and every
output line it shows must be printed by its command, in order (a line ``...`` stands for lines left
out; durations are masked: a machine's speed is not the code's output). Every Python block runs as
written, and one followed by a ``text`` block prints that text; a block of calls on a cluster or a
server says so in a ``<!-- not run: WHY -->`` line before it, and is the only kind left out. A page
whose numbers drift from the code fails here."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from cohortsql.cli import app  # noqa: E402

ROOT = Path(__file__).parents[2]
PAGES = sorted([*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"])
SHELL_BLOCK = re.compile(r"(?:<!-- in: (?P<folder>[^ ]+) -->\n)?```(?:console|sh)\n(?P<body>.*?)```", re.DOTALL)
DURATION = re.compile(r"\d[\d,.]*\s?(?:ms|s|min|h|minutes|seconds|hours)\b")


def shell_pages() -> list[Path]:
    return [page for page in PAGES if SHELL_BLOCK.search(page.read_text(encoding="utf-8"))]


def commands_and_outputs(body: str) -> list[tuple[str, list[str]]]:
    """A console block's commands (``$ ...``, continued by a trailing backslash; or, in a block
    without prompts, every line) and the output lines shown after each."""
    lines = body.rstrip("\n").split("\n")
    if not any(line.startswith("$ ") for line in lines):
        lines = [
            f"$ {line}" if index == 0 or not lines[index - 1].endswith("\\") else line
            for index, line in enumerate(lines)
        ]
    found: list[tuple[str, list[str]]] = []
    command: list[str] = []
    for line in lines:
        if line.startswith("$ ") or (command and command[-1].endswith("\\")):
            if line.startswith("$ ") and command and not command[-1].endswith("\\"):
                command = []
            command.append(line.removeprefix("$ "))
            if not line.endswith("\\"):
                found.append((" ".join(part.rstrip("\\").strip() for part in command), []))
        elif found:
            found[-1][1].append(line)
    return found


def masked(line: str) -> str:
    return DURATION.sub("<duration>", line.rstrip())


def assert_shown(shown: list[str], printed: str, where: str) -> None:
    """Every shown line is a printed line, in order (``...`` skips any number of printed lines)."""
    actual = [masked(line) for line in printed.splitlines()]
    position = 0
    gap = True  # the first shown line may come after others
    for line in shown:
        if line.strip() in ("...", ""):
            gap = True
            continue
        wanted = masked(line)
        if gap:
            matches = [index for index in range(position, len(actual)) if actual[index] == wanted]
            assert matches, f"{where}: the page shows {line!r}, which the command no longer prints:\n{printed}"
            position = matches[0] + 1
        else:
            assert position < len(actual) and actual[position] == wanted, (
                f"{where}: the page shows {line!r} where the command prints"
                f" {actual[position] if position < len(actual) else 'nothing'!r}:\n{printed}"
            )
            position += 1
        gap = False


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A folder like the repository's root, its examples' data linked in, so that a page's commands
    read the shipped files and write only here."""
    data = tmp_path / "examples" / "data"
    data.mkdir(parents=True)
    for path in (ROOT / "examples" / "data").iterdir():
        (data / path.name).symlink_to(path)
    for path in (ROOT / "examples").glob("*.toml"):
        (tmp_path / "examples" / path.name).symlink_to(path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("page", shell_pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_shell_block_runs_and_prints_what_the_page_shows(page, workspace, monkeypatch):
    for block in SHELL_BLOCK.finditer(page.read_text(encoding="utf-8")):
        monkeypatch.chdir(workspace / (block["folder"] or "."))
        for command, shown in commands_and_outputs(block["body"]):
            words = shlex.split(command.split(" #")[0])
            if not words or words[0] != "cohortsql":
                continue  # pip install and the like: not the library's output
            done = CliRunner().invoke(app, words[1:])
            printed = done.output
            where = f"{page.name}: $ {command}"
            if not any(line.startswith("cohortsql: error:") for line in shown):
                assert done.exit_code == 0, f"{where} failed:\n{printed}"
            assert_shown(shown, printed, where)


def python_pages() -> list[Path]:
    return [page for page in PAGES if "```python" in page.read_text(encoding="utf-8")]


@pytest.mark.parametrize("page", python_pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_python_block_runs_as_written_and_prints_the_text_shown_after_it(page, workspace):
    """The page's Python blocks run in order in one namespace (as a reader runs them, from the
    repository's root, with nothing imported beforehand); a block followed by a ``text`` block must
    print that text."""
    text = page.read_text(encoding="utf-8")
    namespace: dict = {}
    blocks = r"(?P<skipped><!-- not run: [^>]+ -->\n)?```python\n(?P<code>.*?)```(?:\n+```text\n(?P<text>.*?)```)?"
    for block in re.finditer(blocks, text, re.DOTALL):
        if block["skipped"]:
            continue  # a sketch of calls on a cluster or a server, which the page says it is
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block["code"], page.name, "exec"), namespace)
        if block["text"] is not None:
            assert_shown(block["text"].rstrip("\n").split("\n"), printed.getvalue(), page.name)
