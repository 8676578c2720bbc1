"""Every surface a user reaches cohort Shapley values through, as one function each: a case of the
corpus in, the values out as a table (id, feature, shapley), or the surface's own `CohortError`.

A new surface is one function here and its name in `SURFACES`; `test_matrix.py` then runs every case of
the corpus through it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest
from corpus import ID, Case
from oracle import MAX_INTEGRATED_TARGETS
from typer.testing import CliRunner

import cohortsql
import cohortsql.polars  # noqa: F401 (the df.cohort namespace)
from cohortsql.cli import app
from cohortsql.errors import CohortError

COLUMNS = [ID, "feature", "shapley"]


@dataclass
class Context:
    """What a surface may need beside the case: a directory of its own and the tests' engines."""

    tmp_path: Path
    request: Any
    """pytest's request, for the engines' fixtures (Spark, PostgreSQL), asked for only by their surfaces."""

    def fixture(self, name: str) -> Any:
        return self.request.getfixturevalue(name)


Surface = Callable[[Case, Context], pl.DataFrame]


def _values(result: Any) -> pl.DataFrame:
    return result.local.select(COLUMNS)


def api(case: Case, context: Context) -> pl.DataFrame:
    return _values(
        cohortsql.cohort_shapley(case.frame(), prediction=case.prediction, similarity=case.similarity, id=ID)
    )


def polars_namespace(case: Case, context: Context) -> pl.DataFrame:
    frame = case.frame()
    return _values(frame.cohort.shapley(prediction=case.prediction, similarity=case.similarity, id=ID))


def cli(case: Case, context: Context) -> pl.DataFrame:
    """`cohortsql shapley --config` (a TOML file holds any name, whatever it contains) to Parquet."""
    return _configured_command(case, context, "shapley")


def game(case: Case, context: Context) -> pl.DataFrame:
    """`cohortsql.game_shapley` of the cohort variance game: v(t, u) = Var_{C_{t,u}}(y) - Var(y)."""
    result = cohortsql.game_shapley(
        case.frame(), game="cohort-variance", prediction=case.prediction, similarity=case.similarity, id=ID
    )
    return _values(result)


def game_cli(case: Case, context: Context) -> pl.DataFrame:
    """`cohortsql game --config` of the cohort variance game (named in the TOML file) to Parquet."""
    return _configured_command(case, context, "game", ['game = "cohort-variance"'])


def _configured_command(case: Case, context: Context, command: str, settings: list[str] | None = None) -> pl.DataFrame:
    """`cohortsql COMMAND --config` with the case's data, prediction, id and kinds (and `settings`), to Parquet."""
    data, out, config = (context.tmp_path / name for name in ("data.parquet", "out.parquet", "run.toml"))
    case.frame().write_parquet(data)
    defaulted = [name for name, kind in case.similarity.items() if kind is None]
    lines = [f"data = {json.dumps(str(data))}", f"prediction = {json.dumps(case.prediction)}", f'id = "{ID}"']
    lines += settings or []
    lines += [f"features = {json.dumps(defaulted)}"] if defaulted else []
    lines += ["[similar]"] + [
        f"{json.dumps(name)} = {json.dumps(kind)}" for name, kind in case.similarity.items() if kind
    ]
    config.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(app, [command, "--config", str(config), "--out", str(out)])
    if result.exit_code == 2:
        raise CohortError(result.output.strip().removeprefix("cohortsql: error: "))
    assert result.exit_code == 0, result.output
    return pl.read_parquet(out).select(COLUMNS)


def _duckdb_table(case: Case) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.register("staged", case.frame().to_arrow())
    connection.execute(f'CREATE TABLE "{case.table}" AS SELECT * FROM staged')
    connection.unregister("staged")
    return connection


def duckdb_function(case: Case, context: Context) -> pl.DataFrame:
    """DuckDB's table function ``cohort_shapley``, from SQL: its similarity is one string, each name
    written as a SQL identifier (double quotes, doubled inside); a refusal is DuckDB's error carrying
    cohortsql's message, which a SQL caller reads."""
    connection = _duckdb_table(case)
    cohortsql.register(connection)

    def name(text: str) -> str:
        return '"' + text.replace('"', '""') + '"'

    def literal(value: str) -> str:
        return "'" + value.replace("'", "''") + "'"

    similarity = ", ".join(
        name(feature) + ("" if kind is None else f"={kind}") for feature, kind in case.similarity.items()
    )
    sql = (
        f"SELECT * FROM cohort_shapley({literal(_quoted_table(case, 'duckdb'))}, {literal(case.prediction)},"
        f" {literal(similarity)}, id := 'id')"
    )
    try:
        return pl.from_arrow(connection.sql(sql).to_arrow_table()).select(COLUMNS)
    except duckdb.Error as error:
        text = str(error)
        if "CohortError: " not in text:
            raise
        raise CohortError(text.split("CohortError: ", 1)[1]) from None


