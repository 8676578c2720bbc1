"""Result files: a run's set written and replaced as one, the companions it was written with listed in
its main file, and the settings it carries read back."""

import json

import numpy as np
import polars as pl
import pytest

import cohortsql
from cohortsql.formats import files
from cohortsql.formats.settings import settings_from_text

FRAME = pl.DataFrame({"id": [1, 2], "value": [0.5, -0.5]})


def test_a_set_replaces_the_companions_of_an_earlier_set(tmp_path):
    out = tmp_path / "res.parquet"
    files.write_set(out, {"": FRAME, "totals": FRAME, "interactions": FRAME}, {"method": "exact"})
    assert files.companions(out) == ["totals", "interactions"]
    written = files.write_set(out, {"": FRAME, "paths": FRAME}, {"method": "exact"})
    assert written == [out, tmp_path / "res_paths.parquet"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["res.parquet", "res_paths.parquet"]
    assert files.companions(out) == ["paths"]
    assert files.parquet_settings(out) == {"method": "exact"}  # the list is not a setting


def test_a_results_settings_are_python_values_and_come_back_from_its_file(tmp_path):
    table = pl.DataFrame(
        {"x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "k": ["a", "b"] * 3, "y": [0.1, 0.4, 0.2, 0.9, 0.5, 0.3]}
    )
    result = cohortsql.cohort_shapley(
        table, prediction="y", similarity={"x": "abs:1.5", "k": "exact"}, bootstrap=np.int64(20), seed=3
    )
    settings = result.settings
    assert settings["similarity"] == {"x": "abs:1.5", "k": "exact"} and settings["windows"] == {"x": 1.5}
    assert settings["seed"] == 3 and settings["bootstrap"] == 20 and type(settings["bootstrap"]) is int
    assert settings["confidence"] == 0.95 and settings["id"] is None and settings["prediction"] == "y"
    out = tmp_path / "res.parquet"
    result.write_parquet(out)
    assert files.parquet_settings(out) == settings
    # in the file, every value is JSON (a column name too, so that a column called 1 or null stays text)
    metadata = pl.read_parquet_metadata(out)
    assert metadata["prediction"] == '"y"' and json.loads(metadata["windows"]) == {"x": 1.5}


def test_settings_written_before_every_value_was_json_read_as_they_can_be():
    old = {"prediction": "score", "seed": "3", "id": "null", "similarity": '{"x": "exact"}', "targets": "every row"}
    assert settings_from_text(old) == {
        "prediction": "score",
        "seed": 3,
        "id": None,
        "similarity": {"x": "exact"},
        "targets": "every row",
    }


def test_a_file_written_before_the_list_existed_has_no_list(tmp_path):
    out = tmp_path / "old.parquet"
    FRAME.write_parquet(out, metadata={"method": "exact"})
    assert files.companions(out) is None
    csv = tmp_path / "res.csv"
    files.write_set(csv, {"": FRAME, "totals": FRAME}, {})
    assert files.companions(csv) is None and (tmp_path / "res_totals.csv").exists()


def test_the_companions_are_the_labels_a_command_writes():
    from cohortsql.cli import compute

    source = open(compute.__file__).read()
    written = {label for label in files.COMPANIONS if f'"{label}"' in source}
    assert written <= set(files.COMPANIONS) and {"totals", "paths"} <= written
    assert json.loads(json.dumps(list(files.COMPANIONS))) == list(files.COMPANIONS)


@pytest.mark.parametrize("name, message", [("x.txt", "reads .parquet or .csv"), ("missing.parquet", "no file")])
def test_reading_what_is_not_a_result_file_is_one_error(tmp_path, name, message):
    with pytest.raises(files.CohortError, match=message):
        files.read_frame(tmp_path / name, "a test")


def test_columns_called_null_or_1_stay_names_in_the_settings_and_the_file(tmp_path):
    """A column called ``null`` was the text ``null`` in the file, which the report's settings table read
    as JSON's null (a dash for the explained column); each value as JSON keeps it a name."""
    rng = np.random.default_rng(1)
    table = pl.DataFrame({"1": rng.integers(0, 3, 30), "null": rng.normal(size=30)})
    result = cohortsql.cohort_shapley(table, prediction="null", similarity={"1": "exact"})
    out = tmp_path / "res.parquet"
    result.write_parquet(out)
    settings = files.parquet_settings(out)
    assert settings["prediction"] == "null" and settings["similarity"] == {"1": "exact"}
    result.report(tmp_path / "report.html")
    assert "<th>prediction</th><td>null</td>" in (tmp_path / "report.html").read_text()
