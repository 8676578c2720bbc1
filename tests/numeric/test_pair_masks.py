"""The mask histogram built outside SQL (`cohortsql.numeric.pair_masks`: Spark's executors build it so)
equals the engine's SQL histogram cell for cell: every kind's numeric test falls as its SQL predicate
does, on real tables with missing values, text, integers, dates and booleans, compiled (numba) and in
plain numpy, whole and in passes of a few targets and batches of subjects."""

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from cohortsql import queries
from cohortsql._typing import ShapleyOptions
from cohortsql.numeric import kernels, pair_masks
from cohortsql.request.options import checked_options
from cohortsql.run.pairwise import _sql_histogram, pair_tests
from cohortsql.run.preparation import weigh_subjects
from cohortsql.run.session import open_session

TITANIC = (
    pl.read_csv("examples/data/titanic.csv", null_values="NA")
    .with_columns(pl.col("age").cast(pl.Float64, strict=False))
    .with_row_index("id")
    .with_columns(
        day=pl.date(1912, 4, 10) + pl.duration(days=pl.col("id").cast(pl.Int64) % 37),
        rescued=pl.col("survived") == "survived",
        score=pl.col("sibsp") * 0.5 + pl.col("parch"),
        fare_proxy=pl.col("age") / (pl.col("parch") + 1),
    )
)
TITANIC_KINDS = {
    "pclass": "exact",
    "sex": "exact",
    "age": "quantile:0.2",
    "sibsp": "abs:1",
    "parch": "bins:3",
    "day": "range:0.2",
    "rescued": "exact",
    "fare_proxy": "relative:0.3",
}
BOSTON = pl.read_csv("examples/data/boston.csv").with_row_index("id")
BOSTON_KINDS = {
    "crim": "relative:0.5",
    "rm": "range:0.1",
    "chas": "exact",
    "lstat": "bins:5",
    "nox": "quantile:0.1",
    "tax": "abs:50",
    "ptratio": "exact",
}


