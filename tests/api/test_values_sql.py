"""The whole computation in the warehouse: `sql_query(variant="values" | "effects")` run unchanged
by DuckDB, Spark (classic and Connect) and a real PostgreSQL server equals `cohort_shapley` and
`shapley_effects`, for every similarity kind, with NULLs, NaN and case weights; BigQuery's and
Snowflake's output parses in their dialects."""

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl
import pytest
import sqlglot
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

TOLERANCE = 1e-9
SIMILARITY = {
    "age": "quantile:0.2",
    "region": "exact",
    "income": "bins:4",
    "tenure": "sql:abs(s.tenure - t.tenure) <= 2",
    "opened": "range:0.1",
    "rate": "relative:0.1",
    "band": "abs:1",
}


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(24)
    n = 90
    tenure = rng.integers(0, 12, n)
    return pl.DataFrame(
        {
            "loan": [f"L{i:03d}" for i in range(n)],
            "age": np.where(tenure == 3, np.nan, rng.uniform(20, 70, n)),
            "region": rng.choice(["north", "south", "east"], n).tolist(),
            "income": rng.lognormal(3, 0.5, n),
            "tenure": tenure,
            "opened": [
                datetime.date(2020, 1, 1) + datetime.timedelta(days=int(day)) for day in rng.integers(0, 900, n)
            ],
            "rate": rng.uniform(1, 5, n),
            "band": rng.integers(0, 6, n).astype(np.float64),
            "score": rng.uniform(size=n) + 1e6,  # an offset: sums must keep their digits
            "w": rng.integers(0, 4, n).astype(np.float64),
        }
    ).with_columns(
        age=pl.when(pl.col("tenure") == 5).then(None).otherwise(pl.col("age")),  # NULL beside NaN
        region=pl.when(pl.col("tenure") == 4).then(None).otherwise(pl.col("region")),
    )


@dataclass
class Warehouse:
    """Where a printed query runs: its dialect and a function from SQL to a polars frame."""

    dialect: str
    run: Callable[[str], pl.DataFrame]


@pytest.fixture(scope="module", params=["duckdb", "spark", "postgres"])
def warehouse(request, frame) -> Warehouse:
    """The table `loans` in each warehouse, and how to run a query there. (A Spark Connect client
    sends the same text to the same server: the query is the classic session's, so it is run once.)"""
    if request.param == "postgres":
        from postgres import fetch, load_table

        connection = request.getfixturevalue("postgres")
        load_table(connection, "loans", frame)
        return Warehouse("postgres", lambda sql: fetch(connection, sql))
    if request.param == "spark":
        session = request.getfixturevalue("spark_session")
        session.createDataFrame(frame.to_arrow()).createOrReplaceTempView("loans")
        return Warehouse("spark", lambda sql: pl.from_arrow(session.sql(sql).toArrow()))
    import duckdb

    connection = duckdb.connect()
    connection.register("loans", frame.to_arrow())
    return Warehouse("duckdb", lambda sql: connection.sql(sql).pl())


CASES = {
    "every row": {"weight": None, "targets": None},
    "weighted, by predicate": {"weight": "w", "targets": "tenure > 4"},
}


@pytest.fixture(scope="module")
def library(frame):
    """The library's own values and effects for each case (computed once)."""
    done = {}
    for name, case in CASES.items():
        options = {"prediction": "score", "similarity": SIMILARITY, "id": "loan", **case}
        done[name] = (cohortsql.cohort_shapley(frame, **options), cohortsql.shapley_effects(frame, **options))
    return done


