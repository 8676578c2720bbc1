"""The documentation site: it builds with the README's one command without a warning (the gallery's
examples run as it builds). Every page's blocks run as written: `test_pages.py`."""

import os
import re
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")


ROOT = Path(__file__).parents[2]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def test_the_site_builds_without_warnings(tmp_path):
    """``mkdocs build`` with strict: true in mkdocs.yml, so a warning (a broken link, a docstring the
    reference cannot read, a page left out of the navigation) fails the build."""
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=os.environ | {"MPLBACKEND": "Agg"},
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert "WARNING" not in built.stderr, built.stderr[-3000:]
    site = tmp_path / "site"
    reference = (site / "reference" / "functions" / "index.html").read_text(encoding="utf-8")
    assert "cohort_shapley" in reference and "Examples" in reference  # generated from the docstrings
    drawn = sorted(path.name for path in (site / "gallery").glob("*.png"))
    assert len(drawn) == len(re.findall(r"<!-- figure:", (ROOT / "docs" / "gallery.md").read_text()))
    assert all((site / "gallery" / name).stat().st_size > 10_000 for name in drawn)


def test_the_readme_names_the_command_that_builds_the_site():
    assert "mkdocs build" in (ROOT / "README.md").read_text(encoding="utf-8")
