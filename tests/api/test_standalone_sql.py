"""SQL out and results back in: `sql_query` run by each engine itself, then `assemble`, equals `cohort_shapley`."""

import json

import numpy as np
import polars as pl
import pytest
import sqlglot
from conftest import EngineUnderTest
from typer.testing import CliRunner

import cohortsql
from cohortsql.cli import app

runner = CliRunner()
SIMILARITY = {
    "age": "quantile:0.2",
    "region": "exact",
    "income": "bins:4",
    "tenure": "sql:abs(s.tenure - t.tenure) <= 2",
}
EQUIVALENCES = {"region": "exact", "income": "bins:4", "tenure": "exact"}


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(12)
    n = 150
    return pl.DataFrame(
        {
            "loan": [f"L{i}" for i in range(n)],
            "age": rng.uniform(20, 70, n),
            "region": rng.choice(["n", "s", "e"], n),
            "income": rng.lognormal(3, 0.5, n),
            "tenure": rng.integers(0, 12, n),
            "score": rng.uniform(size=n) + 1e6,  # an offset: sums must keep their digits
        }
    ).with_columns(age=pl.when(pl.col("tenure") == 3).then(None).otherwise(pl.col("age")))


@pytest.fixture(scope="module")
def parquet(tmp_path_factory, frame):
    path = tmp_path_factory.mktemp("standalone") / "loans.parquet"
    frame.write_parquet(path)
    return path


def run_sql(engine, sql):
    """Run a standalone query on the engine under test, as a warehouse would."""
    if engine.name == "spark":
        return pl.from_arrow(engine.options["connection"].sql(sql).toArrow())
    import duckdb

    return duckdb.sql(sql).pl()


def same_results(assembled, direct):
    assert assembled.ids.to_list() == direct.ids.to_list()
    np.testing.assert_allclose(assembled.shapley, direct.shapley, atol=1e-10)
    np.testing.assert_allclose(assembled.shapley_squared, direct.shapley_squared, atol=1e-10)
    np.testing.assert_allclose(assembled.totals["cohort_mean"], direct.totals["cohort_mean"], rtol=1e-14)
    assert assembled.totals["cohort_size"].to_list() == direct.totals["cohort_size"].to_list()
    np.testing.assert_allclose(assembled.totals["prediction"], direct.totals["prediction"], rtol=1e-15)
    assert assembled.mean == pytest.approx(direct.mean, rel=1e-14)
    assert assembled.variance == pytest.approx(direct.variance, rel=1e-9)


@pytest.mark.parametrize(
    "similarity, variant, targets",
    [
        (SIMILARITY, "histogram", None),
        (SIMILARITY, "histogram", "region = 's' AND tenure > 5"),
        (SIMILARITY, "histogram", ["L3", "L40"]),
        ({"age": "range:0.1", "region": "exact", "income": "bins:4"}, "collapsed", None),
        (EQUIVALENCES, "cells", None),
        (EQUIVALENCES, "cells", ["L9", "L100"]),
    ],
    ids=["histogram", "predicate", "ids", "collapsed", "cells", "cells-ids"],
)
def test_the_engines_own_sql_gives_the_library_values(engine, local_files, parquet, similarity, variant, targets):
    sql = cohortsql.sql_query(
        str(parquet),
        prediction="score",
        similarity=similarity,
        id="loan",
        targets=targets,
        dialect=engine.name,
        variant=variant,
    )
    assembled = cohortsql.assemble(run_sql(engine, sql), similarity=similarity)
    direct = cohortsql.cohort_shapley(
        str(parquet), prediction="score", similarity=similarity, id="loan", targets=targets
    )
    same_results(assembled, direct)


def test_without_an_id_targets_are_row_positions(engine, local_files, parquet):
    similarity = {"age": "range:0.1", "region": "exact"}
    sql = cohortsql.sql_query(str(parquet), prediction="score", similarity=similarity, dialect=engine.name)
    assert "row position" in sql
    assembled = cohortsql.assemble(run_sql(engine, sql), similarity=similarity)
    same_results(assembled, cohortsql.cohort_shapley(str(parquet), prediction="score", similarity=similarity))


