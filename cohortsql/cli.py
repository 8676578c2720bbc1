"""The `cohortsql` command line: explain a prediction table from the shell.

Every failure a user can cause prints one line on stderr and exits with status 2 (``--debug``
shows the traceback instead). Output files are written atomically.
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import duckdb
import typer

from cohortsql.api import METHODS, cohort_shapley
from cohortsql.errors import CohortError
from cohortsql.output import sibling_path, write_frame, write_tables
from cohortsql.result import CohortShapleyResult

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_QUERY = re.compile(r"^\s*(select|with|from|values)\b", re.IGNORECASE)
_DATABASE_TABLE = re.compile(r"^(?P<database>.+\.(duckdb|db|ddb)):(?P<table>[^:]+)$")

Data = Annotated[
    str | None,
    typer.Argument(
        help="A parquet/csv/json path or glob, FILE.duckdb:TABLE, or a quoted SQL query.", show_default=False
    ),
]
Prediction = Annotated[str | None, typer.Option(help="The column to explain (a model's prediction or an outcome).")]
Id = Annotated[str | None, typer.Option("--id", help="The column that identifies rows (default: 0-based row position).")]
Similar = Annotated[
    list[str] | None,
    typer.Option(
        "--similar",
        help="FEATURE=KIND, repeatable. Kinds: exact, abs:D, relative:D, range:R, quantile:R[:P], bins:K, sql:EXPR.",
    ),
]
Features = Annotated[str | None, typer.Option(help="Comma-separated features that get default kinds.")]
Targets = Annotated[str | None, typer.Option(help="SQL predicate over the data's columns choosing the targets.")]
TargetIds = Annotated[str | None, typer.Option(help="Comma-separated ids of the targets.")]
Method = Annotated[str | None, typer.Option(help=f"{' | '.join(METHODS)}.")]
Out = Annotated[
    Path | None,
    typer.Option(help="Write the long table here (.parquet or .csv) and the per-target totals beside it (_totals)."),
]
IntoTable = Annotated[str | None, typer.Option(help="Also write the results into this table (and NAME_totals) of --database.")]
Database = Annotated[Path | None, typer.Option(help="DuckDB database file for --into-table.")]
Config = Annotated[Path | None, typer.Option(help="TOML file with any of these options; flags override it.")]
Top = Annotated[int, typer.Option(help="How many features the summary lists.")]
Debug = Annotated[bool, typer.Option(help="Show the traceback of a failure.")]

@app.callback()
def cohortsql() -> None:
    """Explain decisions in prediction tables with cohort Shapley values (Mase, Owen & Seiler)."""


_PATH_KEYS = ("data", "out", "database")

RUN_KEYS = ("data", "prediction", "id", "similar", "features", "targets", "target_ids", "method", "out", "into_table", "database")


@app.command(
    epilog=(
        "Examples:\n\n"
        "  cohortsql run examples/data/boston_predictions.parquet --prediction prediction"
        " --similar lstat=quantile:0.1 --similar rm=quantile:0.1 --features chas,rad\n\n"
        "  cohortsql run 'scores/*.parquet' --prediction score --id loan_id --features age,income"
        " --targets \"region = 'north'\" --out explained.parquet\n\n"
        "  cohortsql run --config explain.toml --out explained.csv"
    )
)
def run(
    data: Data = None,
    prediction: Prediction = None,
    id: Id = None,
    similar: Similar = None,
    features: Features = None,
    targets: Targets = None,
    target_ids: TargetIds = None,
    method: Method = None,
    out: Out = None,
    into_table: IntoTable = None,
    database: Database = None,
    config: Config = None,
    top: Top = 10,
    debug: Debug = False,
) -> None:
    """Cohort Shapley values of every feature for every target; prints the most important features."""
    flags = dict(
        data=data, prediction=prediction, id=id, features=features, targets=targets,
        target_ids=target_ids, method=method, out=out, into_table=into_table, database=database,
    )
    with _reported_failures(debug):
        flags["similar"] = dict(_split_similar(text) for text in similar or [])
        options = _merge_config(config, flags, RUN_KEYS)
        result = _explain(options)
        _write_outputs(result, options)
        typer.echo(summary(result, top))


def summary(result: CohortShapleyResult, top: int) -> str:
    """A short report: the run's size and the features ranked by mean |CS| and by mean squared CS."""
    importance = result.global_
    by_value = importance.sort("mean_abs_shapley", descending=True).head(top)
    by_square = importance.sort("shapley_effect", descending=True).head(top)
    lines = [
        f"{len(result.ids)} targets x {len(result.features)} features, {result.subjects} subjects,"
        f" mean {result.mean:.6g}, method {result.method}",
        "",
        f"{'by mean |shapley|':<34}{'by mean shapley_squared':<34}",
    ]
    width = max(len(feature) for feature in result.features)
    for left, right in zip(by_value.iter_rows(named=True), by_square.iter_rows(named=True)):
        lines.append(
            f"{left['feature']:<{width}}  {left['mean_abs_shapley']:<{30 - width}.4g}  "
            f"{right['feature']:<{width}}  {right['shapley_effect']:.4g}"
        )
    return "\n".join(lines)