def _histograms(data: pl.DataFrame, kinds: dict[str, str], prediction: str, **options):
    """The SQL histogram of the first 40 distinct targets and the one built from the same subjects in
    numpy, as {(target, mask): sums} each, with the tests used."""
    asked = checked_options({"id": "id", **options}, ShapleyOptions)
    with open_session(data, asked, outcomes=(prediction,), similarity=kinds, max_features=64) as session:
        prepared, engine = session.prepared, session.engine
        tests = pair_tests(prepared)
        assert tests is not None
        weighted = weigh_subjects(engine, prepared)
        batch = session.select().numbered(0, 40)
        expected = _sql_histogram(engine, prepared, weighted, batch, "the test")
        inputs = queries.histogram.pair_inputs(
            weighted.relation, prepared.features, prepared.measures, engine.dialect, collapsed=prepared.compressed
        )
        subjects = engine.fetch_arrow(inputs, context="the test")
        columns = [feature.column for feature in prepared.features]
        sums = [*prepared.measures.weight_names, *prepared.measures.sum_names]
    vocabulary = [pair_masks.vocabulary(batch.column(name), test) for name, test in zip(columns, tests)]
    targets = pair_masks.Columns.of([batch.column(name) for name in columns], tests, vocabulary)

    def built(step: int | None, tasks: int = 1) -> dict:
        """Batches of `step` subjects into one partial histogram; None: all at once, in passes of targets.
        With `tasks`, the subjects shared among them, their partial histograms merged as the driver merges them."""
        if tasks > 1:
            assert step is not None
            return merged(step, tasks)
        if step is None:  # as the Spark engine does: passes of as many targets as fit, each a histogram
            rows = pair_masks.Columns.of([subjects.column(name) for name in columns], tests, vocabulary)
            measures = np.column_stack([subjects.column(name).to_numpy() for name in sums])
            per_pass, found = pair_masks.targets_per_pass(len(tests), len(sums)), {}
            for first in range(0, batch.num_rows, per_pass):
                part = pair_masks.Columns(
                    *(array[:, first : first + per_pass] for array in (targets.floats, targets.ints, targets.missing))
                )
                histogram = pair_masks.PartialHistogram(part, tests, len(sums))
                histogram.add(rows, measures)
                target, mask, totals = histogram.cells()
                found |= _cells(target + first, mask, totals, batch)
            return found
        return _cells(*partial(subjects, step), batch)

    def partial(share: pa.Table, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One task's partial histogram of its `share` of the subjects, received in batches of `step`."""
        histogram = pair_masks.PartialHistogram(targets, tests, len(sums))
        for first in range(0, share.num_rows, step):  # batches of subjects, as an executor receives them
            part = share.slice(first, step)
            rows = pair_masks.Columns.of([part.column(name) for name in columns], tests, vocabulary)
            histogram.add(rows, np.column_stack([part.column(name).to_numpy() for name in sums]))
        return histogram.cells()

    def merged(step: int, tasks: int) -> dict:
        shares = [
            subjects.slice(start, -(-subjects.num_rows // tasks))
            for start in range(0, subjects.num_rows, -(-subjects.num_rows // tasks))
        ]
        cells = [partial(share, step) for share in shares]
        target, mask, totals = pair_masks.merged_cells(
            np.concatenate([cell[0] for cell in cells]),
            np.concatenate([cell[1] for cell in cells]),
            [np.concatenate([cell[2][:, k] for cell in cells]) for k in range(len(sums))],
            len(tests),
        )
        assert len(np.unique(target.astype(np.int64) << len(tests) | mask)) == len(target)  # each cell once
        return _cells(target, mask, np.column_stack(totals), batch)

    found = np.column_stack([expected[name] for name in sums])
    return _cells(expected["target"], expected["mask0"], found, None), built, tests


def _cells(target, mask, sums, batch: pa.Table | None) -> dict:
    numbers = target if batch is None else batch.column("__cohort_batch").to_numpy()[target]
    return {(int(t), int(m)): tuple(row) for t, m, row in zip(numbers, mask, sums)}


def _same(expected: dict, found: dict) -> None:
    assert found.keys() == expected.keys()
    for key, sums in expected.items():
        np.testing.assert_allclose(found[key], sums, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("compiled", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("table", ["titanic", "boston"])
def test_the_numeric_histogram_equals_the_sql_histogram(table, compiled, monkeypatch):
    """Titanic: text, NULL ages (263), a quantile window, an integer window, bins, a date range, a
    boolean and a relative window on a derived number with NULLs; Boston: a relative window, a range, integer
    and float exact comparisons, bins and a quantile window. Subjects in batches of 97 rows."""
    if compiled and not kernels.available():
        pytest.skip("numba is not installed")
    monkeypatch.setattr(kernels, "available", lambda: compiled)
    if table == "titanic":
        expected, built, tests = _histograms(TITANIC.drop("survived"), TITANIC_KINDS, "score")
    else:
        expected, built, tests = _histograms(BOSTON, BOSTON_KINDS, "medv")
    assert {test.code for test in tests} == {0, 1, 2, 3}  # every test: equal, window, relative, bins
    _same(expected, built(97))
    _same(expected, built(100_000))


@pytest.mark.parametrize("tasks", [2, 3, 7])
def test_partial_histograms_of_tasks_merged_on_the_driver_equal_the_sql_histogram(tasks):
    """Each task's partial histogram of its share of the subjects (a cell in as many tasks as reach it),
    merged by `merged_cells` as the Spark engine's driver merges them: each cell once, its sums SQL's."""
    expected, built, _ = _histograms(TITANIC.drop("survived"), TITANIC_KINDS, "score")
    _same(expected, built(64, tasks))


def test_weights_and_several_outcomes_are_summed_as_sql_sums_them():
    """Case weights (sibsp + 1) and two explained columns: the histogram carries w0, s0_0 and s1_0."""
    data = TITANIC.with_columns(w=pl.col("sibsp") + 1, other=pl.col("parch") * 2.0).drop("survived")
    kinds = {"pclass": "exact", "age": "abs:5", "sex": "exact"}
    asked = checked_options({"id": "id", "weight": "w"}, ShapleyOptions)
    with open_session(data, asked, outcomes=("score", "other"), similarity=kinds, max_features=64) as session:
        assert len([*session.prepared.measures.weight_names, *session.prepared.measures.sum_names]) == 3
    expected, built, _ = _histograms(data, kinds, "score", weight="w")
    _same(expected, built(50))


def test_passes_of_few_targets_give_the_same_cells(monkeypatch):
    """With room for three targets' cells at a time, the 40 targets go in 14 passes;
    a partial histogram of more targets than fit is refused."""
    expected, built, tests = _histograms(BOSTON, BOSTON_KINDS, "medv")
    monkeypatch.setattr(pair_masks, "CELL_BYTES", 3 * (1 << len(tests)) * 3 * 8)
    assert pair_masks.targets_per_pass(len(tests), 2) == 3
    _same(expected, built(None))
    with pytest.raises(ValueError, match="pass fewer at once"):
        pair_masks.PartialHistogram(pair_masks.Columns(*(np.zeros((len(tests), 4)) for _ in range(3))), tests, 2)


def test_kinds_without_a_numeric_twin_keep_the_sql_histogram():
    """sql: predicates and decimal columns are SQL's alone: no tests, so the engine's SQL runs."""
    asked = checked_options({"id": "id"}, ShapleyOptions)
    data = BOSTON.with_columns(pl.col("rm").cast(pl.Decimal(10, 3)))
    for kinds in ({"crim": "sql:abs(s.crim - t.crim) < 1", "rm": "abs:1"}, {"rm": "abs:1", "chas": "exact"}):
        with open_session(data, asked, outcomes=("medv",), similarity=kinds, max_features=64) as session:
            assert pair_tests(session.prepared) is None


def test_compact_columns_hold_bytes_where_every_column_fits_one_and_leave_unused_arrays_empty():
    """`Columns.of(..., compact=True)`: integers as bytes when every integer column is int8 or boolean,
    else 64-bit (unsigned bytes, wider types, text codes), values and missing flags unchanged, and (d, 0)
    arrays where no column needs doubles or missing flags."""
    from cohortsql.numeric.pair_masks import Columns, narrow_integers
    from cohortsql.numeric.pair_tests import EQUAL, PairTest

    exact_integer, exact_text = PairTest(code=EQUAL, integer=True), PairTest(code=EQUAL, text=True)
    signed = pa.array([-128, 0, 127], pa.int8())
    unsigned = pa.array([0, 200, 255], pa.uint8())
    flags = pa.array([True, None, False])
    assert narrow_integers([signed, flags], [exact_integer] * 2) == np.int8
    assert narrow_integers([signed, unsigned], [exact_integer] * 2) == np.int64
    assert narrow_integers([signed, pa.array(["a", "b", "c"])], [exact_integer, exact_text]) == np.int64
    assert narrow_integers([signed, pa.array([0.5, 1.0, 2.0])], [exact_integer, PairTest(code=EQUAL)]) == np.int8
    for columns, dtype in (([signed, flags], np.int8), ([signed, unsigned, flags], np.int64)):
        compact = Columns.of(columns, [exact_integer] * len(columns), [None] * len(columns), compact=True)
        full = Columns.of(columns, [exact_integer] * len(columns), [None] * len(columns))
        assert compact.ints.dtype == dtype and compact.floats.shape == (len(columns), 0) and compact.rows == 3
        np.testing.assert_array_equal(compact.ints, full.ints)
        np.testing.assert_array_equal(compact.missing, full.missing)
    without_gaps = Columns.of([signed], [exact_integer], [None], compact=True)
    assert without_gaps.missing.shape == (1, 0) and without_gaps.ints.dtype == np.int8