def test_printed_sql_handles_missing_values_even_when_the_data_it_was_printed_from_had_none(frame, tmp_path):
    """The library skips NaN and NULL handling for columns without them; SQL printed for later runs
    must not: the same query on the file's later contents equals the library on those."""
    import duckdb

    similarity = {"age": "range:0.1", "region": "exact"}
    clean = tmp_path / "clean.parquet"
    frame.with_columns(pl.col("age").fill_null(40.0)).write_parquet(clean)
    sql = cohortsql.sql_query(str(clean), prediction="score", similarity=similarity, id="loan")
    later = frame.with_columns(age=pl.when(pl.col("tenure") == 5).then(float("nan")).otherwise(pl.col("age")))
    later.write_parquet(clean)  # the same file, now with NaN ages as well as NULL ones
    assembled = cohortsql.assemble(duckdb.sql(sql).pl(), similarity=similarity)
    same_results(assembled, cohortsql.cohort_shapley(later, prediction="score", similarity=similarity, id="loan"))


def test_assemble_with_the_permutation_method(parquet):
    import duckdb

    similarity = {"age": "range:0.1", "region": "exact", "income": "abs:5"}
    histogram = duckdb.sql(
        cohortsql.sql_query(str(parquet), prediction="score", similarity=similarity, id="loan", targets=["L1", "L2"])
    ).pl()
    assembled = cohortsql.assemble(histogram, similarity=similarity, method="permutation", seed=5, max_permutations=40)
    direct = cohortsql.cohort_shapley(
        str(parquet),
        prediction="score",
        similarity=similarity,
        id="loan",
        targets=["L1", "L2"],
        method="permutation",
        seed=5,
        max_permutations=40,
    )
    np.testing.assert_allclose(assembled.shapley, direct.shapley, atol=1e-10)
    np.testing.assert_allclose(assembled.shapley_se, direct.shapley_se, atol=1e-10)


@pytest.mark.parametrize("dialect", ["bigquery", "snowflake", "postgres"])
def test_other_dialects_parse(parquet, dialect):
    text = cohortsql.sql_query(
        str(parquet),
        prediction="score",
        similarity={"age": "quantile:0.2", "region": "exact"},
        id="loan",
        targets=["L1"],
        dialect=dialect,
        table="analytics.loans",
    )
    assert "analytics.loans" in text
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    (tree,) = sqlglot.parse(body, read=dialect)
    assert tree is not None


def test_sql_and_assemble_commands(parquet, tmp_path):
    import duckdb

    features = ["--similar", "age=range:0.1", "--similar", "region=exact"]
    printed = runner.invoke(app, ["sql", str(parquet), "--prediction", "score", "--id", "loan", *features])
    assert printed.exit_code == 0, printed.output
    duckdb.sql(printed.output).pl().write_parquet(tmp_path / "histogram.parquet")
    out = tmp_path / "assembled.parquet"
    assembled = runner.invoke(app, ["assemble", str(tmp_path / "histogram.parquet"), *features, "--out", str(out)])
    assert assembled.exit_code == 0, assembled.output
    ran = runner.invoke(
        app,
        [
            "run",
            str(parquet),
            "--prediction",
            "score",
            "--id",
            "loan",
            *features,
            "--out",
            str(tmp_path / "run.parquet"),
        ],
    )
    assert ran.exit_code == 0, ran.output
    ours, theirs = pl.read_parquet(out), pl.read_parquet(tmp_path / "run.parquet")
    assert ours.select("id", "feature").equals(theirs.select("id", "feature"))
    np.testing.assert_allclose(ours["shapley"], theirs["shapley"], atol=1e-10)
    bad = runner.invoke(app, ["sql", str(parquet), "--prediction", "score", "--features", "age", "--dialect", "oracle"])
    assert bad.exit_code == 2 and "dialect must be one of duckdb, spark" in bad.output


@pytest.mark.parametrize(
    "options, message",
    [
        ({"variant": "cells"}, "variant='cells' needs exact or bins similarity"),
        ({"variant": "collapsed", "similarity": {"age": "sql:s.age = t.age"}}, "cannot merge subjects under sql:"),
        ({"variant": "joined"}, "variant must be one of histogram, collapsed, cells"),
        ({"table": "t; DROP TABLE t"}, "table 't; DROP TABLE t' holds a ';'"),
    ],
)
def test_bad_requests(parquet, options, message):
    options.setdefault("similarity", {"age": "range:0.1"})
    with pytest.raises(cohortsql.CohortError, match=message.replace("(", r"\(").replace("[", r"\[")):
        cohortsql.sql_query(str(parquet), prediction="score", **options)