def _printed(case: Case, dialect: str) -> str:
    return cohortsql.sql_query(
        case.frame(),
        prediction=case.prediction,
        similarity=case.similarity,
        id=ID,
        table=_quoted_table(case, dialect),
        dialect=dialect,
        variant="values",
    )


def _quoted_table(case: Case, dialect: str) -> str:
    quote = "`" if dialect == "spark" else '"'
    return quote + case.table.replace(quote, quote * 2) + quote


def printed_duckdb(case: Case, context: Context) -> pl.DataFrame:
    """The values query `cohortsql sql --variant values` prints, run by DuckDB on a table."""
    connection = _duckdb_table(case)
    return pl.from_arrow(connection.sql(_printed(case, "duckdb")).to_arrow_table()).select(COLUMNS)


def spark(case: Case, context: Context) -> pl.DataFrame:
    session = context.fixture("spark_session")
    return _values(
        cohortsql.cohort_shapley(
            case.frame(), prediction=case.prediction, similarity=case.similarity, id=ID, connection=session
        )
    )


def printed_spark(case: Case, context: Context) -> pl.DataFrame:
    """The values query printed for Spark SQL, run by Spark on a view of the table."""
    session = context.fixture("spark_session")
    try:
        view = session.createDataFrame(case.frame().to_arrow())
    except Exception as error:  # a type Spark has no column for (uint64): not what this surface tests
        pytest.skip(f"Spark cannot hold this table: {str(error).splitlines()[0]}")
    view.createOrReplaceTempView(case.table)
    try:
        rows = session.sql(_printed(case, "spark")).collect()
    finally:
        session.catalog.dropTempView(case.table)
    return pl.DataFrame([row.asDict() for row in rows]).select(COLUMNS)


def postgres_upload(case: Case, context: Context) -> pl.DataFrame:
    """PostgreSQL through ADBC, the frame sent by cohortsql."""
    connection = context.fixture("adbc_postgres")
    return _values(
        cohortsql.cohort_shapley(
            case.frame(), prediction=case.prediction, similarity=case.similarity, id=ID, connection=connection
        )
    )


def _postgres_table(case: Case, context: Context) -> Any:
    """The case as a table of the tests' PostgreSQL server, written by the ADBC driver's own ingestion."""
    connection = context.fixture("adbc_postgres")
    frame = case.frame()
    for name, dtype in frame.schema.items():
        if dtype == pl.UInt64 and (frame[name].max() or 0) >= 2**63:  # type: ignore[operator]
            pytest.skip("PostgreSQL has no unsigned BIGINT: its driver stores such values wrapped to negative ones")
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {_quoted_table(case, 'postgres')}")
        try:
            cursor.adbc_ingest(case.table, frame.to_arrow(), mode="create")
        except Exception as error:  # a type PostgreSQL has no column for: not what this surface tests
            pytest.skip(f"PostgreSQL's driver cannot store this table: {str(error).splitlines()[0]}")
    return connection


def postgres_table(case: Case, context: Context) -> pl.DataFrame:
    """PostgreSQL through ADBC, reading a table of the server by name."""
    connection = _postgres_table(case, context)
    return _values(
        cohortsql.cohort_shapley(
            _quoted_table(case, "postgres"),
            prediction=case.prediction,
            similarity=case.similarity,
            id=ID,
            connection=connection,
        )
    )


def printed_postgres(case: Case, context: Context) -> pl.DataFrame:
    """The values query printed for PostgreSQL, run by the server on the table."""
    connection = _postgres_table(case, context)
    with connection.cursor() as cursor:
        cursor.execute(_printed(case, "postgres"))
        table = cursor.fetch_arrow_table()
    return pl.from_arrow(table).select(COLUMNS)


def audit(case: Case, context: Context) -> pl.DataFrame:
    """The audit's cohort run, with the case's last feature (or its `protected`) as the attribute;
    `test_matrix` checks its groups as well."""
    found = cohortsql.audit(
        case.frame(),
        prediction=case.prediction,
        protected=case.attribute,
        similarity=case.similarity,
        id=ID,
        bootstrap=5,
        seed=1,
    )
    context.audit = found  # type: ignore[attr-defined]
    return _values(found.cohort)


def report(case: Case, context: Context) -> pl.DataFrame:
    """The HTML report of the values: written, every feature named in it."""
    result = cohortsql.cohort_shapley(case.frame(), prediction=case.prediction, similarity=case.similarity, id=ID)
    path = context.tmp_path / "report.html"
    result.report(path)
    import html

    text = path.read_text()
    assert all(html.escape(feature) in text for feature in result.features)
    return _values(result)


def effects_report(case: Case, context: Context) -> pl.DataFrame:
    """The Shapley effects' own HTML report, under a configured engine: written, every feature named
    in it; the values are those of the same configured engine."""
    options = dict(prediction=case.prediction, similarity=case.similarity, id=ID, engine=cohortsql.DuckDB())
    effects = cohortsql.shapley_effects(case.frame(), **options)
    path = context.tmp_path / "effects.html"
    effects.report(path)
    import html

    text = path.read_text()
    assert all(html.escape(feature) in text for feature in effects.effects["feature"].to_list())
    return _values(cohortsql.cohort_shapley(case.frame(), **options))


