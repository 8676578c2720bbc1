"""What the command line writes: never over a file or table the run reads, whatever form the data
take (a path, or a query that reads files or tables), and a run's files as one set (no companion of an
earlier run left beside them)."""

import polars as pl
import pytest
from typer.testing import CliRunner

from cohortsql.cli import app

FRAME = pl.DataFrame(
    {"k": [1, 2, 3, 4, 5, 6], "a": [1.0, 2, 3, 4, 5, 6], "b": [0, 1, 0, 1, 1, 0], "y": [0.1, 0.5, 0.9, 0.3, 0.2, 0.7]}
)


def invoke(*arguments):
    return CliRunner().invoke(app, [str(argument) for argument in arguments])


@pytest.fixture
def folder(tmp_path, monkeypatch):
    FRAME.write_parquet(tmp_path / "in.parquet")
    FRAME.write_csv(tmp_path / "in.csv")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "query, out",
    [
        ("SELECT * FROM read_parquet('in.parquet')", "in.parquet"),
        ("FROM 'in.parquet'", "in.parquet"),
        ("SELECT * FROM 'in.parquet' WHERE a > 0", "in.parquet"),
        ("SELECT * FROM read_parquet(['in.parquet'])", "in.parquet"),
        ("SELECT * FROM read_parquet('i*.parquet')", "in.parquet"),
        ("SELECT * FROM read_csv('in.csv')", "in.csv"),
        ("WITH t AS (SELECT * FROM 'in.parquet') SELECT * FROM t", "in.parquet"),
        ("SELECT * FROM read_parquet('in.parquet')", "in_totals.parquet"),  # beside --out res: a companion
    ],
)
def test_a_query_never_has_its_files_written_over(folder, query, out):
    before = {name: (folder / name).read_bytes() for name in ("in.parquet", "in.csv")}
    target = "in.parquet" if out == "in_totals.parquet" else out
    if out == "in_totals.parquet":
        (folder / "in_totals.parquet").write_bytes(before["in.parquet"])
        query = query.replace("in.parquet", "in_totals.parquet")
    result = invoke("shapley", query, "--prediction", "y", "--features", "a,b", "--out", target)
    assert result.exit_code == 2 and "it is an input of this run" in result.output, result.output
    assert {name: (folder / name).read_bytes() for name in before} == before


def test_spark_never_writes_over_what_its_query_reads(folder, spark_session):
    path = folder / "in.parquet"
    query = f"SELECT * FROM parquet.`{path}`"
    result = invoke("shapley", query, "--prediction", "y", "--features", "a,b", "--out", path, "--engine", "spark")
    assert result.exit_code == 2 and "it is an input of this run" in result.output, result.output
    spark_session.read.parquet(str(path)).write.mode("overwrite").saveAsTable("scores_read_by_a_query")
    result = invoke(
        "shapley",
        "SELECT * FROM scores_read_by_a_query",
        *("--prediction", "y", "--features", "a,b", "--engine", "spark", "--id", "k"),
        *("--into-table", "scores_read_by_a_query", "--replace"),
    )
    assert result.exit_code == 2 and "it is this run's input" in result.output, result.output
    assert spark_session.table("scores_read_by_a_query").count() == FRAME.height


def test_a_run_replaces_the_companions_of_an_earlier_one_as_a_set(folder):
    arguments = ("shapley", "in.parquet", "--prediction", "y", "--features", "a,b", "--out", "res.parquet")
    assert invoke(*arguments, "--interactions", "--group", "g=a,b", "--group-values", "owen").exit_code == 0
    assert (folder / "res_interactions.parquet").exists() and (folder / "res_owen.parquet").exists()
    assert invoke(*arguments).exit_code == 0
    assert sorted(path.name for path in folder.glob("res*")) == [
        "res.parquet",
        "res_paths.parquet",
        "res_totals.parquet",
    ]
    report = invoke("report", "res.parquet", "--out", "report.html")
    assert report.exit_code == 0, report.output
    html = (folder / "report.html").read_text()
    assert "<h2>Interactions</h2>" not in html and "<h2>Groups</h2>" not in html


def test_the_report_reads_only_the_companions_its_run_wrote(folder):
    arguments = ("shapley", "in.parquet", "--prediction", "y", "--features", "a,b")
    assert invoke(*arguments, "--interactions", "--out", "other.parquet").exit_code == 0
    assert invoke(*arguments, "--out", "res.parquet").exit_code == 0
    (folder / "res_interactions.parquet").write_bytes((folder / "other_interactions.parquet").read_bytes())
    assert invoke("report", "res.parquet", "--out", "report.html").exit_code == 0
    assert "<h2>Interactions</h2>" not in (folder / "report.html").read_text()


def test_a_failed_set_brings_back_the_companions_it_would_have_removed(folder, monkeypatch):
    arguments = ("shapley", "in.parquet", "--prediction", "y", "--features", "a,b", "--out", "res.parquet")
    assert invoke(*arguments, "--interactions").exit_code == 0
    before = {path.name: path.read_bytes() for path in folder.glob("res*")}
    original = pl.DataFrame.write_parquet

    def full_disk(self, file, *rest, **options):
        if "res_paths" in str(file):
            raise OSError(28, "No space left on device")
        return original(self, file, *rest, **options)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full_disk)
    result = invoke(*arguments)
    assert result.exit_code == 2 and "No space left" in result.output
    assert {path.name: path.read_bytes() for path in folder.glob("res*")} == before


@pytest.mark.parametrize("name", ['"we""ird; DROP"', '"my schema".scores', "scores"])
def test_the_tables_beside_a_quoted_table_name_are_names_too(folder, name):
    """--into-table's companions (``NAME_totals``, ...) take the label inside the last part's quotes:
    ``"we""ird"`` writes ``"we""ird_totals"``, not the unreadable ``"we""ird"_totals``."""
    import duckdb

    if name.startswith('"my schema"'):
        with duckdb.connect(str(folder / "out.duckdb")) as connection:
            connection.execute('CREATE SCHEMA "my schema"')
    done = invoke("shapley", "in.parquet", "--prediction", "y", "--features", "a,b", "--id", "k")
    assert done.exit_code == 0, done.output
    done = invoke(
        "shapley", "in.parquet", "--prediction", "y", "--features", "a,b", "--id", "k",
        "--into-table", name, "--database", "out.duckdb",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    with duckdb.connect(str(folder / "out.duckdb")) as connection:
        tables = {row[0] for row in connection.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    last = name.rsplit(".", 1)[-1].strip('"').replace('""', '"')
    assert {last, f"{last}_totals", f"{last}_paths"} <= tables