@pytest.mark.parametrize("variant", ["histogram", "cells"])
def test_assemble_refuses_the_features_in_another_order(parquet, variant):
    """The query writes its features, in its order, beside the sums: another order would have swapped
    the features' values without a word."""
    similarity = {"region": "exact", "tenure": "exact"}
    sql = cohortsql.sql_query(parquet, prediction="score", similarity=similarity, id="loan", variant=variant)
    histogram = run_sql(EngineUnderTest("duckdb"), sql)
    assert json.loads(histogram["features"][0]) == ["region", "tenure"]
    with pytest.raises(cohortsql.CohortError, match=r"explained the features \['region', 'tenure'\], in this order"):
        cohortsql.assemble(histogram, similarity={"tenure": "exact", "region": "exact"})
    cohortsql.assemble(histogram, similarity=similarity)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda h: h.with_columns(subjects=pl.lit(None, pl.Int64)), "'subjects' has missing or non-finite"),
        (lambda h: h.with_columns(sum_y=pl.lit(float("nan"))), "'sum_y' has missing or non-finite"),
        (lambda h: h.with_columns(sum_y2=pl.lit("x")), "'sum_y2' holds String, not numbers"),
        (lambda h: h.with_columns(subjects=pl.lit(0, pl.Int64)), "rows of no subjects"),
        (lambda h: h.with_columns(target=pl.lit(None, pl.String)), "rows without a target"),
        (lambda h: h.drop("mean"), r"lacks columns \['mean'\]"),
        (lambda h: h.with_columns(mask0=pl.lit(None, pl.Int64)), "'mask0' holds None: masks over 2 features"),
        (lambda h: h.with_columns(mask0=pl.col("mask0") + 4), "'mask0' holds [4-7]: masks over 2 features"),
        (lambda h: h.with_columns(mask0=-pl.col("mask0") - 1), "'mask0' holds -[1-4]: masks over 2 features"),
        (lambda h: h.with_columns(mask0=pl.col("mask0").cast(pl.Float64)), "'mask0' holds Float64, not whole"),
        (lambda h: h.filter(pl.col("mask0") != 3), "has no histogram row with every bit set"),
        (lambda h: h.with_columns(prediction=pl.col("prediction") + pl.col("mask0")), "more than one prediction"),
    ],
)
def test_a_malformed_histogram_is_one_error_not_a_traceback_or_nan(parquet, damage, message):
    similarity = {"region": "exact", "age": "range:0.1"}
    sql = cohortsql.sql_query(parquet, prediction="score", similarity=similarity, id="loan")
    histogram = run_sql(EngineUnderTest("duckdb"), sql)
    with pytest.raises(cohortsql.CohortError, match=message):
        cohortsql.assemble(damage(histogram), similarity=similarity)


def test_assemble_adds_up_a_histogram_computed_in_parts(parquet):
    """Rows that repeat a target and mask (a UNION ALL of histograms of parts of the data) are added
    up: here every row of several subjects is split in two, one subject's share and the rest's."""
    similarity = {"region": "exact", "age": "range:0.1"}
    sql = cohortsql.sql_query(parquet, prediction="score", similarity=similarity, id="loan")
    histogram = run_sql(EngineUnderTest("duckdb"), sql)
    share = [pl.col(name) / pl.col("subjects") for name in ("sum_y", "sum_y2")]
    one = histogram.with_columns(*share, subjects=pl.lit(1, pl.Int64))
    rest = histogram.filter(pl.col("subjects") > 1).with_columns(
        *[(pl.col(name) * (1 - 1 / pl.col("subjects"))) for name in ("sum_y", "sum_y2")], pl.col("subjects") - 1
    )
    parts = cohortsql.assemble(pl.concat([rest, one]), similarity=similarity)
    np.testing.assert_allclose(parts.shapley, cohortsql.assemble(histogram, similarity=similarity).shapley, atol=1e-12)


def test_the_earlier_name_of_sql_query_still_works_and_says_so(parquet):
    similarity = {"region": "exact", "age": "range:0.1"}
    with pytest.warns(DeprecationWarning, match="histogram_sql is now sql_query"):
        old = cohortsql.histogram_sql(parquet, prediction="score", similarity=similarity, id="loan")
    assert old == cohortsql.sql_query(parquet, prediction="score", similarity=similarity, id="loan")