INCLUDED = 3
"""The ids the include surface asks for beside a sample of one row."""


def include(case: Case, context: Context) -> pl.DataFrame:
    """Chosen ids explained beside a random sample of one row (``include=``): the chosen ids' values."""
    frame = case.frame()
    chosen = frame[ID].head(INCLUDED).to_list() or [0]  # a table of no rows is refused for having none
    result = cohortsql.cohort_shapley(
        frame, prediction=case.prediction, similarity=case.similarity, id=ID, sample=1, seed=1, include=chosen
    )
    assert set(chosen) <= set(result.ids.to_list()) and int(result.in_sample.sum()) == 1
    return _values(result).filter(pl.col(ID).is_in(chosen))


def integrated(case: Case, context: Context) -> pl.DataFrame:
    """Integrated gradient cohort Shapley (``method="integrated"``) of the case's first rows."""
    frame = case.frame()
    return _values(
        cohortsql.cohort_shapley(
            frame,
            prediction=case.prediction,
            similarity=case.similarity,
            id=ID,
            method="integrated",
            targets=frame[ID].head(MAX_INTEGRATED_TARGETS).to_list(),
        )
    )


def insertion_deletion(case: Case, context: Context) -> pl.DataFrame:
    """The insertion and deletion curves along cohort Shapley's own order, as (id, 'insertion:m', mean) rows."""
    frame = case.frame()
    options = dict(prediction=case.prediction, similarity=case.similarity, id=ID)
    values = cohortsql.cohort_shapley(frame, targets=frame[ID].head(MAX_INTEGRATED_TARGETS).to_list(), **options)
    curves = cohortsql.insertion_deletion(frame, attributions=values, **options).curves
    return pl.concat(
        [
            curves.select(ID, pl.format(f"{name}:{{}}", pl.col("step")).alias("feature"), pl.col(name).alias("shapley"))
            for name in ("insertion", "deletion")
        ]
    )


def fairness(case: Case, context: Context) -> pl.DataFrame:
    """`cohortsql.fairness` of the decisions "prediction at or above its median" by the case's protected
    attribute (a number with more than 4 distinct values in two bins at its median: `fairness_bins`),
    its groups as rows (id = the group's rank by size, then rate): ``rows`` and ``selection_rate``."""
    frame = case.frame()
    found = cohortsql.fairness(
        frame,
        prediction=case.prediction,
        protected=case.attribute,
        threshold=fairness_threshold(frame, case.prediction),
        bootstrap=0,
        **fairness_bins(frame, case.attribute),
    )
    return groups_as_rows(found.groups["rows"].to_list(), found.groups["selection_rate"].to_list())


def fairness_threshold(frame: pl.DataFrame, prediction: str) -> float:
    """The median prediction (0 for a table of no rows, which is refused for having none)."""
    values = frame[prediction].cast(pl.Float64).to_numpy()
    return float(np.median(values)) if values.size else 0.0


def fairness_bins(frame: pl.DataFrame, attribute: str) -> dict[str, Any]:
    """Two bins split at the median of a numeric attribute's finite values (quartiles are the library's
    own choice, tested elsewhere), none for the others."""
    values = frame[attribute]
    if not values.dtype.is_numeric() or values.dtype == pl.Boolean:
        return {}
    numbers = values.cast(pl.Float64).to_numpy()
    finite = numbers[np.isfinite(numbers)]
    if len(np.unique(numbers[~np.isnan(numbers)])) <= 4 or not finite.size:
        return {}
    return {"protected_bins": {attribute: [float(np.median(finite))]}}


def groups_as_rows(rows: list[int], rates: list[float]) -> pl.DataFrame:
    """Groups in a canonical order (by size, then rate) as the matrix's long rows."""
    ordered = sorted(zip(rows, rates, strict=True))
    return pl.DataFrame(
        {
            ID: [index for index in range(len(ordered)) for _ in range(2)],
            "feature": ["rows", "selection_rate"] * len(ordered),
            "shapley": [float(value) for pair in ordered for value in pair],
        }
    )


SURFACES: dict[str, Surface] = {
    "api": api,
    "polars": polars_namespace,
    "cli": cli,
    "duckdb_function": duckdb_function,
    "printed_duckdb": printed_duckdb,
    "spark": spark,
    "printed_spark": printed_spark,
    "postgres_upload": postgres_upload,
    "postgres_table": postgres_table,
    "printed_postgres": printed_postgres,
    "audit": audit,
    "report": report,
    "integrated": integrated,
    "insertion_deletion": insertion_deletion,
    "fairness": fairness,
    "effects_report": effects_report,
    "include": include,
    "game": game,
    "game_cli": game_cli,
}
"""Every surface, by name: the matrix's columns."""

SPARK_SURFACES = ("spark", "printed_spark")