@pytest.mark.parametrize("case", list(CASES))
def test_the_values_query_equals_the_library_in_every_warehouse(warehouse, frame, library, case):
    options = {"prediction": "score", "similarity": SIMILARITY, "id": "loan", "table": "loans", **CASES[case]}
    local, effects = library[case]
    values = warehouse.run(cohortsql.sql_query(frame, dialect=warehouse.dialect, variant="values", **options))
    assert values.columns == ["id", "feature", "shapley", "shapley_squared"]
    assert values["id"].to_list() == np.repeat(local.ids.to_numpy(), len(SIMILARITY)).tolist()
    assert values["feature"].to_list() == list(SIMILARITY) * local.ids.len()
    np.testing.assert_allclose(values["shapley"].to_numpy().reshape(local.shapley.shape), local.shapley, atol=TOLERANCE)
    np.testing.assert_allclose(
        values["shapley_squared"].to_numpy().reshape(local.shapley.shape), local.shapley_squared, atol=TOLERANCE
    )
    table = warehouse.run(cohortsql.sql_query(frame, dialect=warehouse.dialect, variant="effects", **options))
    assert table.columns == ["feature", "shapley_effect", "share", "variance"]
    assert table["feature"].to_list() == effects.effects["feature"].to_list()  # largest first, as the library's
    np.testing.assert_allclose(table["shapley_effect"], effects.effects["shapley_effect"], atol=TOLERANCE)
    np.testing.assert_allclose(table["share"], effects.effects["share"], rtol=1e-9)
    np.testing.assert_allclose(table["variance"], effects.variance, rtol=1e-9)


@pytest.mark.parametrize("variant", ["values", "effects"])
@pytest.mark.parametrize("dialect", ["bigquery", "snowflake"])
def test_bigquery_and_snowflake_output_parses_in_their_dialects(frame, dialect, variant):
    """Not run (no warehouse here), but parsed back in the dialect, and free of the functions
    transpiling would have kept though the warehouse lacks them."""
    text = cohortsql.sql_query(
        frame,
        prediction="score",
        similarity=SIMILARITY,
        id="loan",
        table="analytics.loans",
        dialect=dialect,
        variant=variant,
        weight="w",
    )
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    (tree,) = sqlglot.parse(body, read=dialect)
    assert tree is not None and "analytics.loans" in body
    for missing in ("BIT_COUNT", "FACTORIAL", "EPOCH_US", "ISNAN", "GENERATE_SERIES", "RANGE("):
        assert missing not in body.upper()
    assert 'The quantiles of "age" (weighted quantiles) are numbers computed from the data' in text
    if dialect == "snowflake":
        assert "IS_NAN" not in body and "BITAND" in body


def test_bigquery_quantiles_are_numbers_from_the_data_it_was_printed_from(frame):
    """BigQuery has PERCENTILE_CONT only as a window function: the widths enter as numbers, and say so."""
    text = cohortsql.sql_query(
        frame,
        prediction="score",
        similarity={"age": "quantile:0.2"},
        id="loan",
        table="loans",
        dialect="bigquery",
        variant="values",
    )
    assert "PERCENTILE" not in text.upper().split("-- ")[-1]
    assert "(bigquery has no exact quantile aggregate) are numbers computed from the data" in text
    high, low = re.search(r"CAST\(([-0-9.e]+) AS FLOAT64\) - CAST\(([-0-9.e]+) AS FLOAT64\)", text).groups()
    ages = frame["age"].fill_nan(None).drop_nulls().to_numpy()
    np.testing.assert_allclose([float(low), float(high)], np.quantile(ages, [0.05, 0.95]), rtol=1e-12)


@pytest.mark.parametrize(
    "targets, sample",
    [(["L001", "L050", "L089"], None), (None, 12), ("region = 'north'", 0.5)],
    ids=["ids", "sample", "sample of a predicate"],
)
def test_the_values_query_explains_the_chosen_targets(frame, targets, sample):
    import duckdb

    options = {"prediction": "score", "similarity": SIMILARITY, "id": "loan", "targets": targets, "sample": sample}
    connection = duckdb.connect()
    connection.register("loans", frame.to_arrow())
    values = connection.sql(cohortsql.sql_query(frame, table="loans", variant="values", seed=4, **options)).pl()
    direct = cohortsql.cohort_shapley(frame, seed=4, **options)
    assert values["id"].unique(maintain_order=True).to_list() == direct.ids.to_list()
    np.testing.assert_allclose(
        values["shapley"].to_numpy().reshape(direct.shapley.shape), direct.shapley, atol=TOLERANCE
    )


