"""The DuckDB engine's file reading as pure functions (`cohortsql.engines.duckdb_files`), and the CSV files
it refuses end to end: skipped lines, no header, lines of different lengths."""

import pytest

import cohortsql
from cohortsql.dialects import DUCKDB
from cohortsql.engines.duckdb_files import CSV_BUFFER_BYTES, csv_buffer, csv_problem, parsed_sources, reader_call


@pytest.mark.parametrize(
    ("sniffed", "problem"),
    [
        ({"skip": 0, "header": True, "delimiter": ",", "names": ["a", "b"]}, None),
        ({"skip": 2, "header": True, "delimiter": ",", "names": ["a", "b"]}, "its first 2 lines do not fit the rest"),
        ({"skip": 0, "header": False, "delimiter": ",", "names": ["column0", "column1"]}, "no header row"),
        ({"skip": 0, "header": True, "delimiter": ",", "names": ["a;b;c"]}, "it read one column named 'a;b;c'"),
        ({"skip": 0, "header": True, "delimiter": ";", "names": ["a;b"]}, None),  # its own delimiter is no sign
        ({"skip": 0, "header": True, "delimiter": ",", "names": []}, None),
    ],
)
def test_the_sniffers_verdict_names_the_problem(sniffed, problem):
    found = csv_problem(sniffed)
    assert found == problem if problem is None else problem in str(found)


def test_a_csv_under_a_memory_limit_reads_with_an_eighth_of_it_as_its_buffer():
    assert csv_buffer("csv", None) == "" and csv_buffer("parquet", 2**20) == ""
    assert csv_buffer("csv", 8 * CSV_BUFFER_BYTES) == ""  # DuckDB's own default fits
    assert csv_buffer("csv", 80 * 2**20) == f", buffer_size = {10 * 2**20}"
    assert csv_buffer("csv", 2**20) == f", buffer_size = {4 * 2**20}"  # at least 4 MB
    assert reader_call("it's.csv", "csv", None, DUCKDB) == "read_csv('it''s.csv')"


def test_a_query_that_does_not_parse_reads_no_source():
    assert parsed_sources({"error": True, "error_message": "syntax"}) == ((), ())


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a,b,y\n1,2,0.5\n3,4,0.25\n", None),
        ("1,2,0.5\n3,4,0.25\n5,6,0.75\n", "no header row"),
        ("a,b,y\n1,2\n3,4,0.25,9\n5\n", "lines of different lengths"),
    ],
    ids=["clean", "no header", "ragged"],
)
def test_csv_files_that_are_not_one_table_are_refused(tmp_path, text, problem):
    path = tmp_path / "rows.csv"
    path.write_text(text)
    if problem is None:
        result = cohortsql.cohort_shapley(str(path), prediction="y", similarity={"a": "exact", "b": "exact"})
        assert len(result.ids) == 2
        return
    with pytest.raises(cohortsql.CohortError, match=problem):  # refused as it is read, whatever is asked of it
        cohortsql.cohort_shapley(str(path), prediction="y", similarity="all")
