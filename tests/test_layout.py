"""The package's shape: no import cycle between its modules, type-only and deferred imports included
(every import statement counts, wherever it stands)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cohortsql"


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that `path` imports anywhere (top level, functions, TYPE_CHECKING blocks)."""

    def resolved(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cohortsql"):
            found |= {resolved(f"{node.module}.{alias.name}") or resolved(node.module) for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {resolved(alias.name) for alias in node.names if alias.name.startswith("cohortsql")}
    return {name for name in found if name is not None}


def test_no_import_cycles():
    known = modules()
    graph = {name: imports(path, known) - {name} for name, path in known.items()}
    graph["cohortsql"] = set()  # the package root only names the public entry points
    cycles = []

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            cycles.append(trail[trail.index(name) :] + [name])
            return
        if name in done:
            return
        for imported in sorted(graph.get(name, ())):
            visit(imported, [*trail, name])
        done.add(name)

    done: set[str] = set()
    for name in sorted(graph):
        visit(name, [])
    assert not cycles, " -> ".join(cycles[0])


def test_the_layers_of_the_design_hold():
    """import-linter's contracts (pyproject.toml): each folder imports only the folders below it, and
    the surfaces reach what lies below `api/` through `api/surfaces.py` only. No import is excepted."""
    import tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["importlinter"]
    ignored = [rule for contract in config["contracts"] for rule in contract.get("ignore_imports", [])]
    assert ignored == []
    from importlinter.cli import lint_imports

    # its report of a broken contract goes to stdout, which pytest shows when the test fails
    assert lint_imports(config_filename=str(PACKAGE.parent / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_the_registries_name_what_they_hold():
    """The dialect names the signatures and the command line offer (`_typing.DIALECTS`) are the
    dialects' registry's own, each dialect under its own name."""
    from cohortsql._typing import DIALECTS
    from cohortsql.dialects import NATIVE_DIALECTS, TRANSPILED_DIALECTS

    registry = {**NATIVE_DIALECTS, **TRANSPILED_DIALECTS}
    assert set(DIALECTS) == set(registry)
    assert all(dialect.name == name for name, dialect in registry.items())


def test_no_module_but_the_planner_compares_a_method_or_a_path():
    """The method and path are resolved once, by the planner (`run/strategy.py`), into a typed `Route`
    (`run/route.py`) that the rest asks what it allows: no other module compares them as strings. The
    printed SQL's ``variant`` (which query is printed) and a similarity ``kind`` (``exact``) are words
    of other vocabularies, and may."""
    vocabulary = {"exact", "permutation", "integrated", "auto", "pairwise", "grouping_sets"}
    planner = {PACKAGE / "run" / "strategy.py", PACKAGE / "run" / "route.py"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in planner:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            named = [
                item.value
                for operand in operands
                for item in ([operand] if isinstance(operand, ast.Constant) else getattr(operand, "elts", []))
                if isinstance(item, ast.Constant) and item.value in vocabulary
            ]
            other = any(isinstance(operand, ast.Name) and operand.id in ("variant", "kind") for operand in operands)
            if named and not other:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node)}")
    assert found == []