@pytest.mark.parametrize(
    "options, message",
    [
        ({"variant": "histogram", "weight": "w"}, "weight= needs variant='values' or 'effects'"),
        ({"variant": "values", "weight": "wt"}, "'wt'"),
        ({"variant": "values", "similarity": {f"x{i}": "exact" for i in range(25)}}, "at most 24 features"),
    ],
)
def test_refusals_name_what_is_wrong(options, message):
    wide = pl.DataFrame({**{f"x{i}": [0, 1, 0] for i in range(25)}, "score": [1.0, 2.0, 3.0], "w": [1.0, 1.0, 2.0]})
    options.setdefault("similarity", {"x0": "exact"})
    with pytest.raises(cohortsql.CohortError, match=message):
        cohortsql.sql_query(wide, prediction="score", table="t", **options)


def test_the_sql_command_prints_the_values_query(frame, tmp_path):
    import duckdb

    path = tmp_path / "loans.parquet"
    frame.write_parquet(path)
    kinds = [argument for name, kind in SIMILARITY.items() for argument in ("--similar", f"{name}={kind}")]
    printed = CliRunner().invoke(
        app,
        ["sql", str(path), "--prediction", "score", "--id", "loan", "--weight", "w", "--variant", "effects", *kinds],
    )
    assert printed.exit_code == 0, printed.output
    effects = duckdb.sql(printed.output).pl()
    direct = cohortsql.shapley_effects(frame, prediction="score", similarity=SIMILARITY, id="loan", weight="w")
    np.testing.assert_allclose(effects["shapley_effect"], direct.effects["shapley_effect"], atol=TOLERANCE)


@pytest.fixture(params=["duckdb", "spark", "postgres"])
def loader(request):
    """Load a frame as table `later` of a warehouse and return how to run a query there."""
    if request.param == "postgres":
        from postgres import fetch, load_table

        connection = request.getfixturevalue("postgres")
        return "postgres", lambda frame: load_table(connection, "later", frame), lambda sql: fetch(connection, sql)
    if request.param == "spark":
        session = request.getfixturevalue("spark_session")
        return (
            "spark",
            lambda frame: session.createDataFrame(frame.to_arrow()).createOrReplaceTempView("later"),
            lambda sql: pl.from_arrow(session.sql(sql).toArrow()),
        )
    import duckdb

    connection = duckdb.connect()
    return "duckdb", lambda frame: connection.register("later", frame.to_arrow()), lambda sql: connection.sql(sql).pl()


@pytest.mark.parametrize("variant", ["values", "effects", "histogram"])
@pytest.mark.parametrize(
    "damage, message",
    [
        (pl.col("rate").fill_null(0) + pl.when(pl.col("tenure") == 7).then(float("inf")).otherwise(0), "rate"),
        (pl.when(pl.col("tenure") == 7).then(None).otherwise(pl.col("score")), "prediction column"),
    ],
    ids=["an infinite window value", "a NULL prediction"],
)
def test_a_printed_query_refuses_what_the_library_refuses(frame, loader, variant, damage, message):
    """The query was printed from clean data; the table it later runs on has an infinity in a range
    column (which collapsed that feature's values to about 0) or a NULL prediction (left out of the mean)."""
    dialect, load, run = loader
    column = "rate" if message == "rate" else "score"
    similarity = {"rate": "range:0.1", "region": "exact"}
    later = frame.with_columns(damage.alias(column))
    with pytest.raises(cohortsql.CohortError, match="infinite|NULL"):
        cohortsql.cohort_shapley(later, prediction="score", similarity=similarity, id="loan")  # the library's refusal
    sql = cohortsql.sql_query(
        frame, prediction="score", similarity=similarity, id="loan", table="later", dialect=dialect, variant=variant
    )
    load(later)
    with pytest.raises(Exception, match=message) as refused:
        run(sql)
    assert "cohortsql:" in str(refused.value)
