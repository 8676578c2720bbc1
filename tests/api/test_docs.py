"""The documentation's promises: every public function and `df.cohort` method has a runnable
example in its docstring, and every example gives what it shows."""

import doctest
import inspect
import warnings

import pytest

import cohortsql
from cohortsql.errors import CohortWarning
from cohortsql.polars import CohortNamespace

FUNCTIONS = {
    name: getattr(cohortsql, name) for name in cohortsql.__all__ if inspect.isfunction(getattr(cohortsql, name))
}
METHODS = {
    f"df.cohort.{name}": method
    for name, method in inspect.getmembers(CohortNamespace, inspect.isfunction)
    if not name.startswith("_")
}
DATASETS = {
    f"cohortsql.datasets.{name}": function
    for name, function in inspect.getmembers(cohortsql.datasets, inspect.isfunction)
    if function.__module__ == "cohortsql.datasets"
}
DOCUMENTED = FUNCTIONS | METHODS | DATASETS


def test_every_public_function_and_namespace_method_has_an_example():
    assert len(FUNCTIONS) >= 10 and len(METHODS) == 13 and len(DATASETS) == 5
    missing = [name for name, function in DOCUMENTED.items() if ">>> " not in (function.__doc__ or "")]
    assert missing == [], f"no runnable example in the docstrings of {missing}"


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_the_examples_run(name):
    """Each example as the standard runner takes it (``pytest --doctest-modules cohortsql``): its own
    imports, no globals of the project's harness."""
    tests = doctest.DocTestFinder(recurse=False).find(DOCUMENTED[name], name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CohortWarning)  # tiny example tables have small cohorts
        for test in tests:
            runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted > 0


def test_the_standard_doctest_runner_passes():
    """``pytest --doctest-modules cohortsql`` as anyone would run it: no conftest of the project's."""
    import subprocess
    import sys
    from pathlib import Path

    package = Path(cohortsql.__file__).parent
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--doctest-modules", str(package), "-q", "-p", "no:cacheprovider", "--no-cov"],
        capture_output=True,
        text=True,
        cwd=package.parent,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.count(".") >= 20  # every example ran (the public functions and df.cohort's methods)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_public_function_documents_every_parameter_in_numpy_style(name):
    """The site renders numpy-style sections as parameter tables: one style, every parameter named
    (``Args:`` blocks and bullet lists rendered as one run-on paragraph)."""
    function = FUNCTIONS[name]
    documented = inspect.getdoc(function) or ""
    assert "Args:" not in documented
    assert "Parameters\n----------\n" in documented and "Returns\n-------\n" in documented, name
    section = documented.split("Parameters\n----------\n", 1)[1].split("\n\n", 1)[0]
    entries = {line.split(" :")[0].strip() for line in section.splitlines() if line and not line.startswith(" ")}
    for parameter in inspect.signature(function).parameters.values():
        shown = f"**{parameter.name}" if parameter.kind is parameter.VAR_KEYWORD else parameter.name
        entries |= {part.strip() for entry in entries for part in entry.split(",")}
        if parameter.kind is parameter.VAR_POSITIONAL:
            continue
        assert shown in entries, f"{name} does not document {shown}"


def test_the_options_page_lists_every_option_with_its_type_default_and_meaning():
    """The options page's table is generated from the options' one declaration when the site builds
    (``docs/_hooks/options.py``): every option any public function takes is in it, each with a
    meaning, and the defaults are the declaration's."""
    import importlib.util
    from pathlib import Path

    from cohortsql import _typing
    from cohortsql.request.options import Estimation, Weighting

    path = Path(__file__).parents[2] / "docs" / "_hooks" / "options.py"
    specification = importlib.util.spec_from_file_location("options_hook", path)
    assert specification is not None and specification.loader is not None
    hook = importlib.util.module_from_spec(specification)
    specification.loader.exec_module(hook)
    rows = {row["option"].strip("`"): row for row in hook.options_rows()}
    typed = set()
    for value in vars(_typing).values():
        if isinstance(value, type) and issubclass(value, dict) and hasattr(value, "__optional_keys__"):
            typed |= set(value.__optional_keys__) | set(value.__required_keys__)
    typed -= {"prediction", "similarity", "data"}  # the functions' own arguments, not options
    assert typed <= set(rows), sorted(typed - set(rows))
    assert [name for name, row in rows.items() if not row["meaning"]] == []
    assert rows["max_permutations"]["default"] == f"`{Estimation.max_permutations!r}`"
    assert rows["confidence"]["default"] == f"`{Weighting.confidence!r}`"
    assert rows["method"]["type"] == "`'exact' \\| 'permutation' \\| 'integrated' \\| 'auto'`"
    assert rows["engine=cohortsql.DuckDB(memory_limit=...)"]["flag"] == "`--memory-limit`"  # not an option of its own
    page = (Path(__file__).parents[2] / "docs" / "reference" / "options.md").read_text()
    assert (
        hook.MARKER in page and hook.on_page_markdown(page, None).count("\n| ") == len(hook.options_rows()) + 2
    )  # the header, its rule, the rows


def test_each_default_is_written_once():
    """No option's default is written outside its declaration (`cohortsql.request.options`): the
    docstrings, the flags' help and the commands' help say ``{default:name}``, filled from it (for
    `help()`, ``--help`` and the site), and signatures read the declaration."""
    import ast
    import dataclasses
    import re
    from pathlib import Path

    from cohortsql.request import options

    package = Path(options.__file__).parents[1]
    declared = {
        option.name: option.default
        for concern in vars(options).values()
        if isinstance(concern, type) and dataclasses.is_dataclass(concern)
        for option in dataclasses.fields(concern)
        if isinstance(option.default, int | float | str) and not isinstance(option.default, bool) and option.default
    } | options.CALL_DEFAULTS
    written = []
    for path in sorted(package.rglob("*.py")):
        if path == Path(options.__file__):
            continue
        text = path.read_text()
        for name, value in declared.items():
            shown = re.escape(f"{value:g}" if isinstance(value, float) else str(value))
            for said in (
                rf"\(default:? {shown}\b",
                rf"\bdefault {shown}\)",
                rf"\b{shown} by default\b",
                rf"by default {shown}\b",
            ):
                written += [f"{path.name}: {match[0]!r} ({name})" for match in re.finditer(said, text)]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.arguments):
                pairs = zip(
                    node.args[len(node.args) - len(node.defaults) :] + node.kwonlyargs, node.defaults + node.kw_defaults
                )
                written += [
                    f"{path.name}: {argument.arg}={default.value!r}"
                    for argument, default in pairs
                    if isinstance(default, ast.Constant)
                    and argument.arg in declared
                    and default.value == declared[argument.arg]
                ]
    assert written == []
    import cohortsql

    assert "{default:" not in (cohortsql.cohort_shapley.__doc__ or "")
    assert f"default {options.Estimation.max_permutations})" in (cohortsql.cohort_shapley.__doc__ or "")
