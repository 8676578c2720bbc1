"""Result files: a run's set written and replaced as one, the companions it was written with listed in
its main file, and the settings it carries read back."""

import json

import polars as pl
import pytest

from cohortsql.formats import files

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
