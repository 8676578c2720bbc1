"""MkDocs hook: run the gallery's examples while the site builds, so its figures are always what the
code beside them draws.

Each ```python block of ``gallery.md`` that follows a ``<!-- figure: NAME.png -->`` line is run (the
page's blocks share one namespace, in order) and must leave a matplotlib figure in ``figure``; it is
saved as ``gallery/NAME.png`` into the built site. Nothing is written into the docs folder."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

FIGURE = re.compile(r"<!-- figure: (?P<name>[\w-]+\.png) -->\s*```python\n(?P<code>.*?)```", re.DOTALL)
_OUTPUT = Path(tempfile.mkdtemp(prefix="cohortsql-gallery-"))


def gallery_examples(markdown: str) -> list[tuple[str, str]]:
    """The (figure name, code) pairs of a gallery page, in order."""
    return [(match["name"], match["code"]) for match in FIGURE.finditer(markdown)]


def draw_gallery(markdown: str, folder: Path) -> list[Path]:
    """Run every example of the page and save its figure into `folder`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    namespace: dict[str, Any] = {}
    written = []
    for name, code in gallery_examples(markdown):
        namespace.pop("figure", None)
        exec(compile(code, f"gallery.md: {name}", "exec"), namespace)
        figure = namespace.get("figure")
        if figure is None:
            raise RuntimeError(f"the gallery example for {name} leaves no figure in `figure`")
        path = folder / name
        figure.savefig(path, dpi=90)
        plt.close(figure)
        written.append(path)
    return written


def on_files(files: Any, config: Any) -> Any:
    """Draw the gallery and add its figures to the site's files."""
    from mkdocs.structure.files import File

    page = Path(config["docs_dir"]) / "gallery.md"
    folder = _OUTPUT / "gallery"
    folder.mkdir(parents=True, exist_ok=True)
    for path in draw_gallery(page.read_text(encoding="utf-8"), folder):
        files.append(File(f"gallery/{path.name}", str(_OUTPUT), config["site_dir"], config["use_directory_urls"]))
    return files