def _explain(options: dict[str, Any]) -> CohortShapleyResult:
    if not options.get("data"):
        raise CohortError("no DATA given: pass a file, FILE.duckdb:TABLE or a SQL query (or data = ... in --config)")
    if not options.get("prediction"):
        raise CohortError("no --prediction given: name the column to explain")
    if options.get("targets") and options.get("target_ids"):
        raise CohortError("give --targets or --target-ids, not both")
    with _opened(options["data"]) as (data, connection):
        return cohort_shapley(
            data,
            prediction=options["prediction"],
            similarity=_similarity(options.get("similar"), options.get("features")),
            id=options.get("id"),
            targets=options.get("targets") or _target_ids(options.get("target_ids")),
            method=options.get("method") or "exact",
            connection=connection,
        )


@contextmanager
def _opened(data: str) -> Iterator[tuple[Any, duckdb.DuckDBPyConnection | None]]:
    """DATA as something `cohort_shapley` reads, with the connection it needs (if any)."""
    if _QUERY.match(data):
        connection = duckdb.connect()
        try:
            yield connection.sql(data), connection
        except duckdb.Error as error:
            raise CohortError(f"DATA query: {str(error).splitlines()[0]}") from None
        finally:
            connection.close()
        return
    match = _DATABASE_TABLE.match(data)
    if match and not Path(data).exists():
        database = match["database"]
        if not Path(database).is_file():
            raise CohortError(f"no DuckDB database file {database!r}; check the path")
        connection = duckdb.connect(database, read_only=True)
        try:
            yield match["table"], connection
        finally:
            connection.close()
        return
    yield data, None


def _similarity(similar: dict[str, str] | None, features: str | list[str] | None) -> dict[str, str | None]:
    """--features (default kinds) then --similar FEATURE=KIND, in the order given."""
    names = features.split(",") if isinstance(features, str) else list(features or [])
    kinds: dict[str, str | None] = {name.strip(): None for name in names if name.strip()}
    if not isinstance(similar or {}, dict):
        raise CohortError("similar must be a table of FEATURE = KIND, e.g. [similar] age = \"range:0.1\"")
    kinds.update(similar or {})
    if not kinds:
        raise CohortError("no features given: use --similar FEATURE=KIND or --features a,b,c")
    return kinds


def _split_similar(text: str) -> tuple[str, str]:
    name, equals, kind = text.partition("=")
    if not equals or not name.strip() or not kind.strip():
        raise CohortError(f"--similar {text!r} is not FEATURE=KIND, e.g. --similar age=range:0.1")
    return name.strip(), kind.strip()


def _target_ids(text: str | list[Any] | None) -> list[Any] | None:
    if text is None or isinstance(text, list):
        return text
    values = [value.strip() for value in text.split(",") if value.strip()]
    if values and all(re.fullmatch(r"-?\d+", value) for value in values):
        return [int(value) for value in values]
    return values


def _write_outputs(result: CohortShapleyResult, options: dict[str, Any]) -> None:
    tables = {"": result.local, "totals": result.totals}
    if options.get("out"):
        out = Path(options["out"])
        for label, frame in tables.items():
            write_frame(frame, sibling_path(out, label) if label else out)
    if options.get("into_table"):
        if not options.get("database"):
            raise CohortError("--into-table needs --database FILE.duckdb")
        name = options["into_table"]
        write_tables(options["database"], {f"{name}_{label}" if label else name: frame for label, frame in tables.items()})
    elif options.get("database"):
        raise CohortError("--database needs --into-table NAME")


def _merge_config(config: Path | None, flags: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Options from the TOML file, overridden by every flag that was given."""
    options: dict[str, Any] = {}
    if config is not None:
        try:
            options = tomllib.loads(Path(config).read_text())
        except OSError as error:
            raise CohortError(f"cannot read config {str(config)!r}: {error.strerror}") from None
        except tomllib.TOMLDecodeError as error:
            raise CohortError(f"config {str(config)!r} is not valid TOML: {error}") from None
        unknown = sorted(set(options) - set(keys))
        if unknown:
            raise CohortError(f"config {str(config)!r} has unknown keys {unknown}; known keys: {', '.join(keys)}")
        for key in _PATH_KEYS:
            # Paths in a config file are relative to the file, so it works from any directory.
            value = options.get(key)
            if isinstance(value, str) and not _QUERY.match(value) and not Path(value).is_absolute():
                options[key] = str(Path(config).parent / value)
    for key, value in flags.items():
        if value in (None, [], {}):
            continue
        if isinstance(value, dict) and isinstance(options.get(key), dict):
            value = {**options[key], **value}  # e.g. one --similar flag overrides one feature's kind
        options[key] = value
    return options


@contextmanager
def _reported_failures(debug: bool) -> Iterator[None]:
    """Turn a failure into one line on stderr and exit status 2, unless --debug."""
    try:
        yield
    except CohortError as error:
        if debug:
            raise
        typer.echo(f"cohortsql: error: {error}", err=True)
        raise typer.Exit(2) from None
    except OSError as error:
        if debug:
            raise
        typer.echo(f"cohortsql: error: {error}", err=True)
        raise typer.Exit(2) from None


def main() -> None:
    """Entry point of the `cohortsql` script."""
    app()


if __name__ == "__main__":
    sys.exit(main())
